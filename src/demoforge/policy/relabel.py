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

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from demoforge.dataset import DatasetWriter, open_dataset
from demoforge.dataset.keys import row_extra
from demoforge.dataset.layout import DEMOFORGE_META_DIR, write_json_atomic
from demoforge.execute.record import run_layout
from demoforge.execute.expert_episode import EpisodeResult, ExpertSettings
from demoforge.execute.expert_loop import ExpertLoop
from demoforge.execute.vecenv import VecSimEnv
from demoforge.policy.evaluate import recorded_start, recorded_task
from demoforge.policy.protocol import PolicyError
from demoforge.policy.rollout import write_meta
from demoforge.policy.stage import DATASET, restart_killed_run
from demoforge.raw import schema
from demoforge.replay import recorded_problem
from demoforge.stage import (
    LocalExecutor, MergeAtEnd, Progress, ProgressEvent, chunks, merge_shards, publish_dataset, run_stage,
)
from demoforge.tasks import make_planner


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


def failed_episodes(root: Path) -> list[int]:
    """The failed episodes of a roll-out (or execute) dataset, in order."""
    reader = open_dataset(root)
    columns = set(reader.episodes_table.column_names)
    if not columns & {"demoforge/success", "demoforge/outcome"} or schema.SIM_STATE not in reader.info.features:
        raise PolicyError(f"{root}: not a raw demoforge roll-out or execute dataset (it needs the {schema.SIM_STATE} "
                          "feature and each episode's outcome); pass OUT/dataset of `demoforge rollout`")
    failed = []
    for row in reader.iter_episodes():
        ok = row_extra(row, "success")
        if ok is None:
            ok = row_extra(row, "outcome") == "success"
        if not ok:
            failed.append(int(row["episode_index"]))
    return failed


def relabel_item(root: Path, episodes: list[int], dataset: Path, *, envs: int, settings: ExpertSettings,
                 progress: Progress | None = None) -> dict:
    """Relabel the failed `episodes` of `root` into the new dataset `dataset` (none when the expert
    succeeded from none of their starts); returns {unreachable, starts, expert_failed, relabeled}.
    `progress` takes a "relabel" episode event per start the expert ran from, in order."""
    reader = open_dataset(root)
    cache: dict = {}
    unreachable, starts = [], []
    for k in episodes:
        tick = failure_tick(root, k, plan_budget_s=settings.plan_budget_s, cache=cache)
        if tick is None:
            unreachable.append(k)
        else:
            row = reader.episode(k)
            starts.append((k, tick, row_extra(row, "problem"), row_extra(row, "policy")))
    expert_failed: list[dict] = []
    written = 0
    if starts:
        problems = [recorded_problem(root, name, cache) for _, _, name, _ in starts]
        unique = list({p.name: p for p in problems}.values())
        layout = run_layout(unique, fps=reader.info.fps)
        queue = [(j, 0) for j in range(len(starts))]
        loop = ExpertLoop(unique, layout, num_envs=envs, seed=0, episodes=queue, settings=settings)
        tasks = [recorded_task(root, k, tick, p, max_ticks=loop.max_ticks + 1, cache=cache,
                               terminate_on_success=False, index=j)
                 for j, ((k, tick, _, _), p) in enumerate(zip(starts, problems, strict=True))]
        loop.env = VecSimEnv(tasks, envs, episodes=queue, seed=0, control_hz=settings.control_hz)
        loop.problems = problems
        pending: dict[int, EpisodeResult] = {}
        nxt = 0
        with DatasetWriter.create(dataset, fps=layout.fps, features=layout.features(),
                                  robot_type=layout.robot_type) as writer:

            def on_episode(result: EpisodeResult) -> None:
                nonlocal nxt, written
                pending[result.episode] = result  # the queue index (recorded_start's index)
                while nxt in pending:
                    r = pending.pop(nxt)
                    k, tick, name, policy = starts[nxt]
                    source = {"source": str(root), "episode": k, "tick": tick, "policy": policy}
                    if r.success:
                        r.extra["randomization"] = row_extra(reader.episode(k), "randomization")
                        r.extra["relabel"] = source
                        writer.add_episode(r.columns, task=r.task, extra=r.extra)
                        written += 1
                    else:
                        expert_failed.append({**source, "failure": r.extra["failure"]})
                    nxt += 1
                    if progress is not None:
                        progress(ProgressEvent("relabel", "episode", name, nxt, len(starts), success=bool(r.success)))

            loop.run(on_episode)
            if not written:  # the expert failed from every start: no dataset
                writer.discard()
        if written:
            write_meta(dataset, unique, layout, {"source": str(root), "settings": settings.__dict__}, stage="relabel")
    return {"unreachable": unreachable, "starts": [{"episode": k, "tick": t} for k, t, _, _ in starts],
            "expert_failed": expert_failed, "relabeled": written}


SUMMARY_COPY = f"{DEMOFORGE_META_DIR}/relabel_summary.json"  # in OUT/dataset: the run's summary, kept with it


@dataclass
class RelabelStage:
    """Relabeling as a stage (`demoforge.stage`): work items are contiguous runs of the failed
    episodes (`chunks`: not depending on the worker count; one empty item when none failed, so
    every run goes through `run_stage`); each item finds its failure states and runs the expert
    from them into its own shard; the shards with episodes are merged in order into OUT/dataset,
    and OUT/summary.json is written from the items' results. OUT is the stage's run folder
    (`dataset`): `run_stage` refuses one over its source, a file, or one holding anything but this
    run's work folder (or a run killed before the stage, `resumable`: started over). A rerun of a
    finished run returns its summary (`finished`)."""

    root: Path
    failed: tuple[int, ...]
    envs: int
    settings: ExpertSettings
    name: ClassVar[str] = "relabel"
    error: ClassVar[type] = PolicyError
    dataset: ClassVar[str] = DATASET  # OUT/dataset, beside OUT/summary.json

    def parts(self) -> list[range]:
        return chunks(len(self.failed), least=2) or [range(0)]

    def inputs(self) -> tuple[Path, ...]:
        return (self.root,)

    def resumable(self, out: Path) -> bool:
        return restart_killed_run(out)

    def fingerprint(self) -> dict:
        return {"stage": "relabel", "source": str(self.root.resolve()), "failed": list(self.failed),
                "envs": self.envs, "settings": {k: v for k, v in self.settings.__dict__.items()}}

    def items(self) -> list[str]:
        return [f"failed-{r.start}-{r.stop - 1}" if r else "none-failed" for r in self.parts()]

    def total(self) -> int:
        return len(self.failed)

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        part = self.parts()[k]
        dataset = shard / "data"
        shutil.rmtree(dataset, ignore_errors=True)  # an item a kill interrupted starts over
        return relabel_item(self.root, list(self.failed[part.start:part.stop]), dataset, envs=self.envs,
                            settings=self.settings, progress=progress)

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: self._merge(shards, results, out))

    def finished(self, out: Path) -> dict:
        """This run's summary: OUT/dataset is this run, published; the summary is written again
        from the copy in the dataset's meta when a kill came between the dataset and it."""
        if not (out / "summary.json").is_file():
            write_json_atomic(out / "summary.json", json.loads((out / DATASET / SUMMARY_COPY).read_text()))
        return json.loads((out / "summary.json").read_text(encoding="utf-8"))

    def _merge(self, shards: list[Path], results: list[dict], out: Path) -> dict:
        summary = {"source": str(self.root), "failed": list(self.failed), "unreachable": [], "relabeled": 0,
                   "expert_failed": [], "starts": []}
        for r in results:
            for key in ("unreachable", "starts", "expert_failed", "relabeled"):
                summary[key] += r[key]
        kept = [s for s, r in zip(shards, results, strict=True) if r["relabeled"]]
        if kept:
            merged = shards[0].parent.parent / "merged"
            merge_shards(kept, merged)
            meta = kept[0] / "data" / DEMOFORGE_META_DIR  # the run's raw contract, the same in every shard
            for path in meta.rglob("*"):
                target = merged / DEMOFORGE_META_DIR / path.relative_to(meta)
                if path.is_file() and not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)
            write_json_atomic(merged / SUMMARY_COPY, summary)  # what `finished` rewrites OUT's summary from
            publish_dataset(merged, out / DATASET, self.name, self.fingerprint())
        write_json_atomic(out / "summary.json", summary)
        return summary


def relabel(rollouts: str | Path, out: str | Path, *, envs: int = 1, settings: ExpertSettings = ExpertSettings(),
            progress: Progress | None = None, workers: int = 1) -> dict:
    """Expert demonstrations from the failure states of the failed episodes of `rollouts` (see the
    module) as a stage on `workers` processes: the bytes do not depend on it, a killed run resumes.
    OUT/dataset (absent when nothing was relabeled), OUT/summary.json. `progress`: ProgressEvents."""
    root, out = Path(rollouts), Path(out)
    if envs < 1 or not (isinstance(workers, int) and workers >= 1):
        raise PolicyError(f"envs {envs} and workers {workers} must be >= 1")
    stage = RelabelStage(root, tuple(failed_episodes(root)), envs, settings)
    with LocalExecutor(min(workers, len(stage.parts()))) as local:
        return run_stage(stage, out, executor=local, progress=progress)  # it guards OUT first
