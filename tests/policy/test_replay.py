"""Replay of recorded data: demoforge's own data replays exactly; a perturbed copy diverges."""

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from demoforge.dataset import open_dataset
from demoforge.policy import PolicyError, RolloutSettings, load_policy, rollout
from demoforge.policy.replay import replay_dataset


def test_roll_outs_replay_bit_for_bit(pnp, expert_data, tmp_path):
    summary = rollout(load_policy("expert"), [pnp], tmp_path / "r", episodes=1, spec="expert",
                      settings=RolloutSettings(max_ticks=900))
    assert summary["overall"]["success_rate"] == 1.0  # the expert as a policy, acting only through actions
    report = replay_dataset(tmp_path / "r" / "dataset")
    assert report.exact and report.diverging() == []
    assert report.episodes[0].max_robot == 0.0 and report.episodes[0].max_object == 0.0


def test_generated_data_replays_exactly(expert_data):
    # The expert steps exactly the float32 commands it records.
    report = replay_dataset(expert_data)
    assert report.exact and report.diverging() == []
    assert replay_dataset(expert_data, kinematic=True).exact


def perturb(src, dst, episode, tick, delta):
    shutil.copytree(src, dst)
    reader = open_dataset(dst)
    path = reader.data_path(episode)
    table = pq.read_table(path)
    ep = table.column("episode_index").to_numpy()
    fi = table.column("frame_index").to_numpy()
    col = table.column("raw_command").combine_chunks()
    values = np.stack(col.to_numpy(zero_copy_only=False)).astype(np.float32)
    values[(ep == episode) & (fi == tick), 0] += delta
    arr = pa.FixedSizeListArray.from_arrays(pa.array(values.ravel(), pa.float32()), values.shape[1]) \
        if pa.types.is_fixed_size_list(col.type) else pa.array(list(values), col.type)
    table = table.set_column(table.schema.get_field_index("raw_command"), table.schema.field("raw_command"), arr)
    pq.write_table(table, path)


def test_a_perturbed_dataset_is_reported_as_diverging(pnp, expert_data, tmp_path):
    rollout(load_policy(f"replay:{expert_data}"), [pnp], tmp_path / "r", episodes=2, spec="r")
    perturb(tmp_path / "r" / "dataset", tmp_path / "bad", episode=1, tick=40, delta=0.05)
    report = replay_dataset(tmp_path / "bad")
    assert report.diverging() == [1]
    ep = report.episodes[1]
    assert ep.first_diverging_tick == 41 and not ep.exact and ep.max_robot > 1e-3
    assert report.episodes[0].exact
    assert replay_dataset(tmp_path / "bad", [0]).exact


def test_unknown_episodes_are_refused(expert_data):
    with pytest.raises(PolicyError, match=r"no episodes \[7\]"):
        replay_dataset(expert_data, [0, 7])
