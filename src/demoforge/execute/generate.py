"""`generate`: many episodes of many problems, recorded as success and failure datasets.

    summary = generate(["tasks/stack_three-all-0000.pddl", "envpkg/"], "out/run",
                       episodes_per_problem=20, envs=8, workers="auto", seed=0)

Layout of OUT:

    OUT/run.json              the run's inputs (a resumed run must match them)
    OUT/.shards/<k>-<problem>/{success,failure}/   one shard per work item (a problem)
    OUT/.shards/<k>-<problem>/done.json            the item's tally, once both shards are final
    OUT/success, OUT/failure  the merged splits (a split without episodes is not written)
    OUT/summary.json          per-problem yield and failure causes by kind

Determinism: an episode depends only on (seed, problem, episode index) and each work
item writes its episodes in index order to its own shards, whichever worker and env slot
ran them; the splits are the shards merged in problem order. A one-worker run takes the
same shard-and-merge path, so the bytes do not depend on `workers` or `envs`.

Crash safety: every finished episode is durable in its shard (DatasetWriter staging). A
rerun with the same arguments skips finished items and resumes the others at their next
episode (episodes are written in index order, so the shards' episode counts say where).
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import mujoco

import demoforge
from demoforge.dataset import merge_datasets
from demoforge.dataset.layout import DEMOFORGE_META_DIR, write_json_atomic
from demoforge.execute import schema
from demoforge.execute.problems import ExecuteError, Problem, load_problems
from demoforge.execute.record import RunLayout, run_layout, scene_inputs
from demoforge.execute.runner import EpisodeResult, ExpertRunner, RunnerSettings
from demoforge.execute.shards import InlineVideo, SPLITS, ProblemTally, ShardWriters, tally_of
from demoforge.randomize import RandomizationSpec, apply_to_scene_params, spec_to_dict

RUN_SCHEMA = "demoforge.generate/1"
FAILURE_KINDS = ("planning", "ik", "collision", "physics", "timeout")


@dataclass(frozen=True)
class GenerateSummary:
    """What a run produced."""

    out: Path  # OUT
    problems: dict[str, ProblemTally]  # by problem, in run order
    roots: dict[str, Path | None]  # split -> merged root (None: no episodes of that split)

    @property
    def episodes(self) -> int:
        return sum(t.success + t.failure for t in self.problems.values())

    @property
    def successes(self) -> int:
        return sum(t.success for t in self.problems.values())

    def failure_kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.problems.values():
            for k, n in t.kinds.items():
                out[k] = out.get(k, 0) + n
        return dict(sorted(out.items()))

    def to_json(self) -> dict:
        return {"episodes": self.episodes, "successes": self.successes,
                "problems": {n: asdict(t) for n, t in self.problems.items()}, "failure_kinds": self.failure_kinds(),
                "roots": {k: None if v is None else k for k, v in self.roots.items()}}


# Progress events: ("episode", problem, success, kind) from any worker; ("item", problem) when its shards are final.
Progress = Callable[[tuple], None]


def resolve_workers(workers: int | str, n_items: int) -> int:
    """`auto`: one per available core, at most one per work item."""
    if workers == "auto":
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(1, min(cores, n_items))
    try:
        n = int(workers)
    except (TypeError, ValueError):
        raise ExecuteError(f"workers: {workers!r} must be a positive integer or 'auto'") from None
    if n < 1:
        raise ExecuteError(f"workers: {n} must be >= 1 (or 'auto')")
    return n


def _item_dir(out: Path, k: int, name: str) -> Path:
    return out / ".shards" / f"{k:04d}-{name}"


def _run_record(inputs: list[str], problems: list[Problem], episodes: int, seed: int,
                settings: RunnerSettings, randomization: RandomizationSpec | None,
                videos: InlineVideo | None = None) -> dict:
    record = {"schema": RUN_SCHEMA, "inputs": inputs, "problems": [p.name for p in problems],
              "episodes_per_problem": episodes, "seed": seed, "settings": asdict(settings),
              "randomization": None if randomization is None else spec_to_dict(randomization)}
    if videos is not None:
        record["videos"] = asdict(videos)
    return record


def run_problems(inputs: list[str], *, domain: str, randomization: RandomizationSpec | None) -> list[Problem]:
    """The run's problems; the spec's scene-range overrides replace PDDL problems' sidecar
    ranges (an environment package's scenes are baked and stay as they are)."""
    problems = load_problems(inputs, domain=domain)
    if randomization is None:
        return problems
    return [p if p.package is not None else dataclasses.replace(p, params=apply_to_scene_params(randomization, p.params))
            for p in problems]


def run_items(inputs: list[str], out: str, items: list[int], episodes: int, seed: int, envs: int,
              settings: RunnerSettings, progress: Progress | None = None, domain: str = "blocks",
              after_skill=None, randomization: RandomizationSpec | None = None,
              videos: InlineVideo | None = None) -> dict[str, dict]:
    """Run work items `items` (problem indices) of a run in this process; returns their tallies."""
    out_path = Path(out)
    problems = run_problems(inputs, domain=domain, randomization=randomization)
    layout = run_layout(problems, fps=round(settings.control_hz))
    mine = [problems[k] for k in items]
    writers: dict[int, ShardWriters] = {}
    tallies: dict[int, ProblemTally] = {}
    queue: list[tuple[int, int]] = []
    for local, k in enumerate(items):
        folder = _item_dir(out_path, k, problems[k].name)
        done_file = folder / "done.json"
        if done_file.is_file():
            tallies[local] = ProblemTally(**json.loads(done_file.read_text()))
            continue
        folder.mkdir(parents=True, exist_ok=True)
        writers[local] = ShardWriters(folder, layout, videos=videos, problems={p.name: p for p in problems})
        tallies[local] = tally_of(writers[local])
        start = writers[local].next_episode
        queue += [(local, e) for e in range(start, episodes)]
        if start >= episodes:
            writers[local].finalize(tallies[local])
    pending: dict[int, dict[int, EpisodeResult]] = {k: {} for k in writers}
    remaining = {k: episodes - w.next_episode for k, w in writers.items()}

    def on_episode(result: EpisodeResult) -> None:
        local = next(i for i, p in enumerate(mine) if p.name == result.problem)
        pending[local][result.episode] = result
        w = writers[local]
        while w.next_episode in pending[local]:
            r = pending[local].pop(w.next_episode)
            w.add(r)
            tallies[local].add(r.success, r.failure_kind)
            remaining[local] -= 1
            if progress:
                progress(("episode", r.problem, r.success, r.failure_kind))
        if remaining[local] == 0:
            w.finalize(tallies[local])
            if progress:
                progress(("item", result.problem))

    try:
        if queue:
            ExpertRunner(mine, layout, num_envs=envs, seed=seed, episodes=queue, settings=settings,
                         after_skill=after_skill, randomization=randomization).run(on_episode)
    except BaseException:
        for k, w in writers.items():
            if remaining[k] > 0:
                w.close()
        raise
    return {mine[k].name: asdict(t) for k, t in tallies.items()}


def _worker(args: tuple) -> dict[str, dict]:
    inputs, out, items, episodes, seed, envs, settings, queue, domain, randomization, videos = args
    return run_items(inputs, out, items, episodes, seed, envs, settings,
                     None if queue is None else queue.put, domain, None, randomization, videos)


def generate(
    inputs: list[str | Path], out: str | Path, *, episodes_per_problem: int, envs: int = 1,
    workers: int | str = 1, seed: int = 0, settings: RunnerSettings = RunnerSettings(),
    domain: str = "blocks", progress: Progress | None = None, after_skill=None,
    randomization: RandomizationSpec | None = None, record_videos: InlineVideo | None = None,
) -> GenerateSummary:
    """Generate `episodes_per_problem` episodes of every problem in `inputs` (PDDL files with
    sidecars, or environment package folders) into OUT/success and OUT/failure, with
    physics domain randomization drawn per episode when `randomization` is given, and
    camera videos rendered inline when `record_videos` is given."""
    problems_msg = []
    if episodes_per_problem < 1:
        problems_msg.append(f"episodes_per_problem: {episodes_per_problem} must be >= 1")
    if envs < 1:
        problems_msg.append(f"envs: {envs} must be >= 1")
    if problems_msg:
        raise ExecuteError("cannot generate:\n  " + "\n  ".join(problems_msg))
    inputs = [str(p) for p in inputs]
    out = Path(out)
    problems = run_problems(inputs, domain=domain, randomization=randomization)
    layout = run_layout(problems, fps=round(settings.control_hz))
    n_workers = resolve_workers(workers, len(problems))
    record = _run_record(inputs, problems, episodes_per_problem, seed, settings, randomization, record_videos)
    run_file = out / "run.json"
    if run_file.is_file():
        old = json.loads(run_file.read_text())
        if old != record:
            raise ExecuteError(f"{out}: holds a run with other inputs ({run_file}); use a new --out, or rerun with "
                               "the same problems, episodes, seed and settings to resume it")
        for split in SPLITS:
            if (out / split).exists():
                shutil.rmtree(out / split)  # merged outputs are rebuilt from the shards
    elif out.exists() and any(out.iterdir()):
        raise ExecuteError(f"{out}: exists and is not a generate run folder; choose a new --out")
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(run_file, record)

    chunks = [list(range(w, len(problems), n_workers)) for w in range(n_workers)]
    chunks = [c for c in chunks if c]
    tallies: dict[str, dict] = {}
    if len(chunks) == 1:
        tallies.update(run_items(inputs, str(out), chunks[0], episodes_per_problem, seed, envs, settings,
                                 progress, domain, after_skill, randomization, record_videos))
    else:
        if after_skill is not None:
            raise ExecuteError("after_skill hooks run only with workers=1")
        ctx = multiprocessing.get_context("spawn")
        with ctx.Manager() as manager:
            queue = manager.Queue() if progress else None
            with ProcessPoolExecutor(len(chunks), mp_context=ctx) as pool:
                futures = [pool.submit(_worker, (inputs, str(out), c, episodes_per_problem, seed, envs, settings,
                                                 queue, domain, randomization, record_videos)) for c in chunks]
                while not all(f.done() for f in futures):
                    _drain(queue, progress, timeout=0.2)
                _drain(queue, progress, timeout=0.0)
                for f in futures:
                    tallies.update(f.result())
    return _merge(out, problems, layout, tallies, record)


def _drain(queue, progress: Progress | None, *, timeout: float) -> None:
    if queue is None:
        if timeout:
            import time
            time.sleep(timeout)
        return
    import queue as queue_mod
    try:
        event = queue.get(timeout=timeout) if timeout else queue.get_nowait()
        while True:
            progress(event)
            event = queue.get_nowait()
    except queue_mod.Empty:
        return


def _merge(out: Path, problems: list[Problem], layout: RunLayout, tallies: dict[str, dict],
           record: dict) -> GenerateSummary:
    roots: dict[str, Path | None] = {}
    for split in SPLITS:
        shards = [_item_dir(out, k, p.name) / split for k, p in enumerate(problems)]
        shards = [s for s in shards if (s / "meta" / "info.json").is_file()]
        if not shards:
            roots[split] = None
            continue
        root = out / split
        merge_datasets(shards, root)
        _write_meta(root, out, problems, layout, record, shards)
        roots[split] = root
    summary = GenerateSummary(out, {p.name: ProblemTally(**tallies[p.name]) for p in problems}, roots)
    write_json_atomic(out / "summary.json", summary.to_json())
    return summary


def _write_meta(root: Path, out: Path, problems: list[Problem], layout: RunLayout, record: dict,
                shards: list[Path]) -> None:
    meta = root / DEMOFORGE_META_DIR
    merge_file = meta / "merge.json"
    if merge_file.is_file():  # shard roots relative to OUT, so the bytes do not depend on where OUT is
        merged = json.loads(merge_file.read_text())
        for src, shard in zip(merged["sources"], shards, strict=True):
            src["root"] = shard.relative_to(out).as_posix()
        write_json_atomic(merge_file, merged)
    write_json_atomic(meta / schema.CONTROLLER_META, json.loads(layout.law.to_json()))
    write_json_atomic(meta / schema.VOCAB_META, layout.vocab())
    write_json_atomic(meta / "provenance.json", {
        "stage": "execute", "demoforge_version": demoforge.__version__, "mujoco_version": mujoco.__version__,
        "run": record, "fps": layout.fps, "sim_state_width": layout.n_state,
    })
    (meta / "scenes").mkdir(parents=True, exist_ok=True)
    for p in problems:
        write_json_atomic(meta / "scenes" / f"{p.name}.json", scene_inputs(p))
