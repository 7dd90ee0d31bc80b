"""Roll-outs: a policy drives a VecSimEnv and every episode is recorded as it ends.

    summary = rollout(load_policy("model.onnx"), ["tasks/pnp-all-0000.pddl"], "out/run",
                      episodes=20, envs=8, seed=0)
    summary["overall"]["success_rate"]

OUT is a raw execute dataset (the execute recorder's per-tick rows, the same meta files,
so `replay`, `eval --from-dataset` and `relabel` read it) plus SUMMARY.md and
summary.json. Per episode the columns `demoforge/success`, `partial_success`,
`completion_ratio`, `full_completion`, `alive_ratio`, `end`, `assist` and `policy` hold the metrics
(`policy.metrics`). Episodes go to the writer as they end, in canonical (problem,
episode) order, so memory holds at most the running episodes plus those finished
ahead of an earlier one. The episodes run as a stage (`policy.stage`); each work item is
driven by `policy.driver` (cameras, the environment state, the drop rule); the limits and the
object assist are `policy.settings`.
"""

from __future__ import annotations

from pathlib import Path

from demoforge.execute.generate import run_problems
from demoforge.execute.layout import RunLayout, write_raw_meta
from demoforge.execute.problems import check_goals
from demoforge.execute.record import run_layout
from demoforge.execute.vecenv import pddl_task
from demoforge.policy.hdf5 import HDF5_NAME, check_output_format, write_rollout_hdf5
from demoforge.policy.protocol import Policy, PolicyError
from demoforge.policy.settings import RolloutSettings
from demoforge.policy.stage import Plan, PolicyLoad, PolicyStage, run_policy_stage
from demoforge.scenes.problem import Problem
from demoforge.stage.protocol import Progress


def write_meta(root: Path, problems: list[Problem], layout: RunLayout, run: dict, *, stage: str = "rollout") -> None:
    """meta/demoforge files of a raw execute dataset (controller, vocab, provenance, scenes)."""
    write_raw_meta(root, layout, problems, stage=stage, run=run)


def rollout_plan(inputs: tuple[str, ...], domain: str, randomization, robot, max_ticks: int, episodes: int,
                 control_hz: float) -> tuple:
    """A roll-out's (tasks, problems, layout, queue, extra), built alike in every worker."""
    problems = run_problems(list(inputs), domain=domain, randomization=randomization, robot=robot)
    layout = run_layout(problems, fps=round(control_hz))
    tasks = [pddl_task(p, max_ticks=max_ticks) for p in problems]
    queue = [(t, e) for t in range(len(problems)) for e in range(episodes)]
    return tasks, problems, layout, queue, None


def rollout(policy: Policy | str, inputs: list[str | Path], out: str | Path, *, episodes: int, envs: int = 1,
            seed: int = 0, settings: RolloutSettings = RolloutSettings(), spec: str = "?",
            domain: str = "blocks", progress: Progress | None = None, randomization=None, robot=None, look=None,
            workers: int = 1, policy_kwargs: dict | None = None, like: str | Path | None = None,
            output_format: str = "lerobot") -> dict:
    """Roll `policy` out for `episodes` episodes of every problem in `inputs` (PDDL files or env
    packages) on `envs` envs per worker, with physics randomization drawn per episode as `generate`
    does when a `RandomizationSpec` is given, the scenes with the arm of `robot` (a RobotCard, as in
    `generate`), its cameras under `look` (a `policy.looks.EvalLook`; None: the scene's own);
    OUT/dataset, OUT/summary.json, OUT/SUMMARY.md, and with `output_format` "hdf5" OUT/dataset.hdf5
    too (robomimic's layout, `policy.hdf5`). Returns the summary.

    `policy`: a Policy object (one worker), or a spec string that each of `workers` processes loads
    (`load_policy(policy, **policy_kwargs)`, under `--like like`). The episodes run as a stage
    (`policy.stage`): the bytes do not depend on `workers`, a killed run resumes, a finished one
    rerun with the same inputs is returned as it is. `progress` takes a `ProgressEvent` per episode."""
    check_output_format(output_format, Path(out))
    if episodes < 1 or envs < 1 or not (isinstance(workers, int) and workers >= 1):
        raise PolicyError(f"episodes {episodes}, envs {envs} and workers {workers} must be >= 1")
    out = Path(out)
    load = PolicyLoad(policy, dict(policy_kwargs or {}), None if like is None else str(like)) \
        if isinstance(policy, str) else None
    inputs = tuple(str(Path(p).resolve()) for p in inputs)  # however spelled: one run, one fingerprint
    plan = Plan(rollout_plan, {"inputs": inputs, "domain": domain, "randomization": randomization, "robot": robot,
                               "max_ticks": settings.max_ticks, "episodes": episodes,
                               "control_hz": settings.control_hz})
    built = rollout_plan(**plan.args)  # the inputs are read (and refused) before anything is written
    problems = built[1]
    # run_stage guards OUT (never over the problems or --like), then the stage loads the policy and
    # checks the goals (one true at the start or unreachable makes every episode meaningless)
    stage = PolicyStage("rollout", plan, load, len(problems) * episodes, settings, envs, seed,
                        policy if isinstance(policy, str) else spec, "Roll-out", look, randomization,
                        live=None if load is not None else policy, built=built,
                        reads=(*inputs, *([] if like is None else [str(like)])),
                        names=tuple(p.name for p in problems), check=check_goals)
    return _hdf5_too(out, run_policy_stage(stage, out, workers=workers, progress=progress), output_format)


def _hdf5_too(out: Path, summary: dict, output_format: str) -> dict:
    """With output_format "hdf5", OUT/dataset.hdf5 written from OUT/dataset (unless a finished run wrote it)."""
    if output_format == "hdf5" and not (out / HDF5_NAME).exists():
        write_rollout_hdf5(out / "dataset", out / HDF5_NAME)
    return summary
