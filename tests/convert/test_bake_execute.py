"""Bake a raw dataset written by the real execution stage (`demoforge.execute.generate`)."""

import json
from pathlib import Path

import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake, read_episode
from demoforge.convert.episode import BakeError
from demoforge.dataset import open_dataset
from demoforge.replay import EPISODE_MODELS

PROBLEM = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "stack_three-all-0000.pddl"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from demoforge.execute.generate import generate

    out = tmp_path_factory.mktemp("execute") / "run"
    summary = generate([PROBLEM], out, episodes_per_problem=1, seed=0)
    assert summary.roots["success"] is not None
    return out


def test_every_convention_of_an_executed_episode(run, tmp_path):
    src = open_dataset(run / "success")
    raw = src.read_episode(0, ["observation.state", "action", "raw_command"])
    for convention, rate in (("joint_target", 60), ("joint_vel", 15), ("joint_pos", 30), ("raw_cmd", 20)):
        out = bake([run], tmp_path / convention, BakeConfig(control_space=convention, control_freq=rate))
        got = open_dataset(out).read_episode(0)
        stride = 60 // rate
        np.testing.assert_array_equal(got["observation.state"], raw["observation.state"][::stride])
        np.testing.assert_array_equal(got["raw_command"], raw["raw_command"][::stride])
        if convention == "joint_target":
            np.testing.assert_array_equal(got["action"], raw["action"])
        if convention == "joint_vel":
            q = raw["observation.state"][::stride, :7].astype(np.float64)
            np.testing.assert_allclose(got["action"][:-1, :7], np.diff(q, axis=0) * rate, rtol=1e-5, atol=1e-5)
        stamp = json.loads((out / "meta/bake.json").read_text())
        assert stamp["control_law"]["mode"] == "joint_position" and stamp["gripper"]["quantity"] == "closedness"


def test_filter_idle_on_an_executed_episode_drops_only_dead_ticks(run, tmp_path):
    ep = read_episode(open_dataset(run / "success"), 0, objects=True, models=EPISODE_MODELS)
    assert ep.objects.shape[0] == ep.length and ep.objects.shape[1] % 7 == 0 and ep.objects.shape[1] >= 21
    out = bake([run], tmp_path / "idle", BakeConfig(control_space="joint_pos", filter_idle=True), models=EPISODE_MODELS)
    record = json.loads((out / "meta/bake.json").read_text())["sources"][0]["episodes"][0]
    assert 0 < record["idle_dropped"] < ep.length // 10
    assert record["ticks_out"] == ep.length - record["idle_dropped"] == open_dataset(out).num_frames


def test_options_that_read_rebuilt_models_are_refused_without_them(run, tmp_path):
    """convert imports no simulator: a bake asked to read rebuilt models without being given them
    says which option needs them and what to pass, and leaves nothing behind."""
    for option, config in (("--filter-idle", BakeConfig(filter_idle=True)),
                           ("--environment-state", BakeConfig(environment_state=True))):
        with pytest.raises(BakeError, match=f"{option} reads each raw episode's rebuilt MuJoCo model.*EPISODE_MODELS"):
            bake([run], tmp_path / "out", config)
        assert not list(tmp_path.iterdir())


@pytest.fixture(scope="module")
def cartesian_run(tmp_path_factory):
    """One pick-and-place episode generated under the cartesian_delta law."""
    from demoforge.execute.generate import generate
    from demoforge.tasks import generate_family, write_tasks

    tmp = tmp_path_factory.mktemp("cartesian")
    paths = [p for p in write_tasks(generate_family("pnp", count=1, seed=11), tmp / "tasks")
             if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    summary = generate(paths, tmp / "run", episodes_per_problem=1, seed=0, control_law="cartesian_delta")
    assert summary.successes == 1
    return tmp / "run"


def test_raw_cmd_of_a_cartesian_delta_run_is_its_tcp_deltas_at_the_native_rate(cartesian_run, tmp_path):
    from demoforge.convert import BakeError
    from demoforge.dataset import check_dataset

    raw = open_dataset(cartesian_run / "success").read_episode(0, ["raw_command"])["raw_command"]
    out = bake([cartesian_run], tmp_path / "raw_cmd", BakeConfig(control_space="raw_cmd"))
    assert check_dataset(out) == []
    baked = open_dataset(out)
    np.testing.assert_array_equal(baked.read_episode(0)["action"], raw)
    assert baked.info.features["action"].names == ["dx", "dy", "dz", "rx", "ry", "rz", "gripper"]
    stamp = json.loads((out / "meta/bake.json").read_text())
    assert stamp["control_law"]["mode"] == "cartesian_delta" and stamp["control_freq"] == 60
    assert stamp["action"]["parts"] == {"arm": [0, 6], "gripper": [6, 7]}
    with pytest.raises(BakeError, match="TCP displacement per native tick .*Bake raw_cmd at 60 Hz"):
        bake([cartesian_run], tmp_path / "raw_cmd_30", BakeConfig(control_space="raw_cmd", control_freq=30))


def test_joint_conventions_of_a_cartesian_delta_run_are_as_for_joint_targets(cartesian_run, tmp_path):
    raw = open_dataset(cartesian_run / "success").read_episode(0, ["observation.state", "action"])
    for convention, rate in (("joint_target", 30), ("joint_pos", 20), ("joint_vel", 15)):
        out = bake([cartesian_run], tmp_path / convention, BakeConfig(control_space=convention, control_freq=rate))
        got = open_dataset(out).read_episode(0)
        stride = 60 // rate
        np.testing.assert_array_equal(got["observation.state"], raw["observation.state"][::stride])
        if convention == "joint_target":  # the joint targets the controller turned each delta into
            np.testing.assert_array_equal(got["action"], raw["action"][::stride])
        if convention == "joint_pos":
            np.testing.assert_array_equal(got["action"][:-1], raw["observation.state"][::stride][1:])
        if convention == "joint_vel":
            q = raw["observation.state"][::stride, :7].astype(np.float64)
            np.testing.assert_allclose(got["action"][:-1, :7], np.diff(q, axis=0) * rate, rtol=1e-5, atol=1e-5)


def test_cli_bake_of_a_cartesian_delta_run(cartesian_run, tmp_path):
    from typer.testing import CliRunner

    from demoforge.cli.main import app

    ok = CliRunner().invoke(app, ["bake", str(cartesian_run), "--control-space", "raw_cmd", "--quiet",
                                  "--out", str(tmp_path / "ok")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, ["bake", str(cartesian_run), "--control-space", "raw_cmd", "--control-freq", "30",
                                   "--quiet", "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "error:" in bad.output and "Bake raw_cmd at 60 Hz" in bad.output
    assert "Traceback" not in bad.output and not (tmp_path / "bad").exists()


def test_the_cli_gives_bake_the_models_its_options_read(run, tmp_path):
    from typer.testing import CliRunner

    from demoforge.cli.main import app

    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["bake", str(run), "--control-space", "joint_pos", "--filter-idle",
                                      "--environment-state", "--out", str(out)])
    assert result.exit_code == 0, result.output
    stamp = json.loads((out / "meta/bake.json").read_text())
    assert stamp["environment_state"]["kind"] == "objects" and stamp["sources"][0]["episodes"][0]["idle_dropped"] > 0
