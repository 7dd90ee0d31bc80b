"""The coverage generator: read D007's histogram, plan episodes into its holes, execute them in
VecSimEnv, write them as a dataset of their own, and say what they add to the input.

    report = generate_coverage("data/corridor", "data/coverage", robot="panda", episodes=40, seed=0)
    report.occupancy_before, report.occupancy_after, report.d007_before, report.d007_after

The input is only read and its episodes are not copied: coverage episodes move the arm to
joint-space goals and perform no task, so they go to a separate dataset (task string `TASK`)
that a policy is trained on beside the input, never mixed into its task data. New episodes
are planned one after another against a histogram that already holds the planned ones
(`coverage_plan`), then run in parallel slots of one VecSimEnv (`coverage_run`). What they
are written as follows the input (`coverage_run.input_layout`): raw episodes for a raw
execute dataset, rendered or not; the bake's convention and rate for a baked one; state and
commanded targets for any other. `occupancy_after` and `d007_after` judge the input and the
coverage episodes together, against the span of the input's own episodes (D007).
Same seed, same bytes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from demoforge.dataset import DatasetWriter, check_dataset, open_dataset
from demoforge.dataset.guard import holds_files
from demoforge.dataset.keys import STATE
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INFO_PATH, read_info, write_json_atomic
from demoforge.doctor.config import MAX_BINS, DoctorConfig
from demoforge.doctor.coverage_plan import CoverageError, PlannedEpisode, Planner
from demoforge.doctor.coverage_run import Layout, execute, home_start, input_layout, labelled, raw_extras, raw_start
from demoforge.doctor.episodes import joint_coverage_findings, joint_occupancy, visited_span
from demoforge.doctor.limits import resolve_limits
from demoforge.doctor.run import DoctorResult, run_doctor
from demoforge.doctor.scan import occupancy_counts
from demoforge.convert.bake import auto_workers
from demoforge.errors import listing
from demoforge.fields import MAX_ENVS, MAX_EPISODES, MAX_SEED, option, workers_option
from demoforge.raw.schema import CONTRACT_META
from demoforge.stage import LocalExecutor, MergeAtEnd, Progress, chunks, run_stage
from demoforge.stage.runner import STAMP_DIR, merge_shards, publish_dataset
from demoforge.tasks.package import task_packages_option

# Fields that do not decide the bytes (or are fingerprinted on their own: robot, bins).
NOT_FINGERPRINTED = ("doctor", "robot", "bins", "workers", "task_packages")
TASK = "move the arm to a joint-space goal (a coverage episode: no task is performed)"


@dataclass(frozen=True)
class CoverageConfig:
    """How coverage episodes are planned and run: the option fields are `demoforge coverage`'s flags
    (`demoforge.fields`), the others the library's alone."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the scenes rebuilt may be a package's
    episodes: int = option(40, "New episodes to generate.", range=(1, MAX_EPISODES))
    seed: int = option(0, "Run seed; the same seed gives the same bytes.", range=(0, MAX_SEED))
    robot: str | None = option(None, "Robot card: a built-in name (panda) or a card YAML [default: the one the "
                                     "dataset names].", kind="str")
    bins: int = option(DoctorConfig.bins, "Bins per joint across its limits (as doctor D007; it overrides "
                                          "`doctor`'s).", range=(2, MAX_BINS))
    envs: int = option(4, "Parallel simulation slots per worker.", range=(1, MAX_ENVS))
    workers: int | str = workers_option()
    move_s: float = 2.0  # shortest move from start to goal [s]; longer when a joint would pass the speed cap
    speed_fraction: float = 0.8  # joint speed cap as a fraction of the doctor's max_action_speed (D008)
    hold_s: float = 0.5  # at the goal, so the arm settles inside the target bin [s]
    attempts: int = 8  # goal draws per window before it widens
    max_widen: int = 2  # bins the window grows on each side before free sampling
    doctor: DoctorConfig = field(default_factory=DoctorConfig)  # D007's other thresholds (its bins: `bins`)

    def __post_init__(self) -> None:
        bad = [f"{k}={getattr(self, k)} must be > 0" for k in ("episodes", "move_s", "attempts", "envs",
                                                                 "speed_fraction")
               if getattr(self, k) <= 0]
        if self.hold_s < 0 or self.max_widen < 0:
            bad.append("hold_s and max_widen must be >= 0")
        if bad:
            raise CoverageError("coverage config: " + "; ".join(bad))

    def judge(self) -> DoctorConfig:
        """The doctor config D007 is judged with: `doctor` with `bins`."""
        return replace(self.doctor, bins=self.bins)


@dataclass(frozen=True)
class CoverageReport:
    """D007 on the input before, and on the input and the coverage episodes together after."""

    output: Path  # the coverage episodes' own dataset
    joints: tuple[str, ...]  # as D007 names them: the dataset's names, with the robot card's where they differ
    counts_before: np.ndarray  # (n_joints, bins) frames per bin in the input
    counts_after: np.ndarray  # the same in the input and the coverage episodes together
    occupancy_before: np.ndarray  # (n_joints,) fraction of bins visited
    occupancy_after: np.ndarray
    d007_before: int  # D007 coverage findings (notes and warnings) on the input
    d007_after: int  # the same on the input and the coverage episodes together
    warnings_before: int  # of those, warnings: stretches of the input's own span never visited
    warnings_after: int
    planned: tuple[PlannedEpisode, ...]
    kind: str = "state_action"  # what the episodes were written as: "raw", "baked" or "state_action"
    notes: tuple[str, ...] = ()  # what the output holds and lacks beside the input

    def to_json(self) -> dict[str, Any]:
        return {"joints": list(self.joints), "counts_before": self.counts_before.tolist(),
                "counts_after": self.counts_after.tolist(), "occupancy_before": self.occupancy_before.tolist(),
                "occupancy_after": self.occupancy_after.tolist(), "d007_before": self.d007_before,
                "d007_after": self.d007_after, "warnings_before": self.warnings_before,
                "warnings_after": self.warnings_after, "kind": self.kind, "notes": list(self.notes),
                "planned": [p.to_json() for p in self.planned]}


@dataclass(frozen=True)
class CoverageStage:
    """The execution and writing of planned coverage episodes as a stage (`demoforge.stage`): the
    plan (made first, one episode after another against the growing histogram) in contiguous
    work items run in VecSimEnv slots and written as shards, merged in order, stamped, checked
    and moved to OUT. An episode's start and moves depend on its plan only, so the bytes do not
    depend on the items or the worker count; a killed run keeps its finished shards."""

    src: Path
    robot: str | None
    cfg: CoverageConfig
    layout: Layout
    card: Any  # the robot card (the writer's robot_type; a raw input's starts)
    planned: tuple[PlannedEpisode, ...]
    fingerprint_: dict
    name: ClassVar[str] = "coverage"
    error: ClassVar[type] = CoverageError
    out_name: ClassVar[str] = "OUTPUT_ROOT"

    def parts(self) -> list[range]:
        return chunks(len(self.planned))

    def fingerprint(self) -> dict:
        return self.fingerprint_

    def inputs(self) -> tuple[Path, ...]:
        return (self.src,)

    def items(self) -> list[str]:
        return [f"episodes-{r.start}-{r.stop - 1}" for r in self.parts()]

    def total(self) -> int:
        return len(self.planned)

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        part, label = self.parts()[k], self.items()[k]
        root = shard / "data"
        shutil.rmtree(root, ignore_errors=True)  # an item is run whole: a killed one starts over
        reader = open_dataset(self.src)
        sources, raw = reader.episode_indices, self.layout.kind == "raw"

        def start(e: int):  # e: the episode's index within this item
            k_ = part.start + e
            return raw_start(self.src, reader, sources[k_ % len(sources)]) if raw else home_start(self.card)

        planned = self.planned[part.start:part.stop]
        # the runner counts done and total over the whole run; the item's label names the shard
        events = None if progress is None else (lambda event: progress(replace(event, item=label)))
        run = execute(list(planned), start, self.layout.run_fps, self.cfg.envs, self.cfg.seed, self.layout.raw,
                      progress=events)
        with DatasetWriter.create(root, fps=self.layout.fps, features=self.layout.features,
                                  robot_type=self.card.name) as writer:
            for p, k_ in zip(planned, part):
                cols = labelled(self.layout, k_, run[k_ - part.start])
                extra = raw_extras(reader.episode(p.source_episode), p, self.cfg.seed) if raw \
                    else {"coverage": p.to_json()}
                writer.add_episode(cols, task=TASK, extra=extra)
        return {"episodes": len(part)}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: self._publish(shards, out))

    def finished(self, out: Path) -> CoverageReport:
        """A rerun of a finished run (same input and settings) writes nothing: its report, read
        back from the stamp the run left (meta/demoforge/coverage.json) beside this plan."""
        saved = json.loads((out / DEMOFORGE_META_DIR / "coverage.json").read_text(encoding="utf-8"))
        arrays = {k: np.asarray(saved[k]) for k in ("counts_before", "counts_after", "occupancy_before",
                                                      "occupancy_after")}
        return CoverageReport(out, tuple(saved["joints"]), **arrays,
                              **{k: int(saved[k]) for k in ("d007_before", "d007_after", "warnings_before",
                                                            "warnings_after")},
                              planned=self.planned, kind=saved["kind"], notes=tuple(saved["notes"]))

    def _publish(self, shards: list[Path], out: Path) -> CoverageReport:
        tmp = shards[0].parent.parent / "publish"  # in the work folder: OUT appears whole or not at all
        root = tmp / "coverage"
        merge_shards(shards, root)
        limits = resolve_limits(read_info(self.src), self.robot)
        judge = self.cfg.judge()
        before = run_doctor(self.src, robot=self.robot, config=judge, checks=["D007"], structure=False)
        merged = open_dataset(root)
        new = sum(occupancy_counts(merged.read_episode(i, [STATE])[STATE], limits, judge.bins)[0]
                  for i in merged.episode_indices)
        report = _report(out, before, new, limits, self.cfg, self.planned, self.layout)
        _stamp(root, self.src, report, self.cfg, self.layout)
        problems = check_dataset(root)
        if problems:
            raise CoverageError(f"{out}: the coverage dataset fails its check:" + listing(problems))
        publish_dataset(root, out, self.name, self.fingerprint())
        shutil.rmtree(tmp, ignore_errors=True)
        return report


def generate_coverage(input_root: str | Path, output_root: str | Path, *, robot: str | None = None,
                      config: CoverageConfig | None = None, workers: int | None = None,
                      progress: Progress | None = None,
                      executor=None) -> CoverageReport:
    """Episodes into the joint ranges `input_root` never visits, as the new dataset `output_root`
    (see the module docstring), run by `run_stage` on `workers` local slots (default: the config's;
    or `executor`); `robot` (default: the config's, else the dataset's own) names the arm;
    `output_root` must be absent or empty, or this same run finished (its report is returned and
    nothing is written). `progress` takes a `ProgressEvent` per episode written. A killed run
    resumes from its finished shards when run again the same way."""
    cfg = config or CoverageConfig()
    judge = cfg.judge()
    robot = cfg.robot if robot is None else robot
    workers = (auto_workers() if cfg.workers == "auto" else cfg.workers) if workers is None else workers
    src, out = Path(input_root), Path(output_root)
    if holds_files(out) and not is_coverage(out):  # early, before the plan; the stage's guard decides the rest
        raise CoverageError(f"{out}: already exists; coverage writes a new root (the input is never changed)")
    if not (isinstance(workers, int) and workers >= 1):
        raise CoverageError(f"workers {workers!r} must be an integer >= 1")
    info = read_info(src)
    limits = resolve_limits(info, robot)
    if limits is None:
        raise CoverageError(f"{src}: the dataset names no robot; pass --robot (a built-in card or a card YAML)")
    layout = input_layout(src, info, limits)
    reader = open_dataset(src)
    before = run_doctor(src, robot=robot, config=judge, checks=["D007"], structure=False)
    planner = Planner(limits, before.scan.occupancy, bins=judge.bins, min_frames=judge.min_bin_frames,
                      attempts=cfg.attempts, max_widen=cfg.max_widen, fps=layout.run_fps, move_s=cfg.move_s,
                      hold_s=cfg.hold_s, max_speed=cfg.speed_fraction * judge.max_action_speed)
    sources = reader.episode_indices
    raw = layout.kind == "raw"
    planned = []
    for k in range(cfg.episodes):
        begin = raw_start(src, reader, sources[k % len(sources)]) if raw else home_start(limits.card)
        scene = begin.scene if raw else begin
        planned.append(planner.plan(k, np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(k,))),
                                    scene, scene.data.qpos[scene.robot.arm_qpos].copy(),
                                    sources[k % len(sources)] if raw else None))
    fingerprint = json.loads(json.dumps({
        "stage": "coverage", "input": {"root": str(src.resolve()),
                                       "info_sha256": hashlib.sha256((src / INFO_PATH).read_bytes()).hexdigest()},
        "robot": robot, "config": {k: v for k, v in asdict(cfg).items() if k not in NOT_FINGERPRINTED},
        "bins": judge.bins, "planned": [p.to_json() for p in planned]}, default=str))
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = CoverageStage(src, robot, cfg, layout, limits.card, tuple(planned), fingerprint)
    if executor is not None:
        return run_stage(stage, out, executor=executor, progress=progress)
    with LocalExecutor(min(workers, len(stage.parts()))) as local:
        return run_stage(stage, out, executor=local, progress=progress)


def is_coverage(out: str | Path) -> bool:
    """`out` holds a dataset coverage published (whether from these inputs and settings is for
    `run_stage`'s guard to say, once the plan is made)."""
    return (Path(out) / STAMP_DIR / "coverage.json").is_file()


def _report(out: Path, before: DoctorResult, new: np.ndarray, limits, cfg: CoverageConfig,
            planned: tuple[PlannedEpisode, ...], layout: Layout) -> CoverageReport:
    """D007 on the input, and on the input with the coverage episodes, both against the input's span."""
    judge = cfg.judge()
    span = visited_span(before.scan)
    counts_before = before.scan.occupancy
    counts_after = counts_before + new

    def judged(counts: np.ndarray) -> tuple[int, int]:
        found = joint_coverage_findings(limits, counts, None, span, judge, "")
        return len(found), sum(f.severity == "warning" for f in found)

    (d_before, w_before), (d_after, w_after) = judged(counts_before), judged(counts_after)
    min_frames = judge.min_bin_frames
    return CoverageReport(
        out, tuple(limits.label(j) for j in range(len(limits.names))), counts_before, counts_after, joint_occupancy(counts_before, min_frames),
        joint_occupancy(counts_after, min_frames), d_before, d_after, w_before, w_after, planned, layout.kind,
        layout.notes)


def _stamp(out: Path, src: Path, report: CoverageReport, cfg: CoverageConfig, layout: Layout) -> None:
    """meta/demoforge/coverage.json, and a raw input's contract files (scenes, vocabulary, control
    law) so the coverage episodes replay, render and bake like the input's."""
    meta = out / DEMOFORGE_META_DIR
    meta.mkdir(parents=True, exist_ok=True)
    if layout.kind == "raw":
        for name in CONTRACT_META:
            path = src / DEMOFORGE_META_DIR / name
            if path.is_dir():
                shutil.copytree(path, meta / name)
            elif path.is_file():
                shutil.copy2(path, meta / name)
    write_json_atomic(meta / "coverage.json", {
        "input": str(src), "task": TASK, "action": layout.action, "seed": cfg.seed, "episodes": cfg.episodes,
        "bins": cfg.bins, "min_occupancy": cfg.doctor.min_occupancy, **report.to_json()})
