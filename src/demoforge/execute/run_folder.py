"""OUT as a run folder of `generate`: what run.json records of a run (inputs by resolved path
and content hash, so any spelling of the same input is the same run), the shard folder of each
work item, and the summary of a finished run (`finished_run`: a rerun of it does nothing)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from demoforge.execute.problems import Problem
from demoforge.execute.expert_episode import ExpertSettings
from demoforge.execute.shards import SPLITS, InlineVideo, ProblemTally
from demoforge.randomize import RandomizationSpec, spec_to_dict
from demoforge.randomize.robot_start import params_to_dict
from demoforge.scenes.problem import problem_robot
from demoforge.sim import card_to_dict
from demoforge.tasks.package import package_identity, packages_of
from demoforge.tasks.scene import MaterialRef, material_ref_to_json, sidecar_path

RUN_SCHEMA = "demoforge.generate/2"  # 2: inputs recorded as resolved paths with content hashes
MERGING_DIR = ".merging"  # OUT/.merging/<split>: a split being merged, moved to OUT/<split> when complete


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


def item_dir(out: Path, k: int, name: str) -> Path:
    """Work item (or problem) `k`'s shard folder under OUT."""
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


def domain_identity(domain: str | Path) -> str | dict:
    """A library domain's name, or a domain file's identity."""
    path = Path(domain)
    if not path.is_file():
        return str(domain)
    return {"path": str(path.resolve()), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def run_record(inputs: list[str], problems: list[Problem], episodes: int, seed: int,
                settings: ExpertSettings, randomization: RandomizationSpec | None,
                videos: InlineVideo | None = None, domain: str | Path = "blocks",
                control_law: str | None = None, materials: Mapping[str, MaterialRef] | None = None) -> dict:
    """run.json: the run's inputs (resolved, hashed), robot, problems, episodes, seed and settings, and
    the task packages beyond the built-in one whose code acts the problems out (`package_identity`)."""
    card = problem_robot(problems[0])
    record = {"schema": RUN_SCHEMA, "inputs": [input_identity(p) for p in inputs],
              "domain": domain_identity(domain), "robot": card_to_dict(card),
              "problems": [p.name for p in problems],
              "episodes_per_problem": episodes, "seed": seed, "settings": asdict(settings),
              "randomization": None if randomization is None else spec_to_dict(randomization)}
    if videos is not None:
        record["videos"] = asdict(videos)
    if control_law is not None and control_law != card.controller.mode:  # the card's own law is not recorded twice
        record["control_law"] = control_law
    if materials:  # absent without --material, so such runs keep their run.json
        record["materials"] = {prop: material_ref_to_json(m) for prop, m in sorted(materials.items())}
    used = [package_identity(p) for p in packages_of(problems[0].task) if p.origin != "built-in"]
    if used:  # absent for the built-in blocks world, so such runs keep their run.json
        record["task_packages"] = used
    starts = [p.robot_start for p in problems if p.robot_start is not None]
    if starts:  # absent when every episode starts at home, so such runs keep their run.json
        record["robot_start"] = params_to_dict(starts[0])
    return record


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
