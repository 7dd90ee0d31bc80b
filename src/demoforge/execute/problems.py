"""What a run executes: problems (PDDL files or scene packages) and their episodes.

A `Problem` (`demoforge.scenes.problem`) is one PDDL problem with its scene sidecar and, when it came from an
scene package, the package's profiles and reset states. `start_episode(problem,
run_seed, episode)` builds everything episode `episode` starts from: a compiled scene,
its symbol binding, the reset state loaded into `scene.data`, and the JSON records of
what was drawn. It is a pure function of (run seed, problem name, episode index), never
of the environment slot or the worker that runs it, which is what makes a run's output
independent of `--envs` and `--workers`.

Seeding: `episode_seed(run_seed, problem, episode)` is a `SeedSequence` with entropy
(run seed, crc32 of the problem name) and spawn key (episode,); its children, in order,
drive the scene draw, the reset state (and, with robot start windows, the arm's start drawn
from a child of it: `symbolic.sample_reset_state`), the skills' parameters and the physics
randomization draw.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from demoforge.errors import DemoforgeError, PlanningError, listing
from demoforge.randomize.robot_start import RobotStartParams, check_robot_start
from demoforge.randomize.scene import draw_to_dict, sample_scene
from demoforge.scenes import load_scene_package, open_profile, restore_reset
from demoforge.scenes.problem import Problem
from demoforge.scenes.scene import build_task_scene
from demoforge.sim import RobotCard, Scene, panda_card
from demoforge.symbolic import Binding, poses_to_json, sample_reset_state
from demoforge.tasks import Planner, PlanStatus, holds, load_task, make_planner, scene_from_json, sidecar_path
from demoforge.tasks.parse import name_problem

STREAMS = ("scene", "reset", "skills", "randomization")  # child streams of an episode seed, in order


class ExecuteError(DemoforgeError):
    """A run cannot be set up or continued (bad inputs, a changed run folder)."""


def load_problems(paths: list[str | Path], *, domain: str | Path = "blocks",
                  robot: RobotCard | None = None, robot_start: RobotStartParams | None = None) -> list[Problem]:
    """Problems from PDDL files (each with its `<stem>.scene.json` sidecar) and environment
    package folders (all their problems), in the order given; every bad path reported at once.

    `robot`: the arm of the PDDL problems' scenes (None: the built-in Panda); a package's scenes
    have the arm it was built with, and a `robot` other than that one is refused. `robot_start`:
    the windows each PDDL episode's arm start is drawn from (None: home); a package's reset
    states hold the starts it was built with, so windows given with one are refused."""
    # One function: one loop over the given paths (package folder or PDDL file with its sidecar) that
    # collects every bad path's message into one list, so all are reported at once.
    out: list[Problem] = []
    problems: list[str] = []
    if robot_start is not None:
        check_robot_start(robot_start)
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            try:
                pkg = load_scene_package(path)
            except DemoforgeError as exc:
                problems.append(str(exc))
                continue
            built = pkg.manifest.robot or panda_card()
            if robot_start is not None:
                problems.append(f"{str(path)!r}: a scene package's reset states hold the robot starts it was "
                                "built with; drop --robot-start, or build the package with `demoforge scenes build "
                                "--robot-start`")
                continue
            if robot is not None and robot != built:
                problems.append(f"{str(path)!r}: the scene package was built for robot {built.name!r}, not "
                                f"{robot.name!r}; drop --robot, or rebuild the package with `demoforge scenes build "
                                f"--robot {robot.name}`")
                continue
            for p in pkg.problems:
                text = (pkg.root / p.entry.name / "problem.pddl").read_text(encoding="utf-8")
                root = str(path.resolve())  # recorded: the same for every spelling of the path
                out.append(Problem(p.entry.name, p.task, p.params, text, root, p, root, built))
            continue
        if not path.is_file():
            problems.append(f"{str(path)!r}: neither a PDDL problem file nor a scene package folder")
            continue
        sidecar = sidecar_path(path)
        if not sidecar.is_file():
            problems.append(f"{str(path)!r}: no scene sidecar {str(sidecar)!r} (generate problems with "
                            "`demoforge tasks gen`, or build a scene package)")
            continue
        try:
            task = load_task(path, domain)
            params = scene_from_json(sidecar.read_text(encoding="utf-8"), file=str(sidecar))
        except DemoforgeError as exc:
            problems.append(str(exc))
            continue
        except UnicodeDecodeError as exc:
            problems.append(f"{str(sidecar)!r}: not UTF-8 text (byte {exc.object[exc.start:exc.start + 1]!r} at offset "
                            f"{exc.start}); save it as UTF-8")
            continue
        out.append(Problem(task.name, task, params, path.read_text(encoding="utf-8"), str(path.resolve()),
                           robot=robot or panda_card(), robot_start=robot_start))
    seen: dict[str, str] = {}
    for p in out:
        if (bad := name_problem(p.name, p.source)) is not None:
            problems.append(bad)
        if p.name in seen:
            problems.append(f"problem name {p.name!r} appears twice ({seen[p.name]} and {p.source}); names must be unique")
        seen[p.name] = p.source
    if not out and not problems:
        problems.append("no problems given")
    if problems:
        raise ExecuteError("cannot load the run's problems:" + listing(problems))
    return out


GOAL_CHECK_FALLBACK_S = 10.0  # Fast Downward's budget for a goal pymimir ran out of time on [s]


def goal_planner() -> Planner:
    """The chain `demoforge tasks plan` uses: pymimir answers solvable goals fast, and Fast Downward
    proves unsolvable ones pymimir's search only runs out of time on (a goal of two blocks on each
    other among four). Without Fast Downward (the `fd` extra) pymimir alone: its timeouts pass."""
    try:
        return make_planner("fallback", fallback_budget_s=GOAL_CHECK_FALLBACK_S)
    except PlanningError:
        return make_planner("pymimir")


def check_goals(problems: list[Problem], *, time_budget_s: float = 1.0) -> None:
    """Raise before a run starts if a problem's goal already holds in its initial state (every
    episode would be a one-frame "success") or a planner proves it unreachable (every episode
    would fail at planning). A planner that only runs out of time is not a verdict: it passes."""
    bad = []
    for p in problems:
        if holds(p.task, p.task.goal, frozenset(p.task.init)):
            bad.append(f"{p.source}: the goal of {p.name} already holds in its initial state, so every episode would "
                       "end at its first frame; give a goal that needs work")
            continue
        result = goal_planner().plan(p.task, time_budget_s=time_budget_s)  # a fresh one: a backend caches its task
        if result.status is PlanStatus.UNSOLVABLE:
            pddl = p.source if p.package is None else str(Path(p.source) / p.name / "problem.pddl")
            bad.append(f"{p.source}: the goal of {p.name} is unsolvable from its initial state ({result.planner}: "
                       f"{result.detail}); fix the goal or the init (check with `demoforge tasks plan {pddl}`)")
    if bad:
        raise ExecuteError("cannot generate:" + listing(bad))


def check_skills(problems: list[Problem]) -> None:
    """Raise before a run starts if a problem's domain has an operator with no skill (the expert
    could not act out a plan that uses it) or a predicate some action changes with no evaluator over
    the MuJoCo state (no step could be verified), in any registered task package."""
    from demoforge.tasks.package import missing_pieces

    bad, seen = [], set()
    for p in problems:
        if p.task.domain_file in seen:
            continue
        seen.add(p.task.domain_file)
        bad += missing_pieces(p.task)
    if bad:
        raise ExecuteError("cannot generate: the domain has operators the expert cannot act out or predicates it "
                           "cannot observe (drop them from the domain, or bring their task package):" + listing(bad))


def problem_key(name: str) -> int:
    """A stable integer for a problem name (seed entropy)."""
    return zlib.crc32(name.encode("utf-8"))


def episode_seed(run_seed: int, problem: str, episode: int) -> np.random.SeedSequence:
    return np.random.SeedSequence([int(run_seed), problem_key(problem)], spawn_key=(int(episode),))


def episode_rngs(run_seed: int, problem: str, episode: int) -> dict[str, np.random.Generator]:
    """One Generator per `STREAMS` entry for the episode."""
    children = episode_seed(run_seed, problem, episode).spawn(len(STREAMS))
    return {name: np.random.default_rng(s) for name, s in zip(STREAMS, children, strict=True)}


def seed_record(run_seed: int, problem: str, episode: int) -> dict:
    """The episode's seed as recorded (`demoforge/seed`)."""
    return {"run_seed": int(run_seed), "entropy": [int(run_seed), problem_key(problem)], "spawn_key": [int(episode)],
            "episode": int(episode), "streams": list(STREAMS)}


@dataclass(frozen=True, eq=False)
class EpisodeStart:
    """A scene in the first state of one episode."""

    problem: Problem
    episode: int  # index within the problem
    scene: Scene  # compiled, `scene.data` holds the reset state (kinematics current)
    binding: Binding  # task symbols bound to `scene`
    rngs: dict[str, np.random.Generator]  # the episode's streams (see STREAMS)
    records: dict  # JSON: seed, env_package, scene_draw, reset_state


def start_episode(problem: Problem, run_seed: int, episode: int) -> EpisodeStart:
    """Build episode `episode` of `problem` (a pure function of its arguments)."""
    rngs = episode_rngs(run_seed, problem.name, episode)
    if problem.package is not None:
        profiles = problem.package.profiles
        k, i = episode % len(profiles), (episode // len(profiles)) % len(profiles[0].states)
        scene, binding = open_profile(problem.package, k)
        restore_reset(scene, profiles[k], i)
        from_package = {"package": problem.package_root, "profile": k, "reset_state": i}
        reset = profiles[k].samples[i]
        draw_record = draw_to_dict(profiles[k].entry.draw)
        if "robot_start" in reset:  # the state's own start (a package older than per-state starts has its profile's)
            draw_record["robot_start"] = reset["robot_start"]
    else:
        draw = sample_scene(problem.params, rngs["scene"])
        scene, binding = build_task_scene(problem.task, problem.params, draw, card=problem.robot)
        state = sample_reset_state(scene, binding, problem.params, draw, rngs["reset"], robot_start=problem.robot_start)
        from_package = None
        reset = {"attempts": state.attempts, "poses": poses_to_json(state.poses)}
        draw_record = draw_to_dict(dataclasses.replace(draw, robot_start=state.robot_start))
    # `env_package`: a raw dataset column, so it keeps the name datasets were written with
    records = {"seed": seed_record(run_seed, problem.name, episode), "env_package": from_package,
               "scene_draw": draw_record, "reset_state": reset}
    return EpisodeStart(problem, episode, scene, binding, rngs, records)


def start_layout_scene(problem: Problem) -> tuple[Scene, Binding]:
    """A scene of `problem` for reading its symbols and state size (profile 0, or a fixed draw)."""
    if problem.package is not None:
        return open_profile(problem.package, 0)
    draw = sample_scene(problem.params, np.random.default_rng(0))
    return build_task_scene(problem.task, problem.params, draw, card=problem.robot)
