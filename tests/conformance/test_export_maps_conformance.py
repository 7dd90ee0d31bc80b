"""Segmentation and depth maps in the openpi export, loaded by the REAL LeRobot v2.1 reader openpi
trains with (lerobot 0.3.3, datasets 3.6.0): every segmentation frame's colours are the baked ones
exactly, so the instance ids survive the export, and every depth frame, packed into RGB (rgb12),
unpacks to the baked 12-bit codes exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.dataset import open_dataset
from demoforge.dataset.decode import decode_at
from demoforge.dataset.depth import unpack_rgb12_codes
from demoforge.export import ExportConfig, export

from test_export_conformance import v21_python  # noqa: F401  (the fixture: the reader's python, or skip)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.convert._rendered import render_tiny  # noqa: E402
from tests.timeouts import SUBPROCESS_S  # noqa: E402

pytestmark = pytest.mark.conformance
PROBE = Path(__file__).with_name("lerobot_v21_frames_probe.py")
SEG = ("observation.images.front_segmentation", "observation.images.wrist_segmentation")
DEPTH = ("observation.images.front_depth", "observation.images.wrist_depth")


def test_openpi_export_segmentation_loads_exactly_in_lerobot_v21(v21_python, tmp_path):  # noqa: F811
    _, rendered = render_tiny(tmp_path / "src")
    cams = ("front", "wrist", "front_segmentation", "wrist_segmentation")
    baked = bake([rendered], tmp_path / "baked", BakeConfig(control_space="joint_pos", control_freq=15, cams=cams))
    root = export(baked, tmp_path / "home" / "maps-openpi", ExportConfig(trainer="openpi", action_horizon=2))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    proc = subprocess.run([v21_python, str(PROBE), str(root), str(tmp_path / "frames.npz")], capture_output=True,
                          text=True, timeout=SUBPROCESS_S, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = dict(np.load(tmp_path / "frames.npz", allow_pickle=False))
    meta = json.loads(str(got["__meta__"]))
    ds = open_dataset(baked)
    assert meta["len"] == ds.num_frames == 12 and set(SEG) <= set(meta["video_keys"])
    for key in SEG:
        np.testing.assert_array_equal(got[key], np.concatenate([ds.read_video(e, key) for e in ds.episode_indices]))


def test_openpi_export_depth_unpacks_to_the_baked_codes_in_lerobot_v21(v21_python, tmp_path):  # noqa: F811
    _, rendered = render_tiny(tmp_path / "src")
    cams = ("front", "wrist", "front_depth", "wrist_depth")
    baked = bake([rendered], tmp_path / "baked", BakeConfig(control_space="joint_pos", control_freq=15, cams=cams))
    root = export(baked, tmp_path / "home" / "depth-openpi", ExportConfig(trainer="openpi", action_horizon=2))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    proc = subprocess.run([v21_python, str(PROBE), str(root), str(tmp_path / "frames.npz")], capture_output=True,
                          text=True, timeout=SUBPROCESS_S, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = dict(np.load(tmp_path / "frames.npz", allow_pickle=False))
    meta = json.loads(str(got["__meta__"]))
    ds = open_dataset(baked)
    assert meta["len"] == ds.num_frames == 12 and set(DEPTH) <= set(meta["video_keys"])
    for key in DEPTH:
        codes = np.concatenate([decode_at(ds.video_path(e, key), ds.episode(e)[f"videos/{key}/from_timestamp"]
                                          + np.arange(ds.episode(e)["length"]) / 15, raw=True)
                                for e in ds.episode_indices])
        assert len(np.unique(codes)) > 50, key  # a depth image (86 codes at the wrist), not a constant
        np.testing.assert_array_equal(unpack_rgb12_codes(got[key], where=key), codes)
