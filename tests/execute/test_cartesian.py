"""generate under a cartesian_delta control law: the expert's planned joint motion is sent as
TCP deltas through the differential-IK controller; raw_command holds those deltas, action the
joint targets they became; replay stays exact and the output deterministic."""

import json

import mujoco
import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import check_dataset, open_dataset
from demoforge.execute import ExecuteError, generate, load_problems, run_layout
from demoforge.policy.replay import replay_dataset
from demoforge.replay import episode_scene
from demoforge.sim import restore

from .test_generate import _outputs
from .test_expert_loop import Nudger, _extras, _replays_exactly

LAW = "cartesian_delta"


def _tcp(model, scratch, robot, q) -> np.ndarray:
    scratch.qpos[robot.arm_qpos] = q
    mujoco.mj_kinematics(model, scratch)
    return scratch.site_xpos[robot.tcp_site].copy()


def test_raw_command_holds_the_tcp_deltas_and_a_retried_episode_replays_exactly(pnp, tmp_path):
    hook = Nudger(times=1)  # a failed place: the retry restores a snapshot mid-episode
    summary = generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, seed=0, after_skill=hook, control_law=LAW)
    assert hook.calls and summary.successes == 1
    root = summary.roots["success"]
    assert check_dataset(root) == []
    assert [p["attempts"] for p in _extras(root)["plan"]] == [1, 2]
    meta = root / "meta/demoforge"
    assert json.loads((meta / "controller.json").read_text())["mode"] == LAW
    assert json.loads((tmp_path / "run/run.json").read_text())["control_law"] == LAW
    reader = open_dataset(root)
    assert reader.info.features["raw_command"].shape == (7,) and reader.info.features["action"].shape == (8,)
    # through the recorded law, the recorded commands reproduce every recorded state bit for bit
    report = replay_dataset(root)
    assert report.exact, report.to_json()
    _replays_exactly(root, 0)
    # raw_command[t] is the TCP displacement [m] the tick's joint targets (the action) ask for
    cols = reader.read_episode(0)
    scene = episode_scene(root, 0)
    m, robot = scene.model, scene.robot
    scratch = mujoco.MjData(m)
    moved = []
    for state, action in zip(cols["sim.state"], cols["action"], strict=True):
        restore(m, scene.data, state)
        before = _tcp(m, scratch, robot, scene.data.ctrl[robot.arm_actuators])
        moved.append(_tcp(m, scratch, robot, action[:-1].astype(np.float64)) - before)
    delta = cols["raw_command"][:, :3].astype(np.float64)
    assert np.abs(delta).max() > 5e-3  # it moves, up to centimetres per tick
    assert np.linalg.norm(np.array(moved) - delta) < 0.1 * np.linalg.norm(delta)
    np.testing.assert_array_equal(cols["raw_command"][:, -1], cols["action"][:, -1])  # gripper as commanded


def test_output_is_byte_identical_for_any_env_count(pnp, tmp_path):
    a = generate(pnp, tmp_path / "a", episodes_per_problem=2, envs=1, seed=4, control_law=LAW)
    b = generate(pnp, tmp_path / "b", episodes_per_problem=2, envs=3, seed=4, control_law=LAW)
    assert a.episodes == 4 and a.successes == 4
    assert _outputs(tmp_path / "a") == _outputs(tmp_path / "b")


@pytest.mark.slow
def test_output_is_byte_identical_for_one_or_two_workers(pnp, tmp_path):
    generate(pnp, tmp_path / "a", episodes_per_problem=2, envs=1, workers=1, seed=4, control_law=LAW)
    generate(pnp, tmp_path / "b", episodes_per_problem=2, envs=2, workers=2, seed=4, control_law=LAW)
    assert _outputs(tmp_path / "a") == _outputs(tmp_path / "b")


def test_the_card_law_is_the_default_and_an_unknown_law_is_refused(pnp, tmp_path):
    problems = load_problems(pnp[:1])
    layout = run_layout(problems)
    assert layout.law.mode == "joint_position" and layout.features()["raw_command"].shape == (8,)
    cart = run_layout(problems, control_law=LAW)
    assert cart.law.mode == LAW and cart.law.kp == layout.law.kp and cart.features()["raw_command"].shape == (7,)
    with pytest.raises(ExecuteError, match=r"'joint_velocity' is not one of \['joint_position', 'cartesian_delta'\]"):
        generate(pnp[:1], tmp_path / "bad", episodes_per_problem=1, control_law="joint_velocity")
    assert not (tmp_path / "bad").exists()


def test_cli_control_law_flag(pnp, tmp_path):
    result = CliRunner().invoke(app, ["generate", str(pnp[0]), "--episodes-per-problem", "1", "--control-law", LAW,
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run/success/meta/demoforge/controller.json").read_text())["mode"] == LAW
    bad = CliRunner().invoke(app, ["generate", str(pnp[0]), "--episodes-per-problem", "1", "--control-law", "torque",
                                   "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "error:" in bad.output and "cartesian_delta" in bad.output
    assert "Traceback" not in bad.output


@pytest.mark.slow
@pytest.mark.parametrize("family", ["pnp", "stack_three"])
def test_yield_under_cartesian_delta_is_at_least_95_percent(family, tmp_path):
    from .conftest import problem_files

    paths = problem_files(tmp_path / "tasks", family, 5)
    summary = generate(paths, tmp_path / "run", episodes_per_problem=4, envs=4, seed=5, control_law=LAW)
    print(f"{family} under {LAW}: {summary.successes}/{summary.episodes}; failures {summary.failure_kinds()}")
    assert summary.successes >= 0.95 * summary.episodes
