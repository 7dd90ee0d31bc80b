"""x265's bytes must not follow what the heap held before it.

libx265 reads memory it never wrote when it predicts from earlier frames in pictures with a side
of 16, 32 or 64 px (`segmentation.X265_INTRA_ONLY_SIDE`), so the same frames came out as other
bytes from run to run. glibc's `MALLOC_PERTURB_` fills every allocation with a chosen byte: a
child process per byte encodes the same frames, and every child must write the same bytes.
"""

import os
import subprocess
import sys

import pytest

SIZES = [(16, 16), (24, 16), (32, 32), (64, 64), (96, 96)]  # (height, width): the first four read unwritten memory

CHILD = r"""
import hashlib, sys, tempfile
from pathlib import Path
import numpy as np
from demoforge.dataset import VideoSettings
from demoforge.dataset.video import SegmentEncoder

h, w = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
rgb = rng.integers(0, 256, (24, h, w, 3), dtype=np.uint8)
rgb[:, :, : w // 2] = 60  # a flat half beside noise: the content that showed it
codes = (rgb[..., 0].astype(np.uint16) * 16)
kinds = {"segmentation": dict(segmentation=True), "depth": dict(depth=True), "hevc": {}}
with tempfile.TemporaryDirectory() as d:
    for name, kind in kinds.items():
        path = Path(d) / f"{name}.mp4"
        enc = SegmentEncoder(path, settings=VideoSettings(codec="hevc", g=8), fps=30, height=h, width=w, **kind)
        enc.add_frames(codes if name == "depth" else rgb)
        enc.close()
        print(name, hashlib.sha256(path.read_bytes()).hexdigest())
"""


def _encode(h: int, w: int, perturb: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_PERTURB_"}
    if perturb is not None:
        env["MALLOC_PERTURB_"] = perturb
    done = subprocess.run([sys.executable, "-c", CHILD, str(h), str(w)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("h,w", SIZES, ids=[f"{h}x{w}" for h, w in SIZES])
def test_x265_bytes_do_not_depend_on_what_the_heap_held(h, w):
    outs = {p: _encode(h, w, p) for p in (None, "85", "170")}
    assert len(set(outs.values())) == 1, outs
    assert len(outs[None].splitlines()) == 3  # segmentation, depth and an hevc camera
