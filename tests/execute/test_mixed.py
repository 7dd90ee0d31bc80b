"""A run over problems of several families (their physics states of different sizes): one raw
dataset whose sim.state is as wide as the widest problem's state, each episode zero padded past
its own recorded width; it replays exactly, renders, bakes, doctors and checks."""

import json

import numpy as np
import pytest

from demoforge.dataset import check_dataset, open_dataset
from demoforge.execute import generate
from demoforge.raw import EpisodeRecord, own_states
from demoforge.replay import episode_scene, replay_states
from demoforge.sim import snapshot, state_size

from .test_generate import _outputs

@pytest.fixture(scope="module")
def run(mixed, tmp_path_factory):
    out = tmp_path_factory.mktemp("mixed-run") / "out"
    return generate(mixed, out, episodes_per_problem=1, envs=1, seed=3)


def test_a_mixed_run_writes_one_dataset_padded_to_its_widest_state(run):
    root = run.roots["success"]
    assert run.successes == 3 and check_dataset(root) == []
    ds = open_dataset(root)
    width = ds.info.features["sim.state"].shape[0]
    widths = {}
    for i in ds.episode_indices:
        record = EpisodeRecord.from_row(ds.episode(i))
        states = ds.read_episode(i, ["sim.state"])["sim.state"]
        own = state_size(episode_scene(root, i).model)
        assert record.sim_state_width == own  # each episode records its own model's size
        assert not states[:, own:].any()  # zeros past it
        assert own_states(states, record).shape == (len(states), own)
        widths[record.problem.split("-")[0]] = own
    assert len(set(widths.values())) == 3 and width == max(widths.values()) == widths["unstack"]
    provenance = json.loads((root / "meta/demoforge/provenance.json").read_text())
    assert provenance["sim_state_width"] == width and "zeros" in provenance["sim_state_padding"]


def test_every_episode_of_a_mixed_run_replays_exactly(run):
    from demoforge.policy.replay import replay_dataset

    root = run.roots["success"]
    ds = open_dataset(root)
    for i in ds.episode_indices:  # every restored row is the recorded row, bit for bit
        states = own_states(ds.read_episode(i, ["sim.state"])["sim.state"], EpisodeRecord.from_row(ds.episode(i)))
        for row, scene in zip(states, replay_states(root, i), strict=True):
            np.testing.assert_array_equal(snapshot(scene.model, scene.data), row)
    report = replay_dataset(root)  # open loop through the control law: the recorded states again
    assert report.exact and len(report.episodes) == 3


def test_a_mixed_run_does_not_depend_on_the_env_count(mixed, run, tmp_path):
    other = generate(mixed, tmp_path / "b", episodes_per_problem=1, envs=3, seed=3)
    assert other.episodes == 3
    assert _outputs(tmp_path / "b") == _outputs(run.out)


@pytest.mark.slow
def test_a_mixed_run_does_not_depend_on_the_worker_count_and_renders_bakes_and_doctors(mixed, run, tmp_path):
    from demoforge.convert import BakeConfig, bake
    from demoforge.doctor import run_doctor
    from demoforge.render import RenderConfig, parse_look_arg, render_dataset

    other = generate(mixed, tmp_path / "b", episodes_per_problem=1, envs=2, workers=2, seed=3)
    assert _outputs(tmp_path / "b") == _outputs(run.out)
    rendered = tmp_path / "rendered"
    render_dataset(other.roots["success"], rendered, RenderConfig(looks=(parse_look_arg("plain"),), cameras=("front",)))
    assert check_dataset(rendered) == []
    baked = bake([rendered], tmp_path / "baked", BakeConfig(control_space="joint_target", control_freq=30))
    assert check_dataset(baked) == [] and open_dataset(baked).num_episodes == 3
    for root in (other.roots["success"], baked):
        assert not [f for f in run_doctor(root).findings if f.severity == "error"]
