"""Scene packages: everything execution needs to start episodes of some problems.

`build_scene_package(problem_paths, reset_states=K, profiles=P, seed=S, out=DIR)` writes

    DIR/manifest.json                      what is below, with checksums (schema demoforge.scenepkg/1)
    DIR/<problem>/problem.pddl             copy of the problem file
    DIR/<problem>/domain.pddl              copy of its domain
    DIR/<problem>/scene.json               copy of its scene sidecar (demoforge.tasks.scene)
    DIR/<problem>/profile-<k>/draw.json    scene profile k: a SceneDraw (demoforge.randomize.scene)
    DIR/<problem>/profile-<k>/reset_states.npz   `states`: (K, state_size) float64 snapshots
    DIR/<problem>/profile-<k>/reset_states.json  per state: its SeedSequence entropy and spawn key,
                                           attempts, sampled block poses (symbolic.poses_to_json) and
                                           `robot_start` (its drawn start, randomize.robot_start's
                                           JSON; null: home)

manifest.json (sorted keys) holds `schema`, `seed`, `reset_states` (per profile), `profiles`
(per problem), `demoforge_version`, `mujoco_version`, `robot` (the robot card every scene has,
as `demoforge.sim.card_to_dict` writes it; a manifest without it is the built-in Panda's),
`robot_start` (the windows each reset state's start was drawn from; null: home) and
`problems`: per problem its
`name`, `source` (the path it was built from), `sha256` {file in its folder: hex} and
`profiles`: [{`index`, `path`, `draw`, `model_fingerprint`, `state_size`, `reset_states`,
`findings`: [{code, severity, message, geoms, bodies, value, threshold, unit, fix}]}].

The compiled scene is stored as its inputs (PDDL + sidecar + draw), not as MJCF: the
scene builder compiles an MjSpec it does not return, the draw is a few hundred bytes
where MJCF with glyph textures is hundreds of kilobytes, and the rebuild is exact; the
manifest keeps each profile's `model_fingerprint` and `state_size`, and the loader
refuses a rebuilt model that differs (a changed builder or MuJoCo). Each profile is
linted (`lint_contact_stability`) from its first reset state: C001 refuses the profile
with the linter's fix, other findings go to the manifest. The package is written to a
temporary folder beside DIR and renamed into place, so DIR is complete or absent.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import mujoco
import numpy as np

import demoforge
from demoforge.dataset.guard import LOCK_NAME, claim_temp, overlap, release_temp
from demoforge.errors import DemoforgeError, listing
from demoforge.randomize.robot_start import (
    RobotStartParams,
    params_from_dict,
    params_to_dict,
    robot_start_problems,
    start_to_dict,
)
from demoforge.randomize.scene import SceneDraw, bake_profiles, draw_to_dict, draw_to_json
from demoforge.scenes.scene import build_task_scene, model_fingerprint
from demoforge.sim import RobotCard, card_to_dict, panda_card
from demoforge.sim.lint import lint_contact_stability
from demoforge.symbolic.reset import ResetOptions, poses_to_json, reset_rng, reset_seed_key, sample_reset_state
from demoforge.tasks.parse import load_task, name_problem
from demoforge.tasks.scene import scene_from_json, sidecar_path

SCHEMA = "demoforge.scenepkg/1"
# Read as well: the same format under the name it had when scene packages were "environment packages".
OLD_SCHEMAS = ("demoforge.envpkg/1",)


class ScenePackageError(DemoforgeError):
    """A scene package cannot be built or read."""


@dataclass(frozen=True)
class ProfileEntry:
    """One scene profile of a problem, as the manifest lists it."""

    index: int  # k in profile-<k>
    path: str  # folder relative to the package root
    draw: SceneDraw  # the scene draw the model is built from
    model_fingerprint: str  # sha256 of the compiled model's physics arrays (scenes.scene.model_fingerprint)
    state_size: int  # length of one snapshot
    reset_states: int  # snapshots in reset_states.npz
    findings: tuple[dict, ...]  # lint findings other than C001 (code, severity, message, fix, ...)


@dataclass(frozen=True)
class ProblemEntry:
    """One problem of the package."""

    name: str  # PDDL problem name, also its folder
    source: str  # the problem file it was built from
    sha256: tuple[tuple[str, str], ...]  # (file in the folder, sha256 hex), sorted
    profiles: tuple[ProfileEntry, ...]  # by index


@dataclass(frozen=True)
class Manifest:
    """manifest.json as a record."""

    schema: str  # SCHEMA (or one of OLD_SCHEMAS, as read)
    seed: int  # package seed
    reset_states: int  # reset states per profile
    profiles: int  # scene profiles per problem
    demoforge_version: str
    mujoco_version: str  # the rebuild is exact only under this version
    problems: tuple[ProblemEntry, ...]  # by name
    robot: RobotCard | None = None  # the arm of every scene; None = the built-in Panda
    robot_start: RobotStartParams | None = None  # windows of the reset states' robot starts; None = home


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _finding(f) -> dict:
    data = asdict(f)
    data["geoms"], data["bodies"] = list(f.geoms), list(f.bodies)
    return data


def _lint_at(model: mujoco.MjModel, data: mujoco.MjData) -> list:
    m = copy.copy(model)  # keyframe 0 is rewritten to the reset state; the scene's model stays as it is
    m.key_qpos[0], m.key_qvel[0], m.key_ctrl[0], m.key_time[0] = data.qpos, data.qvel, data.ctrl, 0.0
    return list(lint_contact_stability(m, keyframe=0).findings)


def _build_problem(path: Path, domain: str | Path, folder: Path, *, reset_states: int, profiles: int, seed: int,
                   robot_start: RobotStartParams | None, options: ResetOptions, robot: RobotCard | None,
                   progress: Callable[[str], None]) -> ProblemEntry:
    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        raise ScenePackageError(f"problem {str(path)!r} has no scene sidecar {str(sidecar)!r}; "
                              "generate problems with `demoforge tasks gen` or write one (see demoforge.tasks.scene)")
    task = load_task(path, domain)
    if (bad := name_problem(task.name, str(path))) is not None:  # it names the package's folders
        raise ScenePackageError(bad)
    params = scene_from_json(sidecar.read_text(encoding="utf-8"), file=str(sidecar))
    folder.mkdir()
    (folder / "problem.pddl").write_bytes(path.read_bytes())
    (folder / "domain.pddl").write_text(task.domain_text, encoding="utf-8")
    (folder / "scene.json").write_bytes(sidecar.read_bytes())
    entries = []
    for k, draw in enumerate(bake_profiles(params, profiles, seed)):
        scene, binding = build_task_scene(task, params, draw, card=robot)
        states, infos, findings = [], [], []
        for i in range(reset_states):
            r = sample_reset_state(scene, binding, params, draw, reset_rng(params, seed, k, i), options=options,
                                   robot_start=robot_start)
            states.append(r.state)
            entropy, key = reset_seed_key(params, seed, k, i)
            infos.append({"index": i, "entropy": entropy, "spawn_key": list(key), "attempts": r.attempts,
                          "poses": poses_to_json(r.poses),
                          "robot_start": None if r.robot_start is None else start_to_dict(r.robot_start)})
            if i == 0:
                findings = _lint_at(scene.model, scene.data)
        explosions = [f for f in findings if f.code == "C001"]
        if explosions:
            f = explosions[0]
            raise ScenePackageError(f"scene profile {k} of {task.name!r} explodes in the stability lint (C001): "
                                  f"{f.message}; fix: {f.fix}; draw: {draw_to_json(draw).strip()}")
        sub = folder / f"profile-{k:03d}"
        sub.mkdir()
        (sub / "draw.json").write_text(draw_to_json(draw), encoding="utf-8")
        array = np.array(states, dtype=np.float64).reshape(len(states), -1)
        with open(sub / "reset_states.npz", "wb") as fh:
            np.savez(fh, states=array)
        (sub / "reset_states.json").write_text(json.dumps(infos, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        entries.append(ProfileEntry(k, sub.relative_to(folder.parent).as_posix(), draw,
                                    model_fingerprint(scene.model), int(mujoco.mj_stateSize(
                                        scene.model, mujoco.mjtState.mjSTATE_INTEGRATION)),
                                    reset_states, tuple(_finding(f) for f in findings)))
        progress(f"{task.name}: profile {k + 1}/{profiles}, {reset_states} reset state(s), "
                 f"{len(findings)} lint finding(s)")
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    sha = tuple((p.relative_to(folder).as_posix(), _sha256(p)) for p in files)
    return ProblemEntry(task.name, str(path), sha, tuple(entries))


def manifest_to_dict(manifest: Manifest) -> dict:
    data = asdict(manifest)
    for p, problem in zip(data["problems"], manifest.problems, strict=True):
        p["sha256"] = dict(problem.sha256)
        for prof, entry in zip(p["profiles"], problem.profiles, strict=True):
            prof["draw"] = draw_to_dict(entry.draw)
    if manifest.robot is not None:
        data["robot"] = card_to_dict(manifest.robot)
    data["robot_start"] = None if manifest.robot_start is None else params_to_dict(manifest.robot_start)
    return data


def build_scene_package(
    problem_paths: Sequence[str | Path], *, reset_states: int, profiles: int, seed: int, out: str | Path,
    domain: str | Path = "blocks", robot_start: RobotStartParams | None = None,
    options: ResetOptions = ResetOptions(), progress: Callable[[str], None] = lambda line: None,
    robot: RobotCard | None = None,
) -> Manifest:
    """Write a scene package for `problem_paths` to `out` (which must not exist), its
    scenes with the arm of `robot` (None: the built-in Panda)."""
    out = Path(out)
    problems = []
    if reset_states < 1:
        problems.append(f"reset_states: {reset_states} must be >= 1")
    if profiles < 1:
        problems.append(f"profiles: {profiles} must be >= 1")
    if not problem_paths:
        problems.append("no problem files given")
    paths = [Path(p) for p in problem_paths]
    problems += [f"problem file {str(p)!r} does not exist" for p in paths if not p.is_file()]
    if out.exists():
        problems.append(f"output {str(out)!r} exists; packages are never overwritten: pick a new --out or remove it")
    if (hit := overlap(out, paths)) is not None:
        problems.append(f"output {str(out)!r} overlaps the input {str(hit)!r}; choose an --out outside the inputs")
    if robot_start is not None:
        problems += robot_start_problems(robot_start)
    if problems:
        raise ScenePackageError("cannot build the scene package:" + listing(problems, indent=""))
    tmp = out.with_name(f".{out.name}.partial")  # a fixed name: the next build of `out` removes a killed one's
    lock = claim_temp(tmp)
    try:
        entries, names = [], {}
        for path in paths:
            name = path.name.removesuffix(".pddl")
            entry = _build_problem(path, domain, tmp / f".{name}", reset_states=reset_states, profiles=profiles,
                                   seed=seed, robot_start=robot_start, options=options, robot=robot,
                                   progress=progress)
            if entry.name in names:
                raise ScenePackageError(f"problems {names[entry.name]!r} and {str(path)!r} are both named "
                                        f"{entry.name!r}")
            names[entry.name] = str(path)
            os.replace(tmp / f".{name}", tmp / entry.name)
            entries.append(_renamed(entry, f".{name}", entry.name))
        manifest = Manifest(SCHEMA, seed, reset_states, profiles, demoforge.__version__, mujoco.__version__,
                            tuple(sorted(entries, key=lambda e: e.name)), robot or panda_card(), robot_start)
        (tmp / "manifest.json").write_text(json.dumps(manifest_to_dict(manifest), indent=1, sort_keys=True) + "\n",
                                           encoding="utf-8")
        (tmp / LOCK_NAME).unlink()  # the lock is held through its open descriptor until released
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        release_temp(lock)
    return manifest


def _renamed(entry: ProblemEntry, old: str, new: str) -> ProblemEntry:
    profiles = tuple(dataclasses.replace(p, path=new + p.path[len(old):]) for p in entry.profiles)
    return dataclasses.replace(entry, profiles=profiles)


def manifest_robot_start(data: dict, file: str) -> RobotStartParams | None:
    """The `robot_start` windows of a manifest's JSON (absent in packages built before they were recorded)."""
    value = data.get("robot_start")
    return None if value is None else params_from_dict(value, where=f"{file}: robot_start")
