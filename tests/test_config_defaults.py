"""Every stage's defaults, pinned in one table: a changed default fails here and nowhere else.

Each stage's config record (owned by its package) is the one place a default is written: the
stage command's flags, `demoforge run`'s flags and YAML keys, `run -i` and a library caller's
`Record()` all read it. `RUN` lists the few fields whose default differs under `demoforge run`.
The commands that are no stage of `demoforge run` (rollout, eval, ...) have records too
(`COMMANDS`), pinned in the same table.
"""

from __future__ import annotations

import inspect

import pytest

from demoforge.doctor.coverage import CoverageConfig
from demoforge.export import ExportConfig
from demoforge.fields import specs, value_of
from demoforge.pipeline.config import STAGE_CONFIGS, PipelineConfig, config_from_dict
from demoforge.policy.batch import BatchRunConfig
from demoforge.policy.config import EvalConfig, RelabelConfig, ReplayConfig, RolloutConfig
from demoforge.randomize.commands import SampleConfig, SpecCheckConfig
from demoforge.render.sheet import LookSheetConfig
from demoforge.sim.lint import LintConfig
from demoforge.stage.merge import MergeConfig
from demoforge.tasks.commands import PlanConfig, TasksCheckConfig, TasksListConfig
from demoforge.viz.config import PlotConfig, VizConfig

DEFAULTS: dict[str, dict[str, object]] = {
    "run": {"experiment_id": None, "out_dir": "runs", "seed": 0, "workers": "auto", "robot": None,
            "robot_start": None, "task_packages": (), "skip": (), "backend": "local", "ray_address": None,
            "render_schedule": "coupled", "smoke_test": False, "progress": True},
    "tasks": {"task_packages": (), "family": "stack_three", "problems": 2, "task_seed": 0, "n": None,
              "distractors": 0, "split": "all", "split_by": "colour", "block_size": None, "table_height_offset": None,
              "friction": None, "placement_x": None, "placement_y": None, "problem_files": (),
              "sidecar_material": ()},
    "scenes": {"task_packages": (), "reset_states": 4, "profiles": 8, "seed": 0, "robot": None, "robot_start": None},
    "execute": {"task_packages": (), "episodes_per_problem": 4, "envs": 1, "problems_per_process": 8,
                "max_retries": 3, "max_replans": 2, "max_episode_s": 180.0, "motion_profile": "medium",
                "put_down_spot": "uniform", "flip_mode": "topple", "control_law": None, "randomization": None,
                "randomize": (),
                "record_videos": (), "video_look": "plain", "play": False, "play_goals": None, "material": (), "seed": 0, "workers": 1,
                "robot": None, "robot_start": None},
    "render": {"task_packages": (),
               "looks": (), "cameras": ("front", "wrist"), "image_size": None, "depth": False, "segmentation": False,
               "seed": 0, "episodes": None, "reference_video": None, "workers": 1},
    "bake": {"task_packages": (), "control_space": "joint_target", "control_freq": None, "cams": None, "task": None,
             "include_failures": False, "filter_idle": False, "vcodec": "auto", "crf": 23, "gop_seconds": 0.25,
             "pix_fmt": "yuv420p", "preset": None, "max_video_file_seconds": 800.0, "lerobot_format": "v3.0",
             "environment_state": False, "environment_state_kind": "objects", "std_floor": 0.0, "keep": (), "workers": 1},
    "doctor": {"fail_on": "error", "checks": None, "robot": None, "bins": 10, "min_occupancy": 0.7,
               "min_bin_frames": 1, "constant_range": 1e-8, "near_constant_std": 2e-3, "idle_tolerance": 1e-6, "max_idle_fraction": 0.5,
               "max_action_speed": 3.0, "length_mad_z": 3.5, "float32_hazard_s": 1000.0, "stats_rtol": 1e-3,
               "stats_atol": 1e-5, "decode_video": False, "path_rad_per_m": 5.0, "path_factor": 2.0,
               "path_slack": 1.0, "max_per_check": 20},
    # commands that are no stage of `demoforge run` (COMMANDS)
    "rollout": {"task_packages": (),
                "policy": None, "policy_arg": (), "envs": 1, "max_ticks": 1200, "warmup": 0, "reference_ticks": None,
                "assist_floor": None, "assist_steps": 0, "like": None, "image_size": None, "workers": 1,
                "episodes": 1, "domain": "blocks", "randomization": None, "robot": None, "look": None, "seed": 0,
                "output_format": "lerobot"},
    "eval": {"task_packages": (),
             "policy": None, "policy_arg": (), "envs": 1, "max_ticks": 1200, "warmup": 0, "reference_ticks": None,
             "assist_floor": None, "assist_steps": 0, "like": None, "image_size": None, "workers": 1,
             "episodes": None, "start": "first", "robot": None, "look": None, "seed": 0},
    "relabel": {"task_packages": (), "envs": 1, "workers": 1},
    "replay": {"task_packages": (), "episodes": None, "kinematic": False, "tol": 1e-6},
    "viz": {"task_packages": (),
            "episodes": None, "width": 160, "height": 120, "cameras": (), "kinds": ("rgb", "depth", "segmentation"),
            "stride": 1},
    "plot": {"task_packages": (), "episode": None},
    "export": {"trainer": None, "action_horizon": None, "repo_id": None, "workers": 1},
    "merge": {"video_file_duration_s": None},
    "look-sheet": {"task_packages": (), "look": "randomized", "draws": 8, "columns": 4, "cameras": ("front", "side"),
                   "family": "stack_three", "seed": 0, "axes": False},
    "randomize-check": {"overrides": ()},
    "randomize-sample": {"seed": 0, "count": 1, "overrides": (), "robot": None, "jsonl": False},
    "tasks-list": {"task_packages": (), "as_json": False},
    "tasks-check": {"task_packages": (), "domain": "blocks"},
    "tasks-plan": {"task_packages": (), "domain": "blocks", "budget": 1.0},
    "sim-lint": {"settle_s": 1.0, "keyframe": None, "as_json": False},
    "eval-batch": {"task_packages": (), "score_only": False, "limit": None},
    "coverage": {"task_packages": (), "episodes": 40, "seed": 0, "robot": None, "bins": 10, "envs": 4, "workers": 1},
}
# Under `demoforge run`: more environments and every core, no bake unless asked, a doctor that reports only.
RUN = {"execute": {"envs": 2, "workers": "auto"}, "render": {"workers": "auto"},
       "bake": {"control_space": None, "workers": "auto"}, "doctor": {"fail_on": None}}
# Library-only fields (no flag): what a stage uses that no option sets.
LIBRARY = {("execute", "settings.settle_s"): 0.2, ("execute", "settings.plan_budget_s"): 1.0,
           ("execute", "settings.control_hz"): 60.0, ("render", "depth_range_m"): (0.01, 10.0)}

# The records of the commands that are no stage of `demoforge run` (kept out of STAGE_CONFIGS).
COMMANDS = {"rollout": RolloutConfig, "eval": EvalConfig, "relabel": RelabelConfig, "replay": ReplayConfig,
            "viz": VizConfig, "plot": PlotConfig, "export": ExportConfig, "merge": MergeConfig,
            "look-sheet": LookSheetConfig, "coverage": CoverageConfig,
            "randomize-check": SpecCheckConfig, "randomize-sample": SampleConfig, "tasks-list": TasksListConfig,
            "tasks-check": TasksCheckConfig, "tasks-plan": PlanConfig, "sim-lint": LintConfig,
            "eval-batch": BatchRunConfig}
RECORDS = {"run": PipelineConfig, **STAGE_CONFIGS, **COMMANDS}


@pytest.mark.parametrize("stage", list(RECORDS))
def test_each_field_has_the_default_of_the_table_on_its_command_and_for_a_library_caller(stage):
    cls = RECORDS[stage]
    assert {s.name: s.default for s in specs(cls)} == DEFAULTS[stage]
    if cls is not PipelineConfig:  # PipelineConfig needs an experiment_id
        record = cls()
        assert {s.name: value_of(record, s) for s in specs(cls)} == DEFAULTS[stage]


def test_a_run_config_holds_the_table_with_the_run_defaults():
    saved = config_from_dict({"experiment_id": "x"}).to_dict()
    want = {**DEFAULTS["run"], "experiment_id": "x"}
    for stage in STAGE_CONFIGS:
        shared = {s.name for s in specs(STAGE_CONFIGS[stage]) if s.shared or not s.run}
        want[stage] = {k: v for k, v in {**DEFAULTS[stage], **RUN.get(stage, {})}.items() if k not in shared}
    plain = {k: (list(v) if isinstance(v, tuple) else v) for k, v in want.items() if k not in STAGE_CONFIGS}
    assert {k: v for k, v in saved.items() if k not in STAGE_CONFIGS} == plain
    for stage in STAGE_CONFIGS:
        assert saved[stage] == {k: (list(v) if isinstance(v, tuple) else v) for k, v in want[stage].items()}, stage


def test_library_only_fields_and_the_library_functions_agree_with_the_records():
    from demoforge.execute import generate
    from demoforge.pipeline.play import generate_play

    for (stage, path), value in LIBRARY.items():
        record = STAGE_CONFIGS[stage]()
        for name in path.split("."):
            record = getattr(record, name)
        assert record == value, (stage, path)
    execute = DEFAULTS["execute"]
    for fn in (generate, generate_play):  # their keyword defaults are the execute stage's
        params = inspect.signature(fn).parameters
        for name in ("envs", "workers", "seed", "problems_per_process"):
            assert params[name].default == execute[name], (fn.__name__, name)
        settings = params["settings"].default
        assert (settings.max_retries, settings.max_replans, settings.max_episode_s, settings.motion_profile) == (
            execute["max_retries"], execute["max_replans"], execute["max_episode_s"], execute["motion_profile"])


def test_the_bake_encoder_defaults_are_the_video_writers():
    """h264 (where `--vcodec auto` cannot copy), crf 23, a keyframe every 0.25 s, yuv420p, 800 s mp4s."""
    from demoforge.convert import BakeConfig
    from demoforge.dataset.layout import DEFAULT_VIDEO_FILE_DURATION_S
    from demoforge.dataset.video import VideoSettings

    video = BakeConfig().video
    assert (video.codec, video.crf, video.gop_s, video.pix_fmt, video.preset) == ("h264", 23, 0.25, "yuv420p", None)
    assert video == VideoSettings()
    assert DEFAULT_VIDEO_FILE_DURATION_S == DEFAULTS["bake"]["max_video_file_seconds"]


def test_the_command_records_are_no_run_stages_and_the_library_functions_share_their_defaults():
    from demoforge.policy import rollout
    from demoforge.policy.evaluate import evaluate_from_dataset
    from demoforge.policy.relabel import relabel
    from demoforge.policy.replay import replay_dataset

    assert not set(COMMANDS.values()) & set(STAGE_CONFIGS.values())
    assert not set(COMMANDS) & set(STAGE_CONFIGS)
    for fn, table in ((rollout, "rollout"), (evaluate_from_dataset, "eval"), (relabel, "relabel"),
                      (replay_dataset, "replay")):
        params = inspect.signature(fn).parameters
        for name in ("envs", "seed", "workers", "domain", "output_format", "kinematic"):
            if name in params and name in DEFAULTS[table]:
                assert params[name].default == DEFAULTS[table][name], (fn.__name__, name)
    settings = inspect.signature(rollout).parameters["settings"].default
    assert (settings.max_ticks, settings.warmup_ticks, settings.reference_ticks, settings.assist) == (
        DEFAULTS["rollout"]["max_ticks"], DEFAULTS["rollout"]["warmup"], None, None)
