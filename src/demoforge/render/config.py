"""The render stage's config: the looks (each `--look FILE[:N]` a LookRequest), cameras, image
size, depth and segmentation streams, seed, episodes, encoder settings and the reference video
template, one RenderConfig whose fields are also the options of `demoforge render` and of a run's
`render:` stage (`demoforge.fields`), checked whole (`check_config`)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from demoforge.dataset import VideoSettings
from demoforge.errors import DemoforgeError
from demoforge.fields import MAX_EPISODE_INDEX, option, seed_option, workers_option
from demoforge.render.look import Look, LookError, parse_image_sizes, sized_look
from demoforge.render.look_file import load_look
from demoforge.render.recorder import DEPTH_RANGE_M
from demoforge.tasks.package import task_packages_option

# x264 with its own threads gives different bytes for the same frames when the machine is busy
# (measured here); one thread per stream keeps the output a function of the frames, and the
# streams still encode in parallel, each on its own writer thread. Preset veryfast: at 224x224
# the default preset costs about as much CPU as drawing the frame, which a CPU renderer needs.
DETERMINISTIC_VIDEO = VideoSettings(preset="veryfast", extra_options={"threads": "1"})
REFERENCE_FIELDS = ("episode_index", "source_episode")  # what a --reference-video template may name


@dataclass(frozen=True)
class LookRequest:
    """One `--look FILE[:N]`: a look and how many copies of each episode to render with it."""

    look: Look
    copies: int = 1  # copies per source episode, each with its own draw
    file: str = ""  # where the look came from (recorded in render.json)


def episodes_value(text: str, where: str = "--episodes") -> tuple[int, ...] | None:
    """'0,2,5-7' -> (0, 2, 5, 6, 7); 'all' -> None (every episode)."""
    if text.strip() in ("", "all"):
        return None
    out: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        a, sep, b = part.partition("-")
        try:
            lo, hi = int(a), int(b if sep else a)
        except ValueError:
            raise LookError(f"{text!r}: episodes are indices and ranges, e.g. 0,2,5-7") from None
        if lo > hi:
            raise LookError(f"{text!r}: range {part!r} runs backwards; write it low-high, e.g. {hi}-{lo}")
        if hi > MAX_EPISODE_INDEX:
            raise LookError(f"{text!r}: episode index {hi} is over {MAX_EPISODE_INDEX}")
        out.update(range(lo, hi + 1))
    return tuple(sorted(out))


@dataclass(frozen=True)
class RenderConfig:
    """Everything that decides a render stage's output, and its worker count (which does not)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the scenes rebuilt may be a package's
    # in output order: `--look` texts (plain, randomized:N, a shipped look's name, LOOK.yaml[:N]) or a
    # library caller's LookRequests; `resolve_looks` reads the texts
    looks: tuple[str | LookRequest, ...] = option((), "Look: plain, randomized:N, a shipped look name or "
                                                      "LOOK.yaml[:N] (N copies per episode); repeatable; run: none "
                                                      "given = no render stage output.", flag="--look",
                                                  stage_required=True, metavar="LOOK[:N]")
    cameras: tuple[str, ...] = option(("front", "wrist"), "Cameras rendered (scene camera names; wrist is the robot "
                                                          "card's); repeat or give a comma list (front,wrist).")
    image_size: str | None = option(None, "Image size of every look's cameras, WIDTHxHEIGHT [px] or one number "
                                          "(96); per camera CAMERA=WxH, comma-separated (96,front=224x224) "
                                          "[default: each look's].", kind="str", metavar="WxH")
    depth: bool = option(False, "Also write <camera>_depth videos (metres as 12-bit lossless codes).")
    depth_range_m: tuple[float, float] = DEPTH_RANGE_M  # depth code range [m] (library only)
    segmentation: bool = option(False, "Also write <camera>_segmentation videos (body colours).")
    seed: int = seed_option()  # root of every look draw
    episodes: tuple[int, ...] | None = option(None, "Source episodes to render, in source order, e.g. 0,2,5-7 "
                                                    "[default: all].", kind="str", run=False,
                                              normalize=episodes_value)
    video: VideoSettings = field(default_factory=lambda: DETERMINISTIC_VIDEO)  # encoder of every stream (library only)
    # path of each episode's reference video (e.g. a real or egocentric recording of the same demo),
    # recorded as given, never opened: a str.format template over REFERENCE_FIELDS
    reference_video: str | None = option(None, "Record each episode's reference video path (recorded, not opened) in "
                                               "demoforge/reference_video: a path or a template naming "
                                               "{episode_index} or {source_episode}, e.g. "
                                               "refs/episode_{source_episode:06d}.mp4.", kind="str", run=False,
                                         metavar="PATH")
    workers: int | str = workers_option()  # local processes of `render_dataset`; the output does not depend on it

    def refusals(self) -> list[str]:
        """What the render would refuse that no one field shows: cameras the scene lacks, a look
        that does not load, an image size for a camera not rendered."""
        from demoforge.sim.scene import SceneSpec  # lazy: the scene (mujoco) only when a config is checked

        problems = []
        known = sorted({c.name for c in SceneSpec().cameras} | {"wrist"})
        bad = [c for c in self.cameras if c not in known]
        if bad:
            problems.append(f"cameras (--cameras): {bad} are not cameras of the scene; cameras: {', '.join(known)}")
        if len(set(self.cameras)) != len(self.cameras):
            problems.append(f"cameras (--cameras): {list(self.cameras)} must be distinct")
        for text in self.looks:
            try:
                parse_look_arg(text) if isinstance(text, str) else None
            except DemoforgeError as exc:
                problems.append(f"looks (--look): {text!r}: {exc}")
        if self.image_size:
            try:
                _, own = parse_image_sizes(self.image_size)
            except DemoforgeError as exc:
                problems.append(f"image_size (--image-size): {exc}")
            else:
                if set(own) - set(self.cameras):
                    problems.append(f"image_size (--image-size): {sorted(set(own) - set(self.cameras))} are not "
                                    f"among the rendered cameras {list(self.cameras)}")
        return problems


# What `render_dataset`'s fingerprint and render.json are made of: the fields that decide the output.
OUTPUT_FIELDS = ("looks", "cameras", "depth", "depth_range_m", "segmentation", "seed", "episodes", "video",
                 "reference_video")


def resolve_looks(config: RenderConfig) -> RenderConfig:
    """`config` with every look a LookRequest (texts read, `image_size` applied, then None), so
    a worker never reads a look file; a config resolved already comes back as it is."""
    if config.image_size is None and all(isinstance(r, LookRequest) for r in config.looks):
        return config
    every, own = parse_image_sizes(config.image_size) if config.image_size else (None, {})
    requests = (parse_look_arg(r) if isinstance(r, str) else r for r in config.looks)
    return dataclasses.replace(config, image_size=None, looks=tuple(
        dataclasses.replace(r, look=sized_look(r.look, every, own)) for r in requests))


def local_workers(config: RenderConfig, items: int) -> int:
    """`config.workers` as a count: 'auto' is one per available core, at most one per work item."""
    if config.workers != "auto":
        return config.workers
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, items))


def reference_video_path(template: str, episode_index: int, source_episode: int) -> str:
    """The reference video path of output episode `episode_index` (rendered from source episode
    `source_episode`) under `template`; LookError naming the template and the fields when it has others."""
    try:
        return template.format(episode_index=int(episode_index), source_episode=int(source_episode))
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        fields = ", ".join("{" + f + "}" for f in REFERENCE_FIELDS)
        raise LookError(f"--reference-video {template!r}: {type(exc).__name__} {exc}; a template may name only "
                        f"{fields} (format specs allowed), e.g. refs/episode_{{source_episode:06d}}.mp4; "
                        "write a literal brace as {{ or }}") from None


MAX_COPIES = 1000  # copies of each episode under one look (each is a full render of it)


def parse_look_arg(text: str) -> LookRequest:
    """`FILE.yaml`, `FILE.yaml:N`, `plain` or `randomized:N` as a LookRequest."""
    path, copies = text, 1
    head, sep, tail = text.rpartition(":")
    if sep and tail.isdigit():
        path, copies = head, int(tail)
    if copies < 1:
        raise LookError(f"--look {text!r}: the number of copies must be >= 1")
    if copies > MAX_COPIES:
        raise LookError(f"--look {text!r}: the number of copies must be in [1, {MAX_COPIES}]")
    return LookRequest(load_look(path), copies, path)


def check_config(config: RenderConfig) -> None:
    """Every problem of `config` (its looks resolved, `resolve_looks`) at once, as one LookError."""
    problems = []
    if not config.looks:
        problems.append("no looks given; pass --look plain (or a look file)")
    names = [r.look.name for r in config.looks]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"look {dup!r} is given twice; give it once with :N copies")
    for camera in config.cameras:
        sizes = sorted({r.look.image_size(camera) for r in config.looks})
        if len(sizes) > 1:
            problems.append(f"looks give camera {camera!r} different image sizes {sizes}; one dataset has one "
                            "size per camera")
    if not config.cameras or len(set(config.cameras)) != len(config.cameras):
        problems.append(f"cameras {list(config.cameras)} must be distinct names, at least one")
    if not (isinstance(config.seed, int) and config.seed >= 0):
        problems.append(f"seed {config.seed!r} must be a non-negative integer")
    if not (config.workers == "auto" or (isinstance(config.workers, int) and config.workers >= 1)):
        problems.append(f"workers {config.workers!r} must be an integer >= 1 or 'auto'")
    if config.reference_video is not None:
        if not config.reference_video.strip():
            problems.append("--reference-video is empty; give a path or a template such as "
                            "refs/episode_{source_episode:06d}.mp4")
        else:
            try:
                reference_video_path(config.reference_video, 0, 0)
            except LookError as exc:
                problems.append(str(exc))
    if problems:
        raise LookError("render: " + "; ".join(problems))
