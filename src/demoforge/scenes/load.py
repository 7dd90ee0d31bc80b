"""Reading a scene package back (format: `demoforge.scenes.package`).

`load_scene_package(path)` checks the schema and every file's checksum, reads each problem's
PDDL and sidecar and each profile's reset states. `open_profile(problem, k)` rebuilds the
profile's scene and refuses it when the model differs from the one the states were
sampled in; `restore_reset(scene, profile, i)` puts reset state i into the scene.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from demoforge.errors import DemoforgeError, listing
from demoforge.randomize.scene import draw_from_dict
from demoforge.scenes.package import (
    OLD_SCHEMAS,
    SCHEMA,
    Manifest,
    ProblemEntry,
    ProfileEntry,
    ScenePackageError,
    manifest_robot_start,
)
from demoforge.scenes.scene import build_task_scene, model_fingerprint
from demoforge.sim import RobotCard, Scene, card_from_dict, restore, state_size
from demoforge.symbolic.binding import Binding, Tolerances
from demoforge.tasks.parse import Task, parse_task
from demoforge.tasks.scene import SceneParams, scene_from_json


@dataclass(frozen=True, eq=False)
class SceneProfile:
    """One scene profile and its reset states."""

    entry: ProfileEntry  # manifest entry: draw, fingerprint, lint findings
    states: np.ndarray  # (K, state_size) float64 physics snapshots
    samples: tuple[dict, ...]  # per state: seed key, attempts, sampled poses (reset_states.json)


@dataclass(frozen=True, eq=False)
class SceneProblem:
    """One problem of a package, parsed."""

    entry: ProblemEntry  # manifest entry
    task: Task  # parsed problem (from the package's copies)
    params: SceneParams  # its scene sidecar
    profiles: tuple[SceneProfile, ...]  # by index
    robot: RobotCard | None = None  # the package's robot card; None = the built-in Panda


@dataclass(frozen=True, eq=False)
class ScenePackage:
    """A loaded scene package."""

    root: Path  # package folder
    manifest: Manifest  # manifest.json
    problems: tuple[SceneProblem, ...]  # by name

    def problem(self, name: str) -> SceneProblem:
        """The problem called `name`; the error lists the package's problems."""
        for p in self.problems:
            if p.entry.name == name:
                return p
        raise ScenePackageError(f"{self.root}: no problem {name!r}; problems: {[p.entry.name for p in self.problems]}")


def _manifest(data: dict, file: str) -> Manifest:
    if not isinstance(data, dict) or data.get("schema") not in (SCHEMA, *OLD_SCHEMAS):
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ScenePackageError(f"{file}: schema {got!r}; this demoforge reads "
                                f"{', '.join(repr(s) for s in (SCHEMA, *OLD_SCHEMAS))}")
    try:
        problems = tuple(
            ProblemEntry(
                name=str(p["name"]), source=str(p["source"]), sha256=tuple(sorted(p["sha256"].items())),
                profiles=tuple(
                    ProfileEntry(int(q["index"]), str(q["path"]), draw_from_dict(q["draw"], file=file),
                                 str(q["model_fingerprint"]), int(q["state_size"]), int(q["reset_states"]),
                                 tuple(q["findings"]))
                    for q in p["profiles"]
                ),
            )
            for p in data["problems"]
        )
        robot = None if data.get("robot") is None else card_from_dict(data["robot"], where=f"{file}: robot")
        return Manifest(str(data["schema"]), int(data["seed"]), int(data["reset_states"]), int(data["profiles"]),
                        str(data["demoforge_version"]), str(data["mujoco_version"]), problems, robot,
                        manifest_robot_start(data, file))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ScenePackageError(f"{file}: malformed manifest: {type(exc).__name__}: {exc}") from None
    except DemoforgeError as exc:
        raise ScenePackageError(f"malformed manifest: {exc}") from None


def load_scene_package(path: str | Path) -> ScenePackage:
    """Read and verify a package; every checksum mismatch is reported at once."""
    root = Path(path)
    file = root / "manifest.json"
    if not file.is_file():
        raise ScenePackageError(f"{str(root)!r} is not a scene package: no manifest.json (build one with "
                              "`demoforge scenes build`)")
    try:
        manifest = _manifest(json.loads(file.read_text(encoding="utf-8")), str(file))
    except json.JSONDecodeError as exc:
        raise ScenePackageError(f"{file}:{exc.lineno}: not JSON: {exc.msg}") from None
    problems = []
    for entry in manifest.problems:
        for rel, digest in entry.sha256:
            f = root / entry.name / rel
            if not f.is_file():
                problems.append(f"{f}: listed in the manifest but missing")
            elif hashlib.sha256(f.read_bytes()).hexdigest() != digest:
                problems.append(f"{f}: sha256 differs from the manifest (the file was changed after the build)")
    if problems:
        raise ScenePackageError(f"scene package {str(root)!r} is damaged:" + listing(problems, indent=""))
    loaded = []
    for entry in manifest.problems:
        folder = root / entry.name
        domain = (folder / "domain.pddl").read_text(encoding="utf-8")
        task = parse_task((folder / "problem.pddl").read_text(encoding="utf-8"), domain_text=domain,
                          problem_file=str(folder / "problem.pddl"), domain_file=str(folder / "domain.pddl"))
        params = scene_from_json((folder / "scene.json").read_text(encoding="utf-8"), file=str(folder / "scene.json"))
        profiles = []
        for prof in entry.profiles:
            with np.load(root / prof.path / "reset_states.npz") as npz:
                states = np.array(npz["states"], dtype=np.float64)
            samples = tuple(json.loads((root / prof.path / "reset_states.json").read_text(encoding="utf-8")))
            if states.shape != (prof.reset_states, prof.state_size) or len(samples) != prof.reset_states:
                raise ScenePackageError(f"{root / prof.path}: states {states.shape} and {len(samples)} samples, the "
                                      f"manifest says ({prof.reset_states}, {prof.state_size})")
            profiles.append(SceneProfile(prof, states, samples))
        loaded.append(SceneProblem(entry, task, params, tuple(profiles), manifest.robot))
    return ScenePackage(root, manifest, tuple(loaded))


def open_profile(problem: SceneProblem, k: int, *, tolerances: Tolerances = Tolerances()) -> tuple[Scene, Binding]:
    """Rebuild profile `k`'s scene and bind the task's symbols; refuses a model that differs."""
    if not 0 <= k < len(problem.profiles):
        raise ScenePackageError(f"problem {problem.entry.name!r} has profiles 0..{len(problem.profiles) - 1}, not {k}")
    profile = problem.profiles[k]
    scene, binding = build_task_scene(problem.task, problem.params, profile.entry.draw, card=problem.robot,
                                      tolerances=tolerances)
    if model_fingerprint(scene.model) != profile.entry.model_fingerprint or \
            state_size(scene.model) != profile.entry.state_size:
        raise ScenePackageError(
            f"profile {k} of {problem.entry.name!r} rebuilds to a different model than its reset states were "
            "sampled in (scene builder or MuJoCo changed); rebuild the package with `demoforge scenes build`"
        )
    return scene, binding


def restore_reset(scene: Scene, profile: SceneProfile, index: int) -> None:
    """Put reset state `index` of `profile` into `scene.data`."""
    if not 0 <= index < len(profile.states):
        raise ScenePackageError(f"profile {profile.entry.index} has reset states 0..{len(profile.states) - 1}, "
                              f"not {index}")
    restore(scene.model, scene.data, profile.states[index])
