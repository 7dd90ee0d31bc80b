"""Segmentation maps as video: colours that stand for instance ids, stored losslessly.

A segmentation feature is a video feature (H, W, 3) whose frames paint each pixel with the
colour of the instance under it (the render stage's `segmentation_colour(body id)`, black
where no geom is). It is given to the writer as uint8 RGB like any camera, and read back,
by demoforge and by lerobot, as the same RGB; the colours are the ids.

A lossy codec would blend the colours at every object edge (4:2:0 chroma alone mixes 2x2
blocks) into colours that name no instance, so a segmentation map is stored as lossless
HEVC in planar RGB (gbrp): every FFmpeg decodes it back to the same bytes, lerobot 0.6.1's
pyav and torchcodec backends included. A video feature is a segmentation map when its info
says `is_segmentation_map`, or when it is named `<camera>_segmentation` (the render stage's
name) and its info is not already a complete block written with other settings.
"""

from __future__ import annotations

from typing import Any

SUFFIX = "_segmentation"  # the feature-name suffix of a segmentation map
FLAG = "is_segmentation_map"  # the info key that marks one
PIX_FMT = "gbrp"  # planar RGB: no colour conversion between the frames and the stream
ENCODER = "libx265"
# The same bytes every run, beside busy cores. frame-threads=1 and pools=none: one frame encoder
# thread beside the calling thread (which runs the lookahead) and no pool; with a pool, one run in
# about sixty under load wrote other bytes. weightp=0: with x265's weighted-prediction analysis of
# P frames on (it runs on the frame encoder's thread, over lookahead data), P frames' bytes, never
# their decoded values, still changed: 2 to 4 variants in each of 4 processes of 300 runs beside
# busy cores, each encoding a 12-bit depth map first as a writer does; with weightp=0, one in all
# 1,200. Maps never fade, which is all weighted prediction is for. No B-frames and closed
# GOPs: with x265's defaults a keyframe inside an episode is an open-GOP CRA whose leading frames
# are shown before it but decoded after it, and a decoder that seeks to it (lerobot's pyav path,
# which every depth map takes) drops them, so frames just before a keyframe could not be loaded
# (found by the conformance test). Shared by depth maps (dataset.video).
X265_DETERMINISTIC = "weightp=0:log-level=error:frame-threads=1:pools=none"  # also any HEVC camera's
X265_PARAMS = "lossless=1:bframes=0:open-gop=0:" + X265_DETERMINISTIC


def is_segmentation(key: str, info: dict[str, Any] | None) -> bool:
    """Whether video feature `key` with `info` is (or is to be written as) a segmentation map."""
    info = info or {}
    if "video.codec" in info:  # a complete block: what it says it is
        return bool(info.get(FLAG, False))
    return bool(info.get(FLAG, False)) or key.endswith(SUFFIX)


def is_lossless(info: dict[str, Any] | None) -> bool:
    """Whether a segmentation stream's info block says its colours are stored exactly."""
    info = info or {}
    return info.get("video.codec") == "hevc" and info.get("video.pix_fmt") == PIX_FMT and bool(info.get(FLAG))


def info_block(*, fps: int, height: int, width: int, g: int) -> dict[str, Any]:
    """The `info` block of a segmentation feature (lerobot's video keys, and the flag)."""
    return {
        "video.height": height, "video.width": width, "video.codec": "hevc", "video.pix_fmt": PIX_FMT,
        "video.fps": fps, "video.channels": 3, "has_audio": False, "video.g": g, "video.crf": None,
        "video.preset": None, "video.fast_decode": 0, "video.video_backend": "pyav",
        "video.extra_options": {"x265-params": "lossless=1"}, "is_depth_map": False, FLAG: True,
        "segmentation_ids": "instance (MuJoCo body) id per pixel as the colour demoforge.render.segmentation_colour "
                            "gives it; black (0, 0, 0) where no geom is",
    }


# libx265 (4.1 and 4.3, as PyAV's wheels bundle them) reads memory it never wrote when it predicts
# from earlier frames in some pictures with a side of 16, 32 or 64 px (seen at 16x16, 24x16 (height
# x width), 32x32 and 64x64; never at over twenty other sizes with sides of 24 to 320 px, 96x32 and 128x64
# among them): its bytes then follow whatever the heap held, and
# change from run to run (`MALLOC_PERTURB_` shows it; tests/dataset/test_x265_heap.py). Intra-only
# coding never does, so a picture with a side up to this many pixels is coded with every frame a
# keyframe (16-20x the bytes of P frames on map-like content, on pictures this small).
X265_INTRA_ONLY_SIDE = 64


def x265_gop(g: int, height: int, width: int) -> int:
    """The keyframe interval x265 is given for `height` x `width` pictures (`X265_INTRA_ONLY_SIDE`)."""
    return 1 if min(height, width) <= X265_INTRA_ONLY_SIDE else g


def encoder_options(g: int, height: int, width: int) -> dict[str, str]:
    """libx265's options for a lossless map (segmentation, and depth codes) of `height` x `width`
    with keyframes every `g` frames (every frame for a small one: `x265_gop`)."""
    return {"g": str(x265_gop(g, height, width)), "x265-params": X265_PARAMS}
