"""Checks of the policy plug-in point: a `load_policy` spec or a factory of `Policy`s, rolled out
on one problem."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from demoforge.determinism.core import CheckReport, DeterminismError, Harness, fail, first_difference
from demoforge.dataset import open_dataset
from demoforge.policy import EpisodeStartInfo, Policy, RolloutSettings, load_policy, rollout


class _Watched:
    """A policy seen from outside: every action it returns is kept, and an `act` that writes into
    its observations is an error. Everything else is the policy's own."""

    def __init__(self, inner: Policy, plugin: str):
        self._inner, self._plugin = inner, plugin
        self.actions: list[np.ndarray] = []

    @property
    def spaces(self):
        return self._inner.spaces

    def __getattr__(self, name: str):  # optional hooks (bind_action_width) stay visible to the roll-out
        return getattr(self._inner, name)

    def reset(self, slot: int, start: EpisodeStartInfo) -> None:
        self._inner.reset(slot, start)

    def act(self, observations: Mapping[str, np.ndarray]) -> np.ndarray:
        given = {k: np.array(v, copy=True) for k, v in observations.items()}
        actions = self._inner.act(observations)
        diff = first_difference(given, {k: np.asarray(v) for k, v in observations.items()}, "observations")
        if diff is not None:
            raise fail(self._plugin, f"act() wrote into its observations at tick {len(self.actions)}: {diff}",
                       "copy an observation before changing it")
        self.actions.append(np.array(actions, dtype=np.float64, copy=True))
        return actions


def _factory(policy: str | Callable[[], Policy]) -> tuple[str, Callable[[], Policy]]:
    if isinstance(policy, str):
        return f"policy {policy!r}", lambda: load_policy(policy)
    if hasattr(policy, "act") and not isinstance(policy, type):
        raise DeterminismError(f"check_policy needs a factory, got the policy {policy!r}: each run needs a new one "
                               "(a policy keeps per-slot memory); pass a load_policy spec or e.g. `lambda: MyPolicy()`")
    if not callable(policy):
        raise DeterminismError(f"cannot check {policy!r} as a policy: pass a load_policy spec or a factory")
    return f"policy {getattr(policy, '__name__', repr(policy))}", policy


def _dataset(root: Path) -> dict:
    """Every data column of every episode (video features left out: their frames follow from the state)."""
    reader = open_dataset(root)
    keys = [k for k, f in reader.info.features.items() if f.dtype != "video"]
    return {f"episode {i}": reader.read_episode(i, keys) for i in reader.episode_indices}


def check_policy(policy: str | Callable[[], Policy], problem: str | Path, *, seed: int = 0, episodes: int = 1,
                 envs: int = 1, max_ticks: int = 60, workdir: str | Path | None = None) -> CheckReport:
    """Roll out a new policy from `policy` (a `load_policy` spec, or a factory) on `problem` (a PDDL
    problem file or scene package, as `rollout` takes) for `episodes` episodes of at most `max_ticks`
    ticks on `envs` envs, twice from `seed`: every action and every recorded column must be
    identical, and no `act` may write into its observations. Roll-outs go under `workdir` (default:
    a temporary folder, removed after)."""
    plugin, make = _factory(policy)
    problem = Path(problem)
    given = problem.read_bytes() if problem.is_file() else None
    with tempfile.TemporaryDirectory(prefix="demoforge-check-", dir=workdir) as tmp:
        harness = Harness(plugin, lambda s: None)

        def run(s: int) -> dict:
            watched = _Watched(make(), plugin)
            out = Path(tmp) / f"run{harness.runs}"
            summary = rollout(watched, [problem], out, episodes=episodes, envs=envs, seed=s,
                              settings=RolloutSettings(max_ticks=max_ticks), spec=plugin)
            return {"actions": watched.actions, "dataset": _dataset(out / "dataset"), "summary": summary["overall"]}

        harness.run = run
        harness.same_seed(seed)
        harness.passed.append("act() never writes into its observations")
    if given is not None:
        harness.unchanged(f"problem file {problem.name}", given, problem.read_bytes())
    harness.notes.append("the policy protocol passes no seed: a policy that draws must derive its Generator from the "
                         "episode reset() tells it about (EpisodeStartInfo), so the env seed was not varied")
    return harness.report()
