"""Closed-loop evaluation from the exact initial states of recorded episodes.

    summary = evaluate_from_dataset(load_policy("model.onnx"), "out/run/success", "out/eval", envs=4)
    summary = evaluate_from_dataset(policy, root, out, starts=parse_starts("first,random"), seed=0)

Each recorded episode is rebuilt as it started: its problem from
meta/demoforge/scenes/<problem>.json, its scene draw and physics randomization draw from
the episode's records, and its first `sim.state` row restored bit for bit (so the
physics state, not a re-sampled reset, is where the policy starts). The policy then runs
closed loop with the roll-out recorder and metrics (`policy.rollout`); every eval episode
records `demoforge/eval_source` = {root, episode, tick, start}. Episodes may also start later
in a recorded episode (`policy.starts`: a seeded random tick, or every K-th), its physics state
at that tick restored the same way; the summary then gives each start kind's figures side by
side (`by_start`).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np

from demoforge.dataset import open_dataset
from demoforge.dataset.keys import row_extra
from demoforge.execute.problems import EpisodeStart, episode_rngs
from demoforge.execute.record import run_layout
from demoforge.execute.vecenv import PddlEpisode, SimTask, goal_judges
from demoforge.policy.protocol import Policy, PolicyError
from demoforge.policy.settings import RolloutSettings
from demoforge.policy.stage import Plan, PolicyLoad, PolicyStage, run_policy_stage
from demoforge.policy.starts import FIRST, Start, by_start, by_start_markdown, goal_tick, start_ticks
from demoforge.raw import EpisodeRecord, RawError, own_states, schema
from demoforge.raw.schema import read_vocab
from demoforge.replay import record_scene, recorded_problem
from demoforge.scenes.problem import Problem
from demoforge.sim import card_to_dict, restore
from demoforge.stage.protocol import Progress


def recorded_start(root: Path, k: int, tick: int = 0, cache: dict | None = None, *,
                   index: int | None = None) -> PddlEpisode:
    """Episode `k` of `root` rebuilt in the physics state of its row `tick` (a PddlEpisode whose
    start carries the episode's seed streams and records; `index`, when given, replaces the
    start's episode index so a client can tell its runs apart)."""
    reader = open_dataset(root)
    try:
        record = EpisodeRecord.from_row(reader.episode(k))
    except RawError as exc:
        raise PolicyError(f"{root} {exc}") from None
    name, seed = record.problem, record.seed
    problem = recorded_problem(root, name, cache)
    scene, binding = record_scene(problem, record, where=f"{root} episode {k}")
    states = own_states(reader.read_episode(k, [schema.SIM_STATE])[schema.SIM_STATE], record,
                        where=f"{root} episode {k}")
    if not 0 <= tick < len(states):
        raise PolicyError(f"{root} episode {k}: tick {tick} outside 0..{len(states) - 1}")
    restore(scene.model, scene.data, states[tick])
    records = {"seed": seed, "env_package": record.env_package, "scene_draw": record.scene_draw,
               "reset_state": record.reset_state}
    rngs = episode_rngs(int(seed["run_seed"]), name, int(seed["episode"]))
    episode = int(seed["episode"]) if index is None else index
    ep = PddlEpisode(EpisodeStart(problem, episode, scene, binding, rngs, records))
    ep.source = {"root": str(root), "episode": int(k), "tick": int(tick)}
    ep.randomization = record.randomization
    return ep


def recorded_task(root: Path, k: int, tick: int, problem: Problem, *, max_ticks: int, cache: dict,
                  terminate_on_success: bool = True, index: int | None = None) -> SimTask:
    """A one-episode SimTask that starts episode `k` of `root` at row `tick`."""

    def start(episode, seed, rng):
        return recorded_start(root, k, tick, cache, index=index)

    return SimTask(f"{problem.name}#{k}@{tick}", start, max_ticks=max_ticks,
                   terminate_on_success=terminate_on_success, **goal_judges(problem.task))


def recorded_robot(root: Path, cache: dict, robot) -> None:
    """Give the problems in `cache` (recorded_problem's) the arm `robot` (a RobotCard): the one
    their scene inputs record, which it must equal, or the one a dataset that records none ran."""
    for name, problem in list(cache.items()):
        if problem.robot is not None and card_to_dict(problem.robot) != card_to_dict(robot):
            raise PolicyError(f"{root}: problem {name!r} ran with robot {problem.robot.name!r} (its "
                              f"meta/demoforge/scenes/{name}.json), not {robot.name!r}; its recorded states need that "
                              "arm: drop --robot")
        cache[name] = dataclasses.replace(problem, robot=robot)


def episode_starts(root: Path, reader, indices: list[int], starts: tuple[Start, ...],
                   seed: int) -> list[tuple[int, int, tuple[str, ...]]]:
    """(episode, tick, start labels) of every evaluation episode, in episode order; a tick that
    several starts choose (tick 0 by first and every:K) runs once and counts for each. Random
    ticks come from a Generator keyed by (seed, episode): a subset of episodes draws the same."""
    if starts == (FIRST,):
        return [(k, 0, (FIRST.label,)) for k in indices]
    vocab = (read_vocab(root) or {}).get("atoms", [])
    out = []
    for k in indices:
        record = EpisodeRecord.from_row(reader.episode(k))
        symbols = reader.read_episode(k, [schema.SYMBOLIC_STATE])[schema.SYMBOLIC_STATE]
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(k)]))
        labels: dict[int, list[str]] = {}
        for t, label in start_ticks(starts, length=len(symbols), goal_tick=goal_tick(symbols, vocab, record.goal),
                                    rng=rng):
            labels.setdefault(t, []).append(label)
        out.extend((k, t, tuple(names)) for t, names in labels.items())
    return out


def eval_plan(root: str, indices: tuple[int, ...], robot, starts: tuple[Start, ...], seed: int,
              max_ticks: int) -> tuple:
    """An evaluation's (tasks, problems, layout, queue, extra), built alike in every worker."""
    root = Path(root)
    reader = open_dataset(root)
    cache: dict = {}
    problems = [recorded_problem(root, row_extra(reader.episode(k), "problem"), cache) for k in indices]
    if robot is not None:
        recorded_robot(root, cache, robot)
        problems = [cache[p.name] for p in problems]
    layout = run_layout(list({p.name: p for p in problems}.values()), fps=reader.info.fps)
    problem_of = dict(zip(indices, problems, strict=True))
    plan = episode_starts(root, reader, list(indices), starts, seed)
    tasks = [recorded_task(root, k, tick, problem_of[k], max_ticks=max_ticks, cache=cache) for k, tick, _ in plan]
    labels = {(k, tick): names for k, tick, names in plan}

    def extra(problem, ctx):
        k, tick = ctx.source["episode"], ctx.source["tick"]
        return {"eval_source": {"root": ctx.source["root"], "episode": k, "tick": tick, "starts": labels[(k, tick)]},
                "randomization": ctx.randomization}

    return tasks, [problem_of[k] for k, _, _ in plan], layout, [(t, 0) for t in range(len(tasks))], extra


def evaluate_from_dataset(policy: Policy | str, root: str | Path, out: str | Path, *,
                          episodes: list[int] | None = None, envs: int = 1,
                          settings: RolloutSettings = RolloutSettings(), spec: str = "?",
                          progress: Progress | None = None, robot=None,
                          starts: tuple[Start, ...] = (FIRST,), seed: int = 0, look=None, workers: int = 1,
                          policy_kwargs: dict | None = None, like: str | Path | None = None) -> dict:
    """Run `policy` from the recorded states of each of `episodes` (default all) of `root` at the
    ticks `starts` chooses (default the first; `seed` draws the random ones); OUT/dataset,
    OUT/summary.json, OUT/SUMMARY.md like a roll-out (`policy`, `workers`, `progress`: as there).
    Returns the summary. `robot` (a RobotCard): the arm the episodes ran with (see
    `recorded_robot`); None = the recorded one. `look` (a `policy.looks.EvalLook`): what the
    policy's cameras see; `recorded` takes each source episode's own look draw."""
    root, out = Path(root), Path(out)
    if envs < 1 or not (isinstance(workers, int) and workers >= 1):
        raise PolicyError(f"envs {envs} and workers {workers} must be >= 1")
    reader = open_dataset(root)
    indices = reader.episode_indices if episodes is None else list(episodes)
    unknown = sorted(set(indices) - set(reader.episode_indices))
    if unknown or not indices:
        raise PolicyError(f"{root}: episodes {unknown or indices} not available; it has {reader.num_episodes}")
    load = PolicyLoad(policy, dict(policy_kwargs or {}), None if like is None else str(like)) \
        if isinstance(policy, str) else None
    args = {"root": str(root.resolve()), "indices": tuple(int(k) for k in indices), "robot": robot,
            "starts": tuple(starts),
            "seed": int(seed), "max_ticks": settings.max_ticks}
    built = eval_plan(**args)  # the inputs are read (and refused) before anything is written
    tasks, problems = built[0], built[1]
    more = None if starts == (FIRST,) else functools.partial(_by_start, starts=tuple(starts))
    # run_stage guards OUT (never over the source or --like), then the stage loads the policy
    stage = PolicyStage("eval", Plan(eval_plan, args), load, len(tasks), settings, envs, 0,
                        policy if isinstance(policy, str) else spec, f"Evaluation from {root.name}", look,
                        live=None if load is not None else policy, built=built,
                        reads=(str(root), *([] if like is None else [str(like)])),
                        names=tuple(dict.fromkeys(p.name for p in problems)), more=more)
    return run_policy_stage(stage, out, workers=workers, progress=progress)


def _by_start(dataset: Path, *, starts: tuple[Start, ...]) -> tuple[dict, str]:
    """The summary's figures per start kind, and their SUMMARY.md section."""
    table = by_start(dataset, starts)
    figures = {"by_start": table}
    for lab, t in table.items():  # the seed's names: completion_ratio_mean_first, _random
        figures[f"completion_ratio_mean_{lab.replace(':', '_')}"] = t["mean_completion"]
    return figures, by_start_markdown(table)
