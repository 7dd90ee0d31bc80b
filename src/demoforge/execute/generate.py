"""`generate`: many episodes of many problems, recorded as success and failure datasets.

    summary = generate(["tasks/stack_three-all-0000.pddl", "scenepkg/"], "out/run",
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
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar


from demoforge.execute.expert_episode import EpisodeResult, ExpertSettings
from demoforge.execute.layout import RunLayout
from demoforge.execute.materials import apply_materials, check_materials, print_warning
from demoforge.execute.pool import refuse_in_worker_start_up
from demoforge.execute.problems import ExecuteError, Problem, check_goals, check_skills, load_problems
from demoforge.execute.record import run_layout
from demoforge.execute.run_folder import MERGING_DIR, GenerateSummary, finished_run, item_dir, run_record
from demoforge.execute.expert_loop import ExpertLoop
from demoforge.execute.shard_merge import ShardMerge
from demoforge.execute.shards import SPLITS, InlineVideo, ProblemTally, ShardWriters, tally_of
from demoforge.randomize import RandomizationSpec, apply_to_scene_params
from demoforge.randomize.robot_start import RobotStartParams
from demoforge.scenes.materials import MaterialError, material_ref
from demoforge.sim import Material, RobotCard
from demoforge.stage import LocalExecutor, Progress, ProgressEvent, run_stage
from demoforge.tasks.scene import MaterialRef
from demoforge.sim.controllers import MODES



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


def run_problems(inputs: list[str], *, domain: str, randomization: RandomizationSpec | None,
                 robot: RobotCard | None = None, robot_start: RobotStartParams | None = None,
                 materials: Mapping[str, MaterialRef] | None = None) -> list[Problem]:
    """The run's problems, with the arm of `robot` starting as `robot_start` draws (see
    `load_problems`); the spec's scene-range overrides replace PDDL problems' sidecar ranges and
    `materials` their sidecar materials (`scenes.materials.with_materials`; a scene package's
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
    envs: int  # env slots of each item's expert loop
    settings: ExpertSettings
    randomization: RandomizationSpec | None = None
    videos: InlineVideo | None = None
    expert: type[ExpertLoop] = ExpertLoop  # the expert each item runs (play data's chains goals)
    expert_options: dict = field(default_factory=dict)  # its keyword arguments beyond ExpertLoop's
    per_item: int = 1  # problems per work item (`problem_groups`)

    def problem_shard(self, p: int) -> Path:
        """Problem `p`'s shard folder: success/, failure/ and, once they are final, done.json (its tally)."""
        return item_dir(self.out, p, self.problems[p].name)

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
    """Run work item `k` (the problems `run.groups()[k]`, their episodes sharing the expert loop's envs)
    in this process, continuing their shards if interrupted; returns the item's tally. Each
    problem's shards are final (its done.json written) as soon as its last episode is in, so a
    kill loses none of its finished problems."""
    group = list(run.groups()[k])
    writers: dict[int, ShardWriters] = {}
    tallies: dict[int, ProblemTally] = {}
    for p in group:
        folder = item_dir(run.out, p, run.problems[p].name)
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
            run.expert([run.problems[p] for p in running], run.layout, num_envs=run.envs, seed=run.seed,
                       episodes=queue, settings=run.settings, after_skill=after_skill,
                       randomization=run.randomization, **run.expert_options).run(on_episode)
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
    sources: tuple[str, ...] = ()  # the problem files, package folders and domain file read: OUT may not overlap them
    name: ClassVar[str] = "generate"
    error: ClassVar[type] = ExecuteError

    def fingerprint(self) -> dict:
        return self.record

    def inputs(self) -> tuple[str, ...]:
        return self.sources

    def items(self) -> list[str]:
        if self.run.per_item == 1:
            return [p.name for p in self.run.problems]
        return [f"problems-{g.start:04d}-{g.stop - 1:04d}" for g in self.run.groups()]

    def total(self) -> int:
        return len(self.run.problems) * self.run.episodes

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        if self.run.per_item == 1:  # the item's shard is its problem's (a group's holds only its done.json)
            assert shard == item_dir(self.run.out, k, self.run.problems[k].name), shard
        return asdict(run_item(self.run, k, progress, self.after_skill))

    def merger(self, out: Path, threads: int) -> ShardMerge:
        for split in (*SPLITS, MERGING_DIR):  # a resumed run's partial splits are rebuilt from the shards
            if (out / split).exists():
                shutil.rmtree(out / split)
        return ShardMerge(out, list(self.run.problems), self.run.layout, self.record,
                          threads=min(threads, len(self.run.problems)))


def generate(
    inputs: list[str | Path], out: str | Path, *, episodes_per_problem: int, envs: int = 1,
    workers: int | str = 1, seed: int = 0, settings: ExpertSettings = ExpertSettings(),
    domain: str = "blocks", progress: Progress | None = None, after_skill=None,
    randomization: RandomizationSpec | None = None, record_videos: InlineVideo | None = None,
    robot: RobotCard | None = None, control_law: str | None = None,
    robot_start: RobotStartParams | None = None, expert: type[ExpertLoop] = ExpertLoop,
    expert_options: dict | None = None, executor=None, problems_per_process: int = 8,
    materials: Mapping[str, MaterialRef | Material | dict] | None = None, warn: Callable[[str], None] | None = None,
    run_with: Callable = run_stage,
) -> GenerateSummary:
    """Generate `episodes_per_problem` episodes of every problem in `inputs` (PDDL files with
    sidecars, or scene package folders) into OUT/success and OUT/failure, with
    physics domain randomization drawn per episode when `randomization` is given, and
    camera videos rendered inline when `record_videos` is given. `robot`: the arm of PDDL
    problems' scenes (None: the built-in Panda; a package has its own, see `load_problems`);
    recorded in run.json, so a rerun with another robot is refused as another run. `control_law`:
    the mode the arm is commanded in (joint_position, or cartesian_delta: the expert's planned
    joint motion sent as TCP deltas through the differential-IK controller); None: the robot
    card's law. It is stamped in each split's meta/demoforge/controller.json. `robot_start`:
    the windows each PDDL episode's arm start is drawn from (None: home), recorded in run.json.
    `expert` (a module-level ExpertLoop subclass, so workers can import it) with
    `expert_options`: another expert, recorded in run.json (`demoforge.pipeline.play`).
    `executor`: where the items run (a `demoforge.stage` executor, e.g. `RayExecutor`); by
    default `workers` local slots. `problems_per_process`: how many problems a work item holds at
    most, their episodes sharing its `envs` (`problems_per_item`); the bytes never depend on it.
    `materials`: prop ("table", "blocks" or a block name) -> a preset name or a custom material
    (`CustomMaterial`, a `sim.Material` or its JSON dict) over the PDDL problems' sidecar materials, recorded in
    run.json; every pair of named materials is contact-linted first (`check_materials`), its
    warnings passed to `warn` (default: printed to stderr). `run_with`: what runs the stage, `run_stage`'s
    signature (the pipeline's pipelined schedule runs the render's items with it, `pipeline.pipelined`)."""
    # One function: the public entry point; most of its length is the docstring of its options and
    # the checks that refuse bad arguments before a worker starts. The work is run_item's and GenerateStage's.
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
        # at most one per problem: a PDDL file is one, a scene package folder may hold many
        most = len(inputs) if all(Path(p).is_file() for p in inputs) else sys.maxsize
        requested = min(resolve_workers(workers, most), max(1, most))
        if requested > 1 and after_skill is not None:
            raise ExecuteError("after_skill hooks run only with workers=1")
        # the workers start now and import while this process loads the problems
        local = executor = LocalExecutor(requested)
        local.start()
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
        check_skills(problems)
        check_goals(problems, time_budget_s=settings.plan_budget_s)
        if record_videos is not None:
            check_inline_video(record_videos, problems)
        record = run_record(inputs, problems, episodes_per_problem, seed, settings, randomization, record_videos,
                             domain, control_law, materials)
        if expert is not ExpertLoop:
            record["expert"] = {"class": f"{expert.__module__}.{expert.__qualname__}", "options": expert_options or {}}
        summary = finished_run(out, record, problems)
        if summary is not None:
            return summary
        per_item = problems_per_item(len(problems), problems_per_process, executor.slots)
        run = RunSpec(out, tuple(problems), layout, episodes_per_problem, seed, envs, settings, randomization,
                      record_videos, expert, dict(expert_options or {}), per_item)
        sources = (*inputs, *([domain] if Path(domain).is_file() else []))  # run_stage guards OUT against them
        return run_with(GenerateStage(run, record, after_skill, sources), out, work=out, executor=executor,
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
