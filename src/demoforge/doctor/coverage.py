"""The coverage generator: read D007's histogram, plan episodes into its holes, execute them in
VecSimEnv, write input + new episodes to a new root, and doctor the result.

    report = generate_coverage("data/corridor", "data/covered", robot="panda", episodes=40, seed=0)
    report.occupancy_before, report.occupancy_after, report.d007_before, report.d007_after

The input is only read. New episodes are planned one after another against a histogram
that already holds the planned ones (`coverage_plan`), then run in parallel slots of one
VecSimEnv at the input's fps (`coverage_run`: a state/action input gets state and action;
a raw execute input gets every raw column, starting from its own episodes' scenes). Same
seed, same bytes.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.dataset import DatasetWriter, merge_datasets
from demoforge.dataset.keys import ACTION, STATE
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INDEX_FEATURE_NAMES, read_info, write_json_atomic
from demoforge.doctor.config import DoctorConfig
from demoforge.doctor.coverage_plan import CoverageError, PlannedEpisode, Planner
from demoforge.doctor.coverage_run import execute, home_start, is_raw, raw_extras, raw_layout, raw_start
from demoforge.doctor.episodes import joint_occupancy
from demoforge.doctor.limits import resolve_limits
from demoforge.doctor.run import run_doctor
from demoforge.raw.schema import CONTRACT_META

TASK = "move the arm through joint ranges the dataset never visits"
NEW_SUFFIX = ".coverage-new"  # sibling of OUTPUT holding the new episodes until they are merged


@dataclass(frozen=True)
class CoverageConfig:
    """How coverage episodes are planned and run."""

    episodes: int = 40  # new episodes
    seed: int = 0
    move_s: float = 2.0  # shortest move from start to goal [s]; longer when a joint would pass the speed cap
    speed_fraction: float = 0.8  # joint speed cap as a fraction of the doctor's max_action_speed (D008)
    hold_s: float = 0.5  # at the goal, so the arm settles inside the target bin [s]
    attempts: int = 8  # goal draws per window before it widens
    max_widen: int = 2  # bins the window grows on each side before free sampling
    envs: int = 4  # VecSimEnv slots
    doctor: DoctorConfig = field(default_factory=DoctorConfig)  # bins and thresholds of D007

    def __post_init__(self) -> None:
        bad = [f"{k}={getattr(self, k)} must be > 0" for k in ("episodes", "move_s", "attempts", "envs",
                                                                 "speed_fraction")
               if getattr(self, k) <= 0]
        if self.hold_s < 0 or self.max_widen < 0:
            bad.append("hold_s and max_widen must be >= 0")
        if bad:
            raise CoverageError("coverage config: " + "; ".join(bad))


@dataclass(frozen=True)
class CoverageReport:
    """Occupancy and D007 findings before and after, and what was planned."""

    output: Path
    joints: tuple[str, ...]
    counts_before: np.ndarray  # (n_joints, bins) frames per bin in the input
    counts_after: np.ndarray  # the same in the output
    occupancy_before: np.ndarray  # (n_joints,) fraction of bins visited
    occupancy_after: np.ndarray
    d007_before: int  # D007 findings on the input
    d007_after: int  # and on the output
    planned: tuple[PlannedEpisode, ...]

    def to_json(self) -> dict[str, Any]:
        return {"joints": list(self.joints), "counts_before": self.counts_before.tolist(),
                "counts_after": self.counts_after.tolist(), "occupancy_before": self.occupancy_before.tolist(),
                "occupancy_after": self.occupancy_after.tolist(), "d007_before": self.d007_before,
                "d007_after": self.d007_after, "planned": [p.to_json() for p in self.planned]}


def _check_input(info, limits) -> None:
    problems = []
    n = len(limits.names)
    user = {k: f for k, f in info.features.items() if k not in INDEX_FEATURE_NAMES}
    other = sorted(set(user) - {STATE, ACTION})
    if other and not is_raw(info):
        problems.append(f"features {other} cannot be produced by coverage episodes (only {STATE!r} and {ACTION!r}, "
                        "or a raw execute dataset); run coverage on the raw dataset the others were made from")
    for key in (STATE, ACTION):
        if key not in user:
            problems.append(f"no {key!r} feature")
        elif tuple(user[key].shape) != (n + 1,) or user[key].dtype != "float32":
            problems.append(f"{key!r} is {user[key].dtype} {list(user[key].shape)}, expected float32 [{n + 1}] "
                            f"({n} arm joints + gripper)")
    if tuple(limits.dims) != tuple(range(n)):
        problems.append(f"arm joints sit at state dims {list(limits.dims)}, expected the first {n}")
    if limits.card is None:
        problems.append(f"joint limits come from {limits.source}, not a robot card; pass --robot with a built-in "
                        "card name or a card YAML so the episodes can be simulated")
    if info.video_keys:
        problems.append(f"video features {info.video_keys}: render the coverage episodes afterwards instead")
    if info.fps <= 0 or abs(600.0 / info.fps - round(600.0 / info.fps)) > 1e-9:
        problems.append(f"fps {info.fps} is not a whole number of 1/600 s physics steps")
    if problems:
        raise CoverageError("coverage: the input cannot be extended:\n  " + "\n  ".join(problems))


def generate_coverage(input_root: str | Path, output_root: str | Path, *, robot: str | None = None,
                      config: CoverageConfig | None = None) -> CoverageReport:
    """Fill the joint-limit holes of `input_root`: see the module docstring. `output_root` must not exist."""
    from demoforge.dataset import open_dataset

    cfg = config or CoverageConfig()
    src, out = Path(input_root), Path(output_root)
    if out.exists():
        raise CoverageError(f"{out}: already exists; coverage writes a new root (the input is never changed)")
    info = read_info(src)
    limits = resolve_limits(info, robot)
    if limits is None:
        raise CoverageError(f"{src}: the dataset names no robot; pass --robot (a built-in card or a card YAML)")
    _check_input(info, limits)
    raw = is_raw(info)
    reader = open_dataset(src)
    layout = raw_layout(src, info, limits.card) if raw else None
    before = run_doctor(src, robot=robot, config=cfg.doctor, checks=["D007"], structure=False)
    planner = Planner(limits, before.scan.occupancy, bins=cfg.doctor.bins, min_frames=cfg.doctor.min_bin_frames,
                      attempts=cfg.attempts, max_widen=cfg.max_widen, fps=info.fps, move_s=cfg.move_s,
                      hold_s=cfg.hold_s, max_speed=cfg.speed_fraction * cfg.doctor.max_action_speed)
    sources = reader.episode_indices

    def start(k: int):
        if raw:
            return raw_start(src, reader, sources[k % len(sources)])
        return home_start(limits.card)

    planned = []
    for k in range(cfg.episodes):
        begin = start(k)
        scene = begin.scene if raw else begin
        planned.append(planner.plan(k, np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(k,))),
                                    scene, scene.data.qpos[scene.robot.arm_qpos].copy(),
                                    sources[k % len(sources)] if raw else None))
    episodes = execute(planned, start, info.fps, cfg.envs, cfg.seed, layout)
    new = out.with_name(out.name + NEW_SUFFIX)
    if new.exists():
        shutil.rmtree(new)  # left by an interrupted run of ours: its episodes are recomputed
    user = {k: f for k, f in info.features.items() if k not in INDEX_FEATURE_NAMES}
    try:
        with DatasetWriter.create(new, fps=info.fps, features=user, robot_type=info.robot_type) as writer:
            for p, cols in zip(planned, episodes):
                extra = raw_extras(reader.episode(p.source_episode), p, cfg.seed) if raw else {"coverage": p.to_json()}
                writer.add_episode(cols, task=TASK, extra=extra)
        merge_datasets([src, new], out)
    finally:
        shutil.rmtree(new, ignore_errors=True)
    after = run_doctor(out, robot=robot, config=cfg.doctor)
    min_frames = cfg.doctor.min_bin_frames
    report = CoverageReport(
        out, limits.names, before.scan.occupancy, after.scan.occupancy,
        joint_occupancy(before.scan.occupancy, min_frames), joint_occupancy(after.scan.occupancy, min_frames),
        before.count("D007"), after.count("D007"), tuple(planned))
    _stamp(out, src, report, cfg)
    return report


def _stamp(out: Path, src: Path, report: CoverageReport, cfg: CoverageConfig) -> None:
    """meta/demoforge/coverage.json, merge.json's source roots made independent of where OUTPUT is,
    and a raw input's contract files (scenes, vocabulary, control law) so the output replays."""
    meta = out / DEMOFORGE_META_DIR
    for name in CONTRACT_META:
        path = src / DEMOFORGE_META_DIR / name
        if path.is_dir():
            shutil.copytree(path, meta / name)
        elif path.is_file():
            shutil.copy2(path, meta / name)
    merge = meta / "merge.json"
    if merge.is_file():
        raw = json.loads(merge.read_text())
        raw["sources"][0]["root"] = str(src)
        raw["sources"][1]["root"] = "(coverage episodes)"
        write_json_atomic(merge, raw)
    write_json_atomic(meta / "coverage.json", {
        "input": str(src), "seed": cfg.seed, "episodes": cfg.episodes, "bins": cfg.doctor.bins,
        "min_occupancy": cfg.doctor.min_occupancy, **report.to_json()})
