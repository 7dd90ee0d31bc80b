"""Properties of the bake's tick selection (`convert.conventions.output_ticks`, `stride_for`) and
of the render-the-baked-ticks path (`pipeline.baked_render`): the ticks are evenly spaced from 0,
ceil(n / stride) of them, and `bake_ticks` keeps the ticks a full bake keeps."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from demoforge.convert import BakeConfig, bake, output_ticks, valid_rates
from demoforge.dataset import open_dataset
from demoforge.pipeline.baked_render import baked_stride, bake_ticks
from demoforge.raw.schema import SCENES_DIR, SIM_STATE
from tests.convert._sources import FPS, write_raw


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2000), st.integers(1, 60))
def test_kept_ticks_are_evenly_spaced_from_zero_and_ceil_n_over_stride_many(length, stride):
    ticks = output_ticks(length, stride)
    assert len(ticks) == -(-length // stride)
    if length:
        assert ticks[0] == 0 and ticks[-1] < length <= ticks[-1] + stride  # none missing at the end
        assert np.all(np.diff(ticks) == stride)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.integers(1, 25), min_size=1, max_size=3), st.sampled_from(valid_rates(FPS)[1:]),
       st.sampled_from(["joint_pos", "joint_vel", "joint_target", "raw_cmd"]))
def test_bake_ticks_keeps_the_ticks_and_columns_of_a_full_bake(lengths, rate, convention):
    config = BakeConfig(control_space=convention, control_freq=rate)
    with tempfile.TemporaryDirectory() as tmp:
        src = write_raw(Path(tmp) / "raw", lengths=tuple(lengths), cams=())
        (src / SCENES_DIR).mkdir(parents=True)  # bake_ticks carries the scene inputs the render reads
        assert baked_stride(src, config) == FPS // rate
        full = open_dataset(bake([src], Path(tmp) / "full", config))
        ticks = open_dataset(bake_ticks(src, Path(tmp) / "ticks", config))
        assert ticks.episode_indices == full.episode_indices
        keys = sorted(k for k, f in full.info.features.items() if f.dtype != "video")
        for i, n in zip(full.episode_indices, lengths, strict=True):
            a, b = full.read_episode(i), ticks.read_episode(i)
            for k in keys:
                assert a[k].tobytes() == b[k].tobytes(), (i, k)
            # the synthetic sim.state starts with the tick's time: the rows are the kept native ticks
            kept = np.rint(b[SIM_STATE][:, 0] * FPS).astype(int)
            np.testing.assert_array_equal(kept, output_ticks(n, FPS // rate))
