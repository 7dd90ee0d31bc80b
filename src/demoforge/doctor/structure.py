"""Checks of layout, time and video: D001 layout/schema, D002 timestamps, D006 video coverage, D013 rates."""

from __future__ import annotations

from collections import defaultdict

from demoforge.dataset.reader import open_dataset
from demoforge.doctor.context import Context, capped
from demoforge.doctor.findings import Evidence, Finding
from demoforge.errors import DemoforgeError

# check_dataset's problem codes that belong to a more specific check than D001
_TIME_CODES = ("data.timestamp",)
_VIDEO_CODES = ("video", "video.size", "video.settings", "video.span", "video.frames", "video.timestamps")


def _is_video_problem(p) -> bool:
    return p.code in _VIDEO_CODES or (p.code == "file.missing" and p.file.endswith(".mp4"))


def check_layout(ctx: Context) -> list[Finding]:
    """D001: files, counts, indices and info.json against the data (demoforge.dataset.check_dataset)."""
    out = [Finding("D001", "error", f"{p.file}: {p.message}", Evidence(values={"problem": p.code}),
                   "rewrite the dataset with a v3 writer (e.g. `demoforge dataset merge ROOT OUT` rebuilds the "
                   f"metadata), or restore {p.file} from the dataset's source")
           for p in ctx.problems if p.code not in _TIME_CODES and not _is_video_problem(p)]
    if ctx.scan is not None:
        for e, why in sorted(ctx.scan.unreadable.items()):
            out.append(Finding("D001", "error", f"episode {e}: data rows unreadable ({why})", Evidence(episode=e),
                               "rewrite the episode's data file; run `demoforge dataset check` for details"))
    return capped(out, ctx.config, "D001", "layout problems")


def check_timestamps(ctx: Context) -> list[Finding]:
    """D002: timestamp = frame_index / fps and increasing; float32 hazard past ~1000 s per episode or video file."""
    if ctx.scan is None:
        return []
    cfg, fps, out = ctx.config, ctx.info.fps, []
    fix_ts = "rewrite timestamps as frame_index / fps (float32), restarting at 0 in each episode"
    for s in ctx.scan.episodes:
        if s.timestamp_error is not None:
            k, got, want = s.timestamp_error
            out.append(Finding("D002", "error", f"episode {s.episode}: timestamp {got:.6f} s at frame {k}, expected "
                               f"frame_index / fps = {want:.6f} s",
                               Evidence(s.episode, k, "timestamp", {"timestamp": got, "expected": want}), fix_ts))
        if s.timestamp_backwards is not None:
            k = s.timestamp_backwards
            out.append(Finding("D002", "error", f"episode {s.episode}: timestamps stop increasing at frame {k}",
                               Evidence(s.episode, k, "timestamp"), fix_ts))
        duration = (s.length - 1) / fps
        if duration > cfg.float32_hazard_s:
            out.append(Finding("D002", "warning", f"episode {s.episode} lasts {duration:.1f} s: float32 timestamps "
                               f"past ~{cfg.float32_hazard_s:.0f} s lose the 1e-4 s precision lerobot matches "
                               "frames with",
                               Evidence(s.episode, None, "timestamp", {"duration_s": duration}),
                               "split the episode, or bake at a lower rate so each episode stays under 1000 s"))
    out += _video_file_hazard(ctx)
    out += [Finding("D002", "error", f"{p.file}: {p.message}", Evidence(feature="timestamp"), fix_ts)
            for p in ctx.problems if p.code in _TIME_CODES and ctx.scan is None]
    return capped(out, cfg, "D002", "timestamp problems")


def _video_file_hazard(ctx: Context) -> list[Finding]:
    ep, info, out = ctx.episodes, ctx.info, []
    for key in info.video_keys:
        cols = [f"videos/{key}/{c}" for c in ("chunk_index", "file_index", "to_timestamp")]
        if not all(c in ep.column_names for c in cols):
            continue
        longest: dict[tuple[int, int], float] = defaultdict(float)
        for c, f, stop in zip(*(ep.column(c).to_pylist() for c in cols)):
            longest[(c, f)] = max(longest[(c, f)], float(stop))
        for (c, f), stop in sorted(longest.items()):
            if stop > ctx.config.float32_hazard_s:
                rel = info.video_path.format(video_key=key, chunk_index=c, file_index=f)
                out.append(Finding("D002", "warning", f"{rel} runs to {stop:.1f} s: lerobot matches frames against "
                                   "float32 timestamps whose precision past ~1024 s is worse than its 1e-4 s "
                                   "tolerance",
                                   Evidence(feature=key, values={"file": rel, "end_s": stop}),
                                   "rewrite with a cap on video file length (`demoforge bake --max-video-file-seconds "
                                   "800`, or DatasetWriter(video_file_duration_s=800))"))
    return out


_VIDEO_FIX = "re-render or re-encode the video of these episodes (`demoforge render`), or drop them from the dataset"


def check_video(ctx: Context) -> list[Finding]:
    """D006: every video file present, each episode's span holding exactly its frames (packets demuxed);
    with config.decode_video, every episode's frames also decoded (one episode at a time)."""
    out = [Finding("D006", "error", f"{p.file}: {p.message}", Evidence(values={"problem": p.code}), _VIDEO_FIX)
           for p in ctx.problems if _is_video_problem(p)]
    if ctx.config.decode_video and ctx.info is not None and ctx.info.video_keys and not out:
        out += _decode_all(ctx)
    return capped(out, ctx.config, "D006", "video problems")


def _decode_all(ctx: Context) -> list[Finding]:
    out = []
    try:
        ds = open_dataset(ctx.root)
    except DemoforgeError:
        return out  # D001 says why
    for e in ds.episode_indices:
        length = int(ds.episode(e)["length"])
        for key in ctx.info.video_keys:
            try:
                n = len(ds.read_video(e, key))
            except DemoforgeError as exc:
                out.append(Finding("D006", "error", f"episode {e}: video {key!r} does not decode: {exc}",
                                   Evidence(e, None, key), _VIDEO_FIX))
                continue
            if n != length:
                out.append(Finding("D006", "error", f"episode {e}: {n} decoded frames of {key!r} for {length} "
                                   "data frames", Evidence(e, None, key, {"decoded": n, "length": length}), _VIDEO_FIX))
    return out


def check_rates(ctx: Context) -> list[Finding]:
    """D013: fps against meta/bake.json (control_freq, native_freq / stride) and each video's video.fps."""
    if ctx.info is None:
        return []
    fps, out = ctx.info.fps, []
    fix = "re-bake at the rate the dataset says (`demoforge bake --rate FPS`), or correct info.json's fps"
    for key in ctx.info.video_keys:
        vfps = (ctx.info.features[key].info or {}).get("video.fps")
        if vfps is not None and abs(float(vfps) - fps) > 1e-9:
            out.append(Finding("D013", "error", f"video {key!r} says video.fps {vfps} but the dataset fps is {fps}",
                               Evidence(feature=key, values={"video.fps": vfps, "fps": fps}),
                               "re-encode the video at the dataset fps, or correct info.json"))
    prov = ctx.provenance or {}
    if prov.get("stage") == "execute" and prov.get("fps") is not None and int(prov["fps"]) != fps:
        out.append(Finding("D013", "error", f"meta/demoforge/provenance.json says execute recorded at {prov['fps']} "
                           f"Hz but info.json fps is {fps}", Evidence(values={"recorded_fps": prov["fps"], "fps": fps}),
                           "correct info.json's fps to the recording rate, or bake to the rate you want "
                           "(`demoforge bake --rate`)"))
    bake = ctx.bake
    if bake is None:
        return out
    control, native, stride = bake.control_freq, bake.native_freq, bake.raw.get("stride")
    if control is not None and abs(float(control) - fps) > 1e-9:
        out.append(Finding("D013", "error", f"meta/bake.json control_freq {control} Hz but info.json fps {fps}",
                           Evidence(values={"control_freq": control, "fps": fps}), fix))
    if None not in (control, native, stride) and stride and abs(float(native) / float(stride) - float(control)) > 1e-6:
        out.append(Finding("D013", "error", f"meta/bake.json native_freq {native} Hz / stride {stride} = "
                           f"{float(native) / float(stride):g} Hz, not control_freq {control} Hz",
                           Evidence(values={"native_freq": native, "stride": stride, "control_freq": control}),
                           "re-bake: native_freq must be a multiple of the baked rate"))
    return out
