"""Relabeling: failed roll-outs become expert demonstrations from where the policy went wrong.

    summary = relabel("out/rollout/dataset", "out/relabel", envs=4)

For each failed episode of a roll-out dataset, the failure state is the last recorded tick
from which the planner still finds a plan to the goal: the distinct symbolic states of
the episode are tried from the end backwards, each from its last tick, rebuilt exactly
(scene draw, randomization, that tick's `sim.state`) and abstracted as the expert does.
The expert (planner + skills, with its retries and re-plans) then runs from that state,
and each successful run is recorded to OUT/dataset as a raw execute episode whose first
row is that state, with `demoforge/relabel` = {source, episode, tick, policy}. Episodes
where no recorded state is reachable, or where the expert fails too, are listed in
OUT/summary.json.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from demoforge.dataset import DatasetWriter, open_dataset
from demoforge.dataset.keys import row_extra
from demoforge.dataset.layout import write_json_atomic
from demoforge.execute.record import run_layout
from demoforge.execute.runner import EpisodeResult, ExpertRunner, RunnerSettings
from demoforge.execute.vecenv import VecSimEnv
from demoforge.guard import guard_output_dir, restart_killed
from demoforge.policy.evaluate import recorded_start, recorded_task
from demoforge.policy.protocol import PolicyError
from demoforge.policy.rollout import write_meta
from demoforge.raw import schema
from demoforge.raw.scene import recorded_problem
from demoforge.tasks import make_planner


# a killed run's OUT (its dataset unfinished, no summary) is started over by the next run
_KILLED = functools.partial(restart_killed, writes={"dataset"}, finished="summary.json")


def failure_tick(root: Path, k: int, *, plan_budget_s: float = 1.0, cache: dict | None = None) -> int | None:
    """The last tick of episode `k` from which the goal is reachable per the planner (None: none is)."""
    reader = open_dataset(root)
    symbols = reader.read_episode(k, [schema.SYMBOLIC_STATE])[schema.SYMBOLIC_STATE]
    change = np.flatnonzero((symbols[1:] != symbols[:-1]).any(axis=1))
    ends = sorted({len(symbols) - 1, *change.tolist()}, reverse=True)  # last tick of each distinct segment
    planner = make_planner("fallback")
    for tick in ends:
        ep = recorded_start(root, k, tick, cache)
        task = ep.start.problem.task
        if planner.plan(task, state=ep.atoms(), time_budget_s=plan_budget_s).solved:
            return tick
    return None


def relabel(rollouts: str | Path, out: str | Path, *, envs: int = 1, settings: RunnerSettings = RunnerSettings(),
            progress=None) -> dict:
    """Expert demonstrations from the failure states of the failed episodes of `rollouts`; see the module."""
    root, out = Path(rollouts), Path(out)
    guard_output_dir(out, [root], error=PolicyError, resumable=_KILLED)
    reader = open_dataset(root)
    columns = set(reader.episodes_table.column_names)
    if not columns & {"demoforge/success", "demoforge/outcome"} or schema.SIM_STATE not in reader.info.features:
        raise PolicyError(f"{root}: not a raw demoforge roll-out or execute dataset (it needs the {schema.SIM_STATE} "
                          "feature and each episode's outcome); pass OUT/dataset of `demoforge rollout`")
    cache: dict = {}
    failed, unreachable, starts = [], [], []
    for row in reader.iter_episodes():
        k = int(row["episode_index"])
        ok = row_extra(row, "success")
        if ok is None:
            ok = row_extra(row, "outcome") == "success"
        if ok:
            continue
        failed.append(k)
        tick = failure_tick(root, k, plan_budget_s=settings.plan_budget_s, cache=cache)
        if tick is None:
            unreachable.append(k)
        else:
            starts.append((k, tick, row_extra(row, "problem"), row_extra(row, "policy")))
    out.mkdir(parents=True, exist_ok=True)
    problems = [recorded_problem(root, name, cache) for _, _, name, _ in starts]
    expert_failed: list[dict] = []
    written = 0
    if starts:
        unique = list({p.name: p for p in problems}.values())
        layout = run_layout(unique, fps=reader.info.fps)
        queue = [(j, 0) for j in range(len(starts))]
        runner = ExpertRunner(unique, layout, num_envs=envs, seed=0, episodes=queue, settings=settings)
        tasks = [recorded_task(root, k, tick, p, max_ticks=runner.max_ticks + 1, cache=cache,
                               terminate_on_success=False, index=j)
                 for j, ((k, tick, _, _), p) in enumerate(zip(starts, problems, strict=True))]
        runner.env = VecSimEnv(tasks, envs, episodes=queue, seed=0, control_hz=settings.control_hz)
        runner.problems = problems
        writer = DatasetWriter.create(out / "dataset", fps=layout.fps, features=layout.features(),
                                      robot_type=layout.robot_type)
        pending: dict[int, EpisodeResult] = {}
        nxt = 0

        def on_episode(result: EpisodeResult) -> None:
            nonlocal nxt, written
            pending[result.episode] = result  # the queue index (recorded_start's index)
            while nxt in pending:
                r = pending.pop(nxt)
                k, tick, _, policy = starts[nxt]
                ctx_source = {"source": str(root), "episode": k, "tick": tick, "policy": policy}
                if r.success:
                    r.extra["randomization"] = row_extra(reader.episode(k), "randomization")
                    r.extra["relabel"] = ctx_source
                    writer.add_episode(r.columns, task=r.task, extra=r.extra)
                    written += 1
                else:
                    expert_failed.append({**ctx_source, "failure": r.extra["failure"]})
                if progress:
                    progress(k, r.success)
                nxt += 1

        try:
            runner.run(on_episode)
        except BaseException:
            writer.__exit__(RuntimeError, None, None)
            raise
        if written:
            writer.finalize()
            write_meta(out / "dataset", unique, layout, {"source": str(root), "settings": settings.__dict__},
                       stage="relabel")
        else:  # the expert failed from every start: no dataset, as when there is no start at all
            writer.discard()
    summary = {"source": str(root), "failed": failed, "unreachable": unreachable,
               "relabeled": written, "expert_failed": expert_failed,
               "starts": [{"episode": k, "tick": t} for k, t, _, _ in starts]}
    write_json_atomic(out / "summary.json", summary)
    return summary

