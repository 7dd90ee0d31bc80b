"""`generate`: many episodes of many problems, recorded as success and failure datasets.

    summary = generate(["tasks/stack_three-all-0000.pddl", "envpkg/"], "out/run",
                       episodes_per_problem=20, envs=8, workers="auto", seed=0)

Layout of OUT:

    OUT/run.json              the run's inputs and robot card (a resumed run must match them)
    OUT/.shards/<k>-<problem>/{success,failure}/   one shard per work item (a problem)
    OUT/.shards/<k>-<problem>/done.json            the item's tally, once both shards are final
    OUT/.merging/<split>      a split being merged while items finish (moved when complete)
    OUT/success, OUT/failure  the merged splits (a split without episodes is not written)
    OUT/summary.json          per-problem yield and failure causes by kind

Scheduling (`demoforge.stage`: generate is a stage run by `run_stage`): with `workers` > 1 this process and `workers - 1` spawned workers each take
the next unfinished item (in problem order) whenever they are free; this process starts
on the first item at once while the workers import, and the workers receive the run's
problems and layout from it instead of rebuilding them. The merge runs in this process
alongside, in problem order: between its own items it merges the finished items only once
more than two per slot wait (items come first), and once no item is left to take it merges
while the workers finish theirs, so only the merge's finish (data files, statistics, checks,
on one thread per slot) is left once the last item is done.

Determinism: an episode depends only on (seed, problem, episode index) and each work
item writes its episodes in index order to its own shards, whichever slot and env ran
them; the splits are the shards merged in problem order. A one-worker run takes the
same shard-and-merge path, so the bytes do not depend on `workers` or `envs`.

Crash safety: every finished episode is durable in its shard (DatasetWriter staging). A
rerun with the same arguments skips finished items and resumes the others at their next
episode (episodes are written in index order, so the shards' episode counts say where).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar


from demoforge.dataset import DatasetMerger
from demoforge.dataset.layout import DEMOFORGE_META_DIR, write_json_atomic
from demoforge.envs.materials import MaterialError, material_ref
from demoforge.envs.problem import problem_robot
from demoforge.execute.layout import RunLayout, write_raw_meta
from demoforge.execute.materials import apply_materials, check_materials, print_warning
from demoforge.execute.pool import refuse_in_worker_start_up
from demoforge.execute.problems import ExecuteError, Problem, check_goals, check_skills, load_problems
from demoforge.execute.record import run_layout
from demoforge.execute.runner import EpisodeResult, ExpertRunner, RunnerSettings
from demoforge.execute.shards import SPLITS, InlineVideo, ProblemTally, ShardWriters, tally_of
from demoforge.guard import refuse_overlap
from demoforge.randomize import RandomizationSpec, apply_to_scene_params, spec_to_dict
from demoforge.randomize.robot_start import RobotStartParams, params_to_dict
from demoforge.sim import Material, RobotCard, card_to_dict
from demoforge.stage import LocalExecutor, Progress, ProgressEvent, run_stage, stamp_dataset
from demoforge.tasks.scene import MaterialRef, material_ref_to_json, sidecar_path
from demoforge.sim.controllers import MODES

RUN_SCHEMA = "demoforge.generate/2"  # 2: inputs recorded as resolved paths with content hashes
MERGING_DIR = ".merging"  # OUT/.merging/<split>: a split being merged, moved to OUT/<split> when complete
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


def input_identity(path: str | Path) -> dict:
    """A run input as recorded in run.json: its resolved path and the hash of its content (a PDDL
    file with its sidecar, or a package's manifest), so any spelling of the same input is the
    same run and the recorded bytes do not depend on the spelling."""
    path = Path(path)
    files = ([path / "manifest.json"] if path.is_dir()
             else [path, sidecar_path(path)])
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.read_bytes() if f.is_file() else b"")
    return {"path": str(path.resolve()), "sha256": digest.hexdigest()}


def _domain_identity(domain: str | Path) -> str | dict:
    """A library domain's name, or a domain file's identity."""
    path = Path(domain)
    if not path.is_file():
        return str(domain)
    return {"path": str(path.resolve()), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def _run_record(inputs: list[str], problems: list[Problem], episodes: int, seed: int,
                settings: RunnerSettings, randomization: RandomizationSpec | None,
                videos: InlineVideo | None = None, domain: str | Path = "blocks",
                control_law: str | None = None, materials: Mapping[str, MaterialRef] | None = None) -> dict:
    card = problem_robot(problems[0])
    record = {"schema": RUN_SCHEMA, "inputs": [input_identity(p) for p in inputs],
              "domain": _domain_identity(domain), "robot": card_to_dict(card),
              "problems": [p.name for p in problems],
              "episodes_per_problem": episodes, "seed": seed, "settings": asdict(settings),
              "randomization": None if randomization is None else spec_to_dict(randomization)}
    if videos is not None:
        record["videos"] = asdict(videos)
    if control_law is not None and control_law != card.controller.mode:  # the card's own law is not recorded twice
        record["control_law"] = control_law
    if materials:  # absent without --material, so such runs keep their run.json
        record["materials"] = {prop: material_ref_to_json(m) for prop, m in sorted(materials.items())}
    starts = [p.robot_start for p in problems if p.robot_start is not None]
    if starts:  # absent when every episode starts at home, so such runs keep their run.json
        record["robot_start"] = params_to_dict(starts[0])
    return record


def open_run_folder(out: Path, record: dict) -> None:
    """Make OUT the folder of the run `record` describes: a new folder, or that same run's
    folder to resume (its merged splits are rebuilt from the shards); anything else is refused."""
    run_file = out / "run.json"
    if out.exists() and not out.is_dir():
        raise ExecuteError(f"--out {out}: is a file, not a folder; choose a folder path")
    if run_file.is_file():
        try:
            old = json.loads(run_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            old = None
        if old != record:
            keys = sorted(k for k in set(record) | set(old if isinstance(old, dict) else {})
                          if not isinstance(old, dict) or old.get(k) != record.get(k))
            raise ExecuteError(f"{out}: holds a run with other inputs ({run_file}; differing: {', '.join(keys)}); use "
                               "a new --out, or rerun with the same problems, episodes, seed, robot and settings to "
                               "resume it")
        for split in (*SPLITS, MERGING_DIR):
            if (out / split).exists():
                shutil.rmtree(out / split)
    elif out.exists() and any(out.iterdir()):
        raise ExecuteError(f"{out}: exists and is not a run folder of this command; choose a new --out")
    new = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        write_json_atomic(run_file, record)
    except BaseException:
        if new:  # nothing of the run is in it yet (a full disk): leave no folder that blocks the rerun
            shutil.rmtree(out, ignore_errors=True)
        raise


def run_problems(inputs: list[str], *, domain: str, randomization: RandomizationSpec | None,
                 robot: RobotCard | None = None, robot_start: RobotStartParams | None = None,
                 materials: Mapping[str, MaterialRef] | None = None) -> list[Problem]:
    """The run's problems, with the arm of `robot` starting as `robot_start` draws (see
    `load_problems`); the spec's scene-range overrides replace PDDL problems' sidecar ranges and
    `materials` their sidecar materials (`envs.materials.with_materials`; an environment package's
    scenes are baked and stay as they are)."""
    problems = load_problems(inputs, domain=domain, robot=robot, robot_start=robot_start)
    if materials:
        problems = apply_materials(problems, materials)
    if randomization is None:
        return problems
    return [p if p.package is not None else dataclasses.replace(p, params=apply_to_scene_params(randomization, p.params))
            for p in problems]


@dataclass(frozen=True)
class RunSpec:
    """What every slot needs to run work items: the run's arguments with its problems and
    layout, built once by the parent and pickled to workers (cheaper than rebuilding them)."""

    out: Path  # OUT
    problems: tuple[Problem, ...]  # the run's problems; work item k is problems[k]
    layout: RunLayout
    episodes: int  # episodes per problem
    seed: int
    envs: int  # env slots of each item's runner
    settings: RunnerSettings
    randomization: RandomizationSpec | None = None
    videos: InlineVideo | None = None
    runner: type[ExpertRunner] = ExpertRunner  # the expert each item runs (play data's chains goals)
    runner_options: dict = field(default_factory=dict)  # its keyword arguments beyond ExpertRunner's
    per_item: int = 1  # problems per work item (`problem_groups`)

    def problem_shard(self, p: int) -> Path:
        """Problem `p`'s shard folder: success/, failure/ and, once they are final, done.json (its tally)."""
        return _item_dir(self.out, p, self.problems[p].name)

    def groups(self) -> list[range]:
        """Work item k's problems: contiguous runs of `per_item` (the last may be shorter)."""
        n = len(self.problems)
        return [range(a, min(a + self.per_item, n)) for a in range(0, n, self.per_item)]


def problems_per_item(n_problems: int, per_process: int, slots: int) -> int:
    """Problems per work item: `per_process`, but no more than share the problems evenly over the
    executor's `slots` (8 problems per item on 2 slots would leave one slot idle for 10 problems).
    Which problems share an item never changes a byte (an episode's randomness is seeded by the
    run seed, its problem and its index), only how well the items fill the slots."""
    if per_process < 1:
        raise ExecuteError(f"problems_per_process: {per_process} must be >= 1")
    return max(1, min(per_process, -(-n_problems // max(1, slots))))


def run_item(run: RunSpec, k: int, progress: Progress | None = None, after_skill=None) -> ProblemTally:
    """Run work item `k` (the problems `run.groups()[k]`, their episodes sharing the runner's envs)
    in this process, continuing their shards if interrupted; returns the item's tally. Each
    problem's shards are final (its done.json written) as soon as its last episode is in, so a
    kill loses none of its finished problems."""
    group = list(run.groups()[k])
    writers: dict[int, ShardWriters] = {}
    tallies: dict[int, ProblemTally] = {}
    for p in group:
        folder = _item_dir(run.out, p, run.problems[p].name)
        if (folder / "done.json").is_file():
            tallies[p] = ProblemTally(**json.loads((folder / "done.json").read_text()))
            continue
        folder.mkdir(parents=True, exist_ok=True)
        writers[p] = ShardWriters(folder, run.layout, videos=run.videos, problems={q.name: q for q in run.problems})
        tallies[p] = tally_of(writers[p])
    index = {run.problems[p].name: p for p in writers}
    pending: dict[tuple[int, int], EpisodeResult] = {}

    def on_episode(result: EpisodeResult) -> None:
        p = index[result.problem]
        w = writers[p]
        pending[p, result.episode] = result
        while (p, w.next_episode) in pending:
            r = pending.pop((p, w.next_episode))
            w.add(r)
            tallies[p].add(r.success, r.failure_kind)
            if progress:
                progress(ProgressEvent("generate", "episode", r.problem, success=r.success, failure=r.failure_kind))
        if w.next_episode == run.episodes:
            w.finalize(tallies[p])

    running = [p for p in writers if writers[p].next_episode < run.episodes]
    queue = [(j, e) for j, p in enumerate(running) for e in range(writers[p].next_episode, run.episodes)]
    try:
        if queue:
            run.runner([run.problems[p] for p in running], run.layout, num_envs=run.envs, seed=run.seed,
                       episodes=queue, settings=run.settings, after_skill=after_skill,
                       randomization=run.randomization, **run.runner_options).run(on_episode)
        for p in writers:
            if not (writers[p].folder / "done.json").is_file():  # resumed with every episode already in
                writers[p].finalize(tallies[p])
    except BaseException:
        for w in writers.values():
            if not (w.folder / "done.json").is_file():
                w.close()
        raise
    total = ProblemTally()
    for p in group:
        t = tallies[p]
        total.success, total.failure = total.success + t.success, total.failure + t.failure
        for kind, n in t.kinds.items():
            total.kinds[kind] = total.kinds.get(kind, 0) + n
    return total


@dataclass(frozen=True)
class GenerateStage:
    """generate as a stage (`demoforge.stage`): one work item per problem, its shards under
    OUT/.shards/, merged in problem order into OUT/success and OUT/failure."""

    run: RunSpec
    record: dict  # run.json: the run's inputs and settings
    after_skill: Callable | None = None  # a hook of the expert (one slot only: it is not sent to workers)
    name: ClassVar[str] = "generate"
    error: ClassVar[type] = ExecuteError

    def fingerprint(self) -> dict:
        return self.record

    def items(self) -> list[str]:
        if self.run.per_item == 1:
            return [p.name for p in self.run.problems]
        return [f"problems-{g.start:04d}-{g.stop - 1:04d}" for g in self.run.groups()]

    def total(self) -> int:
        return len(self.run.problems) * self.run.episodes

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        if self.run.per_item == 1:  # the item's shard is its problem's (a group's holds only its done.json)
            assert shard == _item_dir(self.run.out, k, self.run.problems[k].name), shard
        return asdict(run_item(self.run, k, progress, self.after_skill))

    def merger(self, out: Path, threads: int) -> "ShardMerge":
        for split in (*SPLITS, MERGING_DIR):  # a resumed run's partial splits are rebuilt from the shards
            if (out / split).exists():
                shutil.rmtree(out / split)
        return ShardMerge(out, list(self.run.problems), self.run.layout, self.record,
                          threads=min(threads, len(self.run.problems)))


def generate(
    inputs: list[str | Path], out: str | Path, *, episodes_per_problem: int, envs: int = 1,
    workers: int | str = 1, seed: int = 0, settings: RunnerSettings = RunnerSettings(),
    domain: str = "blocks", progress: Progress | None = None, after_skill=None,
    randomization: RandomizationSpec | None = None, record_videos: InlineVideo | None = None,
    robot: RobotCard | None = None, control_law: str | None = None,
    robot_start: RobotStartParams | None = None, runner: type[ExpertRunner] = ExpertRunner,
    runner_options: dict | None = None, executor=None, problems_per_process: int = 8,
    materials: Mapping[str, MaterialRef | Material | dict] | None = None, warn: Callable[[str], None] | None = None,
    run_with: Callable = run_stage,
) -> GenerateSummary:
    """Generate `episodes_per_problem` episodes of every problem in `inputs` (PDDL files with
    sidecars, or environment package folders) into OUT/success and OUT/failure, with
    physics domain randomization drawn per episode when `randomization` is given, and
    camera videos rendered inline when `record_videos` is given. `robot`: the arm of PDDL
    problems' scenes (None: the built-in Panda; a package has its own, see `load_problems`);
    recorded in run.json, so a rerun with another robot is refused as another run. `control_law`:
    the mode the arm is commanded in (joint_position, or cartesian_delta: the expert's planned
    joint motion sent as TCP deltas through the differential-IK controller); None: the robot
    card's law. It is stamped in each split's meta/demoforge/controller.json. `robot_start`:
    the windows each PDDL episode's arm start is drawn from (None: home), recorded in run.json.
    `runner` (a module-level ExpertRunner subclass, so workers can import it) with
    `runner_options`: another expert, recorded in run.json (`demoforge.pipeline.play`).
    `executor`: where the items run (a `demoforge.stage` executor, e.g. `RayExecutor`); by
    default `workers` local slots. `problems_per_process`: how many problems a work item holds at
    most, their episodes sharing its `envs` (`problems_per_item`); the bytes never depend on it.
    `materials`: prop ("table", "blocks" or a block name) -> a preset name or a custom material
    (`CustomMaterial`, a `sim.Material` or its JSON dict) over the PDDL problems' sidecar materials, recorded in
    run.json; every pair of named materials is contact-linted first (`check_materials`), its
    warnings passed to `warn` (default: printed to stderr). `run_with`: what runs the stage, `run_stage`'s
    signature (the pipeline's pipelined schedule runs the render's items with it, `pipeline.pipelined`)."""
    refuse_in_worker_start_up("generate")
    problems_msg = []
    if episodes_per_problem < 1:
        problems_msg.append(f"episodes_per_problem: {episodes_per_problem} must be >= 1")
    if envs < 1:
        problems_msg.append(f"envs: {envs} must be >= 1")
    if not (isinstance(seed, int) and 0 <= seed < 2**63):
        problems_msg.append(f"seed: {seed!r} must be an integer in [0, 2^63)")
    if not (isinstance(problems_per_process, int) and problems_per_process >= 1):
        problems_msg.append(f"problems_per_process: {problems_per_process!r} must be an integer >= 1")
    if control_law is not None and control_law not in MODES:
        problems_msg.append(f"control_law: {control_law!r} is not one of {list(MODES)} (or None: the robot card's)")
    materials = dict(materials or {})
    for prop, value in materials.items():
        try:
            materials[prop] = material_ref(value, where=f"materials.{prop}")
        except MaterialError as exc:
            problems_msg.append(str(exc))
    if problems_msg:
        raise ExecuteError("cannot generate:\n  " + "\n  ".join(problems_msg))
    if executor is None:
        # at most one per problem: a PDDL file is one, an environment package folder may hold many
        most = len(inputs) if all(Path(p).is_file() for p in inputs) else sys.maxsize
        requested = min(resolve_workers(workers, most), max(1, most))
        if requested > 1 and after_skill is not None:
            raise ExecuteError("after_skill hooks run only with workers=1")
        # the workers start now and import while this process loads the problems
        local = executor = LocalExecutor(requested)
    else:
        if after_skill is not None:
            raise ExecuteError("after_skill hooks run only on the local executor with workers=1")
        local = None
    try:
        inputs = [str(p) for p in inputs]
        out = Path(out)
        problems = run_problems(inputs, domain=domain, randomization=randomization, robot=robot,
                                robot_start=robot_start, materials=materials)
        check_materials(problems, warn=warn or print_warning)
        layout = run_layout(problems, fps=round(settings.control_hz), control_law=control_law)
        refuse_overlap(out, [*inputs, *([domain] if Path(domain).is_file() else [])], error=ExecuteError)
        check_skills(problems)
        check_goals(problems, time_budget_s=settings.plan_budget_s)
        if record_videos is not None:
            check_inline_video(record_videos, problems)
        record = _run_record(inputs, problems, episodes_per_problem, seed, settings, randomization, record_videos,
                             domain, control_law, materials)
        if runner is not ExpertRunner:
            record["runner"] = {"class": f"{runner.__module__}.{runner.__qualname__}", "options": runner_options or {}}
        summary = finished_run(out, record, problems)
        if summary is not None:
            return summary
        if out.exists() and not out.is_dir():
            raise ExecuteError(f"--out {out}: is a file, not a folder; choose a folder path")
        per_item = problems_per_item(len(problems), problems_per_process, executor.slots)
        run = RunSpec(out, tuple(problems), layout, episodes_per_problem, seed, envs, settings, randomization,
                      record_videos, runner, dict(runner_options or {}), per_item)
        return run_with(GenerateStage(run, record, after_skill), out, work=out, executor=executor,
                        progress=progress)
    finally:
        if local is not None:
            local.close()


def check_inline_video(videos: InlineVideo, problems: list[Problem]) -> None:
    """Raise before anything is written if `--record-videos` names a camera the scenes lack or
    `--look` is no look."""
    from demoforge.execute.problems import start_layout_scene
    from demoforge.render import load_look

    load_look(videos.look)
    if not videos.cameras or len(set(videos.cameras)) != len(videos.cameras):
        raise ExecuteError(f"--record-videos {','.join(videos.cameras)!r}: give distinct camera names, e.g. front,wrist")
    scene, _ = start_layout_scene(problems[0])
    missing = [c for c in videos.cameras if c not in scene.cameras]
    if missing:
        raise ExecuteError(f"--record-videos: cameras {missing} are not in the scene of {problems[0].name}; cameras: "
                           f"{', '.join(sorted(scene.cameras))}")


def finished_run(out: Path, record: dict, problems: list[Problem]) -> GenerateSummary | None:
    """The summary of OUT when it holds this same run, finished (a rerun is a no-op that removes
    any shards a kill after the merge left behind); None otherwise."""
    try:
        same = json.loads((out / "run.json").read_text(encoding="utf-8")) == record
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not same:
        return None
    shutil.rmtree(out / ".shards", ignore_errors=True)
    tallies = {name: ProblemTally(**t) for name, t in summary["problems"].items()}
    roots = {split: out / split if (out / split / "meta" / "info.json").is_file() else None for split in SPLITS}
    return GenerateSummary(out, tallies, roots)


class ShardMerge:
    """A run's splits merged from its items' shards in problem order, item by item as they
    finish (`feed`), so the merge of the first items overlaps the last ones; `finish` merges
    the rest and writes the splits' metadata and OUT/summary.json. The bytes depend only on
    the shards, not on when they were fed. Used as a context manager: an exception leaves the
    partial splits (a rerun rebuilds them)."""

    def __init__(self, out: Path, problems: list[Problem], layout: RunLayout, record: dict, *, threads: int = 1):
        self.out, self.problems, self.layout, self.record = out, problems, layout, record
        self.threads = threads  # the finish's threads (the run's slots: free once the items are done)
        self.next = 0  # items[:next] are merged
        self._mergers: dict[str, DatasetMerger] = {}
        self._shards: dict[str, list[Path]] = {split: [] for split in SPLITS}

    def __enter__(self) -> "ShardMerge":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            for merger in self._mergers.values():
                merger.__exit__(exc_type, exc, tb)

    def add(self, k: int, shard: Path, result: dict) -> None:
        """The stage merger's hand-over (`demoforge.stage.Merger`): item `k` is final."""
        self.feed()

    def backlog(self) -> int:
        """How many items from `next` on are finished and not merged yet."""
        k = self.next
        while k < len(self.problems) and (_item_dir(self.out, k, self.problems[k].name) / "done.json").is_file():
            k += 1
        return k - self.next

    def feed(self) -> int:
        """Merge every item from `next` on whose shards are final; returns how many."""
        fed = 0
        while self.next < len(self.problems):
            folder = _item_dir(self.out, self.next, self.problems[self.next].name)
            if not (folder / "done.json").is_file():
                break
            for split in SPLITS:
                shard = folder / split
                if (shard / "meta" / "info.json").is_file():
                    if split not in self._mergers:
                        self._mergers[split] = DatasetMerger(self.out / MERGING_DIR / split)
                    self._mergers[split].add(shard)
                    self._shards[split].append(shard)
            self.next += 1
            fed += 1
        return fed

    def finish(self) -> GenerateSummary:
        self.feed()
        if self.next < len(self.problems):
            raise ExecuteError(f"{_item_dir(self.out, self.next, self.problems[self.next].name)}: the item is not "
                               "finished; rerun the same command to resume it")
        roots: dict[str, Path | None] = {split: None for split in SPLITS}
        mergers = [(split, self._mergers[split]) for split in SPLITS if split in self._mergers]
        if self.threads > 1 and len(mergers) > 1:  # the splits side by side
            with ThreadPoolExecutor(max_workers=len(mergers), thread_name_prefix="merge-finish") as pool:
                list(pool.map(lambda m: m.finish(threads=self.threads), [m for _, m in mergers]))
        else:
            for _, merger in mergers:
                merger.finish(threads=self.threads)
        for split, merger in mergers:
            stamp_dataset(merger.out, "generate", self.record)
            merger.out.replace(self.out / split)  # a split appears whole or not at all
            _write_meta(self.out / split, self.out, self.problems, self.layout, self.record, self._shards[split])
            roots[split] = self.out / split
        shutil.rmtree(self.out / MERGING_DIR, ignore_errors=True)
        tallies = {p.name: ProblemTally(**json.loads((_item_dir(self.out, k, p.name) / "done.json").read_text()))
                   for k, p in enumerate(self.problems)}
        summary = GenerateSummary(self.out, tallies, roots)
        write_json_atomic(self.out / "summary.json", summary.to_json())
        shutil.rmtree(self.out / ".shards")  # merged: a rerun finds summary.json and does nothing
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
    write_raw_meta(root, layout, problems, stage="execute", run=record)
