"""Episodes from random robot starts (PDDL inputs): they succeed, a closed gripper opens before
its first grasp, each episode records its own start, and the bytes do not depend on --envs."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import open_dataset
from demoforge.execute import ExecuteError, generate
from demoforge.randomize.robot_start import RobotStartParams
from demoforge.raw import schema
from demoforge.raw.schema import read_vocab
from tests.execute.test_generate import _outputs

CLOSED = RobotStartParams(p_closed=1.0)


def test_episodes_from_closed_random_starts_succeed_identically_for_any_env_count(pnp, tmp_path):
    a = generate(pnp[:1], tmp_path / "a", episodes_per_problem=3, envs=1, seed=2, robot_start=CLOSED)
    b = generate(pnp[:1], tmp_path / "b", episodes_per_problem=3, envs=2, seed=2, robot_start=CLOSED)
    assert a.successes == 3
    assert _outputs(tmp_path / "a") == _outputs(tmp_path / "b")
    assert json.loads((tmp_path / "a/run.json").read_text())["robot_start"]["p_closed"] == 1.0
    root = a.roots["success"]
    reader = open_dataset(root)
    phases = read_vocab(root)["phases"]
    starts = []
    for k in reader.episode_indices:
        start = json.loads(reader.episode(k)["demoforge/scene_draw"])["robot_start"]
        starts.append(start["arm_q_rad"])
        cols = reader.read_episode(k, ["observation.state", schema.PHASE])
        state, phase = np.asarray(cols["observation.state"]), np.asarray(cols[schema.PHASE]).ravel()
        assert start["gripper_closed"] and state[0, -1] > 0.9  # the episode starts closed
        assert np.allclose(state[0, :-1], start["arm_q_rad"], atol=0.02)  # at its own drawn start
        first_close = int(np.flatnonzero(phase == phases.index("close"))[0])
        assert state[first_close, -1] < 0.5  # opened on the way to the first grasp
    assert len({tuple(s) for s in starts}) == 3


def test_cli_takes_robot_start_flags_and_refuses_them_with_a_package(pnp, tmp_path):
    spec = tmp_path / "start.yaml"
    spec.write_text("p_closed: 0.0\nyaw_rad: [-0.3, 0.3]\n")
    ok = CliRunner().invoke(app, ["generate", str(pnp[0]), "--episodes-per-problem", "1", "--seed", "1",
                                  "--robot-start-spec", str(spec), "--out", str(tmp_path / "a")])
    assert ok.exit_code == 0, ok.output
    reader = open_dataset(tmp_path / "a/success")
    start = json.loads(reader.episode(0)["demoforge/scene_draw"])["robot_start"]
    assert start["gripper_closed"] is False and -0.3 <= start["yaw_rad"] <= 0.3
    home = CliRunner().invoke(app, ["generate", str(pnp[0]), "--episodes-per-problem", "1", "--seed", "1",
                                    "--out", str(tmp_path / "h")])
    assert home.exit_code == 0, home.output
    assert json.loads(open_dataset(tmp_path / "h/success").episode(0)["demoforge/scene_draw"])["robot_start"] is None
    assert "robot_start" not in json.loads((tmp_path / "h/run.json").read_text())  # home runs keep their run.json
    spec.write_text("p_closed: 1.5\n")
    bad = CliRunner().invoke(app, ["generate", str(pnp[0]), "--episodes-per-problem", "1",
                                   "--robot-start-spec", str(spec), "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "p_closed: 1.5 must be a probability in [0, 1]" in bad.output
    from demoforge.scenes import build_scene_package

    build_scene_package(pnp[:1], reset_states=1, profiles=1, seed=0, out=tmp_path / "pkg")
    with pytest.raises(ExecuteError, match="reset states hold the robot starts it was built with"):
        generate([tmp_path / "pkg"], tmp_path / "y", episodes_per_problem=1, robot_start=RobotStartParams())


def test_package_episodes_record_their_reset_states_start(pnp, tmp_path):
    from demoforge.scenes import build_scene_package

    build_scene_package(pnp[:1], reset_states=2, profiles=1, seed=0, out=tmp_path / "pkg",
                      robot_start=RobotStartParams())
    states = json.loads((tmp_path / "pkg" / pnp[0].name.removesuffix(".pddl") / "profile-000/reset_states.json")
                        .read_text())
    summary = generate([tmp_path / "pkg"], tmp_path / "run", episodes_per_problem=2, seed=0)
    assert summary.successes == 2
    reader = open_dataset(summary.roots["success"])
    recorded = [json.loads(reader.episode(k)["demoforge/scene_draw"])["robot_start"] for k in reader.episode_indices]
    assert recorded == [s["robot_start"] for s in states] and recorded[0] != recorded[1]
