"""The coverage generator: read D007's histogram, plan episodes into its holes, execute them in
VecSimEnv, write input + new episodes to a new root, and doctor the result.

    report = generate_coverage("data/corridor", "data/covered", robot="panda", episodes=40, seed=0)
    report.occupancy_before, report.occupancy_after, report.d007_before, report.d007_after

The input is only read. New episodes are planned one after another against a histogram
that already holds the planned ones (`coverage_plan`), then run in parallel slots of one
VecSimEnv at the input's fps; each records observation.state (arm joints + gripper
closedness) before the tick and the commanded action. Same seed, same bytes.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.dataset import DatasetWriter, merge_datasets
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INDEX_FEATURE_NAMES, read_info, write_json_atomic
from demoforge.doctor.config import DoctorConfig
from demoforge.doctor.coverage_plan import CoverageError, PlannedEpisode, Planner
from demoforge.doctor.episodes import joint_occupancy
from demoforge.doctor.limits import STATE, resolve_limits
from demoforge.doctor.run import run_doctor

ACTION = "action"
TASK = "move the arm through joint ranges the dataset never visits"
NEW_SUFFIX = ".coverage-new"  # sibling of OUTPUT holding the new episodes until they are merged


@dataclass(frozen=True)
class CoverageConfig:
    """How coverage episodes are planned and run."""

    episodes: int = 40  # new episodes
    seed: int = 0
    move_s: float = 2.0  # from home to the goal [s]
    hold_s: float = 0.5  # at the goal, so the arm settles inside the target bin [s]
    attempts: int = 8  # goal draws per window before it widens
    max_widen: int = 2  # bins the window grows on each side before free sampling
    envs: int = 4  # VecSimEnv slots
    doctor: DoctorConfig = field(default_factory=DoctorConfig)  # bins and thresholds of D007

    def __post_init__(self) -> None:
        bad = [f"{k}={getattr(self, k)} must be > 0" for k in ("episodes", "move_s", "attempts", "envs")
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
    if other:
        problems.append(f"features {other} cannot be produced by coverage episodes (only {STATE!r} and {ACTION!r}); "
                        "run coverage on a state/action dataset, e.g. one baked with the joint_pos convention")
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
    if info.fps <= 0 or abs(600.0 / info.fps - round(600.0 / info.fps)) > 1e-9:
        problems.append(f"fps {info.fps} is not a whole number of 1/600 s physics steps")
    if problems:
        raise CoverageError("coverage: the input cannot be extended:\n  " + "\n  ".join(problems))


def _execute(card, planned: list[PlannedEpisode], fps: int, cfg: CoverageConfig) -> list[dict[str, np.ndarray]]:
    """Run every planned episode in VecSimEnv; returns their state/action columns in order."""
    from demoforge.doctor.coverage_plan import joint_path
    from demoforge.execute import SimTask, VecSimEnv
    from demoforge.sim import SceneSpec, build_scene

    spec = SceneSpec(robot=card)
    move, hold = round(cfg.move_s * fps), round(cfg.hold_s * fps)
    home = np.asarray(card.home, dtype=np.float64)
    paths = [joint_path(home, np.asarray(p.q_goal), move, hold) for p in planned]
    task = SimTask("coverage", lambda e, seed, rng: build_scene(spec), lambda scene, ctx: False,
                   max_ticks=move + hold, terminate_on_success=False)
    env = VecSimEnv([task], num_envs=min(cfg.envs, len(planned)), episodes=len(planned), seed=cfg.seed,
                    control_hz=float(fps))
    obs, _ = env.reset()
    rows: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {e: [] for e in range(len(planned))}
    open_gripper = 0.0
    while not env.exhausted:
        actions = np.zeros((env.num_envs, len(home) + 1))
        for i, ident in enumerate(env.ids):
            if ident is not None:
                e = ident[1]
                actions[i, :-1] = paths[e][env.ticks[i]]
                actions[i, -1] = open_gripper
                rows[e].append((obs[STATE][i].copy(), actions[i].copy()))
        obs, *_ = env.step(actions)
    return [{STATE: np.stack([r[0] for r in rows[e]]).astype(np.float32),
             ACTION: np.stack([r[1] for r in rows[e]]).astype(np.float32)} for e in range(len(planned))]


def generate_coverage(input_root: str | Path, output_root: str | Path, *, robot: str | None = None,
                      config: CoverageConfig | None = None) -> CoverageReport:
    """Fill the joint-limit holes of `input_root`: see the module docstring. `output_root` must not exist."""
    from demoforge.sim import SceneSpec, build_scene

    cfg = config or CoverageConfig()
    src, out = Path(input_root), Path(output_root)
    if out.exists():
        raise CoverageError(f"{out}: already exists; coverage writes a new root (the input is never changed)")
    info = read_info(src)
    limits = resolve_limits(info, robot)
    if limits is None:
        raise CoverageError(f"{src}: the dataset names no robot; pass --robot (a built-in card or a card YAML)")
    _check_input(info, limits)
    before = run_doctor(src, robot=robot, config=cfg.doctor, checks=["D007"], structure=False)
    bins, min_frames = cfg.doctor.bins, cfg.doctor.min_bin_frames
    scene = build_scene(SceneSpec(robot=limits.card))
    planner = Planner(scene, limits, before.scan.occupancy, bins=bins, min_frames=min_frames,
                      attempts=cfg.attempts, max_widen=cfg.max_widen, move_ticks=round(cfg.move_s * info.fps),
                      hold_ticks=round(cfg.hold_s * info.fps))
    planned = [planner.plan(k, np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(k,))))
               for k in range(cfg.episodes)]
    episodes = _execute(limits.card, planned, info.fps, cfg)
    new = out.with_name(out.name + NEW_SUFFIX)
    if new.exists():
        shutil.rmtree(new)  # left by an interrupted run of ours: its episodes are recomputed
    user = {k: f for k, f in info.features.items() if k not in INDEX_FEATURE_NAMES}
    try:
        with DatasetWriter.create(new, fps=info.fps, features=user, robot_type=info.robot_type) as writer:
            for p, cols in zip(planned, episodes):
                writer.add_episode(cols, task=TASK, extra={"coverage": json.dumps(p.to_json())})
        merge_datasets([src, new], out)
    finally:
        shutil.rmtree(new, ignore_errors=True)
    after = run_doctor(out, robot=robot, config=cfg.doctor)
    report = CoverageReport(
        out, limits.names, before.scan.occupancy, after.scan.occupancy,
        joint_occupancy(before.scan.occupancy, min_frames), joint_occupancy(after.scan.occupancy, min_frames),
        before.count("D007"), after.count("D007"), tuple(planned))
    _stamp(out, src, report, cfg)
    return report


def _stamp(out: Path, src: Path, report: CoverageReport, cfg: CoverageConfig) -> None:
    """meta/demoforge/coverage.json, and merge.json's source roots made independent of where OUTPUT is."""
    meta = out / DEMOFORGE_META_DIR
    merge = meta / "merge.json"
    if merge.is_file():
        raw = json.loads(merge.read_text())
        raw["sources"][0]["root"] = str(src)
        raw["sources"][1]["root"] = "(coverage episodes)"
        write_json_atomic(merge, raw)
    write_json_atomic(meta / "coverage.json", {
        "input": str(src), "seed": cfg.seed, "episodes": cfg.episodes, "bins": cfg.doctor.bins,
        "min_occupancy": cfg.doctor.min_occupancy, **report.to_json()})
