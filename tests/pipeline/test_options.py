"""One config record per stage: every field settable from `run`'s flags, the YAML config and the
stage's own command under one name; up-front validation; `run -i`; what --smoke-test switches off."""

from __future__ import annotations

import pytest
import typer.main
import yaml
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.pipeline import PipelineError, config_from_dict
from demoforge.pipeline.config import STAGE_CONFIGS, STAGES, PipelineConfig
from demoforge.fields import specs

# stage -> the command that runs it alone (`family` of tasks gen is its FAMILY argument)
COMMANDS = {"tasks": ("tasks", "gen"), "scenes": ("scenes", "build"), "execute": ("generate",), "render": ("render",),
            "bake": ("bake",), "doctor": ("doctor",)}
POSITIONAL = {("tasks", "family")}
ALL = [f"--skip-{s}" for s in STAGES]


def _flags(path: tuple[str, ...]) -> set[str]:
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")}


def test_every_stage_field_is_a_flag_of_run_and_of_its_command_and_a_yaml_key():
    run_flags = _flags(("run",))
    for stage, cls in STAGE_CONFIGS.items():
        stage_flags = _flags(COMMANDS[stage])
        for spec in specs(cls):
            if spec.stage and (stage, spec.name) not in POSITIONAL:
                assert spec.flag in stage_flags, (stage, spec.flag)
            if spec.run:
                assert spec.flag in run_flags, (stage, spec.flag)
                key = spec.name if spec.shared else f"{stage}.{spec.name}"
                assert key in _yaml_keys(), key
    for spec in specs(PipelineConfig):
        assert spec.flag in run_flags


def _yaml_keys() -> set[str]:
    saved = config_from_dict({"experiment_id": "k"}).to_dict()
    return {f"{k}.{kk}" for k, v in saved.items() if k in STAGE_CONFIGS for kk in v} | set(saved)


def test_run_flags_are_unique_across_stages():
    seen: dict[str, str] = {}
    from demoforge.cli.options import run_fields

    for spec in run_fields():
        assert spec.flag not in seen, f"{spec.flag}: {seen.get(spec.flag)} and {spec.name}"
        seen[spec.flag] = spec.name


def test_stage_options_set_from_flags_and_yaml_land_in_the_saved_config(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("execute:\n  max_retries: 5\n  motion_profile: slow\nbake:\n  crf: 30\ndistractors: 1\n"
                   "control_freq: 30\n")
    res = CliRunner().invoke(app, ["run", "--experiment-id", "a", "--out-dir", str(tmp_path), "--config", str(cfg),
                                   "--max-retries", "1", "--split", "train", "--block-size", "0.03,0.04",
                                   "--control-space", "joint_pos", "--filter-idle", "--fail-on", "warning",
                                   "--record-videos", "front", "--bins", "20", *ALL])
    assert res.exit_code == 0, res.output
    saved = yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())
    assert saved["execute"]["max_retries"] == 1 and saved["execute"]["motion_profile"] == "slow"  # flag over file
    assert saved["tasks"]["split"] == "train" and saved["tasks"]["distractors"] == 1
    assert saved["tasks"]["block_size"] == [0.03, 0.04]
    assert (saved["bake"]["control_space"], saved["bake"]["crf"], saved["bake"]["control_freq"]) == ("joint_pos", 30, 30)
    assert saved["bake"]["filter_idle"] is True and saved["doctor"]["fail_on"] == "warning"
    assert saved["execute"]["record_videos"] == ["front"] and saved["doctor"]["bins"] == 20
    assert config_from_dict(saved).to_dict() == saved  # what config.yaml holds reads back to itself


def test_every_problem_of_every_stage_is_reported_before_the_first_stage(tmp_path):
    res = CliRunner().invoke(app, ["run", "--experiment-id", "v", "--out-dir", str(tmp_path), "--n", "9",
                                   "--family", "stack_three", "--motion-profile", "warp", "--look", "nosuch",
                                   "--vcodec", "divx", "--checks", "D999", "--crf", "many"])
    assert res.exit_code == 2, res.output
    out = res.output
    for needle in ("stack_three always has 3 blocks", "motion_profile (--motion-profile): 'warp'", "'nosuch'",
                   "divx", "D999", "crf (--crf): 'many' is not an integer"):
        assert needle in out, needle
    assert out.startswith("error: ") and "Traceback" not in out
    assert not (tmp_path / "v").exists()  # nothing ran
    with pytest.raises(PipelineError, match="goals are chained only with --play"):
        config_from_dict({"experiment_id": "x", "play_goals": 2})


def test_nested_and_flat_keys_and_their_conflicts():
    a = config_from_dict({"experiment_id": "x", "execute": {"envs": 3}, "crf": 20})
    b = config_from_dict({"experiment_id": "x", "envs": 3, "bake": {"crf": 20}})
    assert a == b and a.execute.envs == 3 and a.bake.crf == 20
    with pytest.raises(PipelineError, match="seed is one value for the whole run"):
        config_from_dict({"experiment_id": "x", "execute": {"seed": 3}})
    with pytest.raises(PipelineError, match="unknown key 'look'"):
        config_from_dict({"experiment_id": "x", "render": {"look": ["plain"]}})
    for old in ("render_passes", "bake_convention", "bake_control_freq", "doctor_fail_on"):  # the older flat keys
        with pytest.raises(PipelineError, match=f"unknown key '{old}'"):
            config_from_dict({"experiment_id": "x", old: None})


def test_a_keyed_list_flag_keeps_the_commas_of_its_values():
    """`--randomize mass_scale=[0.9,1.1]` (its own help's example) is one override, and a custom
    material's JSON one material: a comma splits such a flag only where the next KEY= begins."""
    from demoforge.execute.config import ExecuteConfig
    from demoforge.fields import build, collect, parse_text

    field = {s.name: s for s in specs(ExecuteConfig)}
    items = parse_text(field["randomize"], ["mass_scale=[0.9,1.1],spawn_jitter=0.05"])
    assert items == ("mass_scale=[0.9,1.1]", "spawn_jitter=0.05")
    values, problems = collect(ExecuteConfig, {"randomize": items})
    assert not problems and build(ExecuteConfig, values).randomization_spec().mass_scale == (0.9, 1.1)
    custom = 'blocks={"solref": [0.02, 1], "solimp": [0.9, 0.95, 0.001, 0.5, 2], "friction": [1, 0.005, 0.0001]}'
    assert parse_text(field["material"], [f"table=rubber,{custom}"]) == ("table=rubber", custom)
    assert parse_text(field["record_videos"], ["front,wrist"]) == ("front", "wrist")  # a plain list: every comma

def test_smoke_test_fixes_the_scene_and_switches_randomization_off(tmp_path):
    spec = tmp_path / "physics.yaml"
    spec.write_text("mass_scale: [0.8, 1.2]\n")
    c = config_from_dict({"experiment_id": "s", "smoke_test": True})
    assert (c.tasks.block_size, c.tasks.table_height_offset, c.tasks.friction) == ((0.04, 0.04), (0.0, 0.0), (0.9, 0.9))
    assert c.scenes.profiles == 1 and c.execute.randomization is None and c.robot_start is None
    assert c.scenes.robot_start is None and c.execute.robot_start is None
    with pytest.raises(PipelineError, match="smoke_test: it sets randomization=None"):
        config_from_dict({"experiment_id": "s", "smoke_test": True, "randomization": str(spec)})
    with pytest.raises(PipelineError, match="robot_start=None"):
        config_from_dict({"experiment_id": "s", "smoke_test": True, "robot_start": True})
    from demoforge.tasks import generate_family

    task = generate_family(c.tasks.family, count=1, seed=0, **c.tasks.family_options())[0]
    assert task.scene.block_size_m == (0.04, 0.04) and task.scene.friction == (0.9, 0.9)
    help_ = CliRunner().invoke(app, ["run", "--help"], terminal_width=400).output
    assert "randomization off (no physics randomization, no robot start windows)" in help_


def test_interactive_mode_chooses_stages_and_edits_options(tmp_path):
    # stages: tasks yes, scenes no, execute..doctor: Enter (as configured: all run); run options: no;
    # tasks options: yes -> problems 3, task_seed 7, the rest Enter; execute options: no; bake and doctor: no.
    n_tasks = sum(1 for s in specs(STAGE_CONFIGS["tasks"]) if s.run and not s.shared)
    answers = ["y", "n", "", "", "", "", "", "", "n", "y", "", "3", "7"] + [""] * (n_tasks - 3)
    answers += ["n", "n", "n", "n", "n"]  # edit execute, render, bake, doctor? start the run? no
    res = CliRunner().invoke(app, ["run", "--experiment-id", "i", "--out-dir", str(tmp_path), "-i"],
                             input="\n".join(answers) + "\n")
    assert res.exit_code == 0, res.output
    assert "run stage scenes?" in res.output and "tasks.problems (--problems)" in res.output
    out = res.output
    shown = yaml.safe_load(out[out.index("\nbackend: ") + 1:out.index("start the run?")])
    assert shown["skip"] == ["scenes"] and shown["tasks"]["problems"] == 3 and shown["tasks"]["task_seed"] == 7
    assert not (tmp_path / "i").exists()  # declined at "start the run?"
    answers = ["", "", "", "", "", "", "", "", "n", "y", "", "zero", "0"] + [""] * (n_tasks - 2) + ["n"] * 5
    bad = CliRunner().invoke(app, ["run", "--experiment-id", "i", "--out-dir", str(tmp_path), "-i"],
                             input="\n".join(answers) + "\n")
    assert "'zero' is not an integer; try again" in bad.output  # re-asked; 0 is then refused with the whole config
    assert bad.exit_code == 2 and "tasks.problems (--problems): 0 must be an integer in [1, 100000]" in bad.output
