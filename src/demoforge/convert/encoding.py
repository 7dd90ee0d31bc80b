"""How a bake encodes each camera: the encoding the sources already share, whose packets it can
copy (`--vcodec auto`), else the settings asked for; and a note per camera it re-encodes, saying
why and, where only the settings stand in the way, how to copy instead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from demoforge.convert.frames import DEPTH_CODING_KEYS, STREAM_KEYS, is_exact
from demoforge.dataset import segmentation
from demoforge.dataset.depth import is_depth
from demoforge.dataset.layout import Feature
from demoforge.dataset.reader import DatasetReader
from demoforge.dataset.video import VideoSettings
from demoforge.dataset.writer_config import video_info
from demoforge.errors import DemoforgeError

if TYPE_CHECKING:
    from demoforge.convert.config import BakeConfig


def auto_video(readers: list[DatasetReader], cams: tuple[str, ...], config: BakeConfig, stride: int) -> VideoSettings:
    """`--vcodec auto`: the encoding every source's RGB cameras already share (codec, crf, keyframe
    interval, pixel format), so their packets are copied, when the bake keeps every frame at the
    native rate; otherwise `config.video` (h264 unless told), and the notes say why each camera is
    re-encoded. Lossless maps (depth, segmentation) keep their own coding either way."""
    if stride != 1 or config.filter_idle:
        return config.video
    infos = [r.info.features[key].info or {} for r in readers for key in cams
             if key in r.info.features and not is_exact(r.info.features[key])]
    if not infos or any(i.get(k) is None for i in infos for k in STREAM_KEYS):
        return config.video
    if len({tuple(i[k] for k in STREAM_KEYS) for i in infos}) != 1:
        return config.video
    i = infos[0]
    try:
        return VideoSettings(codec=i["video.codec"], crf=int(i["video.crf"]), g=int(i["video.g"]),
                             pix_fmt=i["video.pix_fmt"])
    except DemoforgeError:  # a codec or format this build cannot encode: re-encode as told
        return config.video


def _stream(info: dict, fps: int) -> str:
    """A source video stream's encoder settings as a reader would name them."""
    g = info.get("video.g")
    gop = f", keyframe every {g} frames ({g / fps:.3g} s)" if isinstance(g, int) and fps else ""
    crf = f" crf {info['video.crf']}" if info.get("video.crf") is not None else ""
    return f"{info.get('video.codec', '?')}{crf}, {info.get('video.pix_fmt', '?')}{gop}"


def video_notes(readers: list[DatasetReader], config: BakeConfig, video: VideoSettings, features: dict[str, Feature],
                stride: int, *, auto: bool = False) -> list[str]:
    """A note per camera whose packets the bake cannot copy as they are: the source's encoder
    settings, the bake's (`video`), and how to copy instead when only the settings stand in the way. Depth
    and segmentation maps are re-encoded losslessly (said so); a segmentation map the source
    stored lossy is named, since its edge colours name no instance."""
    out_fps = readers[0].info.fps // stride
    notes = []
    for key, feature in features.items():
        if feature.dtype != "video":
            continue
        infos = [r.info.features[key].info or {} for r in readers if key in r.info.features]
        if feature.info and feature.info.get(segmentation.FLAG):
            lossy = [str(r.root) for r, i in zip(readers, infos) if not segmentation.is_lossless(i)]
            if lossy:
                how = _stream(infos[0], readers[0].info.fps)
                notes.append(f"{key}: {', '.join(lossy)} stored this segmentation map lossy ({how}), so colours at "
                             "object edges name no instance; bake carries the decoded colours unchanged (losslessly); "
                             "render the raw dataset again for exact ids")
        want = video_info(key, feature, fps=out_fps, video=video)
        keys = STREAM_KEYS + (tuple(f"video.{k}" for k in DEPTH_CODING_KEYS) if is_depth(feature.info) else ())
        same = all(int(i.get("video.fps", out_fps)) == out_fps and all(i.get(k) == want[k] for k in keys)
                   for i in infos)
        if same and stride == 1 and not config.filter_idle:
            if auto and not is_exact(feature):
                notes.append(f"{key}: copied packet for packet as the sources hold it ({_stream(infos[0], out_fps)}; "
                             "--vcodec auto)")
            continue
        fps = readers[0].info.fps
        why = (f"one frame in {stride} is kept ({fps} -> {out_fps} Hz)" if stride > 1 else
               "idle frames are filtered out" if config.filter_idle else "the encoder settings differ")
        if is_exact(feature):
            notes.append(f"{key}: re-encoded losslessly (every value kept), since {why}: from {_stream(infos[0], fps)} "
                         f"to {_stream(want, out_fps)}")
            continue
        note = (f"{key}: re-encoded, since {why}: from {_stream(infos[0], fps)} to {_stream(want, out_fps)} "
                f"(--vcodec, --crf, --gop-seconds)")
        if stride > 1 or config.filter_idle:
            pass
        elif any(i.get(k) is None for i in infos for k in STREAM_KEYS):
            note += "; the source's info.json does not record all its encoder settings (crf, keyframe interval), " \
                    "so they cannot be matched to copy its packets"
        elif len({str(sorted(i.items())) for i in infos}) == 1:
            i = infos[0]
            note += (f"; `--vcodec {i['video.codec']} --crf {i['video.crf']} --gop-seconds {i['video.g'] / fps:.6g}` "
                     "copies the source's packets instead")
        notes.append(note)
    return notes
