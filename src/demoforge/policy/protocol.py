"""The policy protocol: batched `act(observations) -> actions` with a per-slot `reset`.

    policy.spaces            # PolicySpaces: what it reads and what it writes
    policy.reset(i, start)   # slot i starts an episode (an EpisodeStartInfo)
    actions = policy.act(obs)  # obs: {"observation.state": (N, n_arm + 1)}, actions: (N, n_arm + 1)

A policy may also declare `observation.images.<camera>` of shape (H, W, 3): the roll-out
then renders that camera inline (see `policy.driver`). Rows of idle slots in `obs` are NaN
and their action rows are ignored. An action row is
the arm command under the dataset's control law followed by gripper closedness [0..1].
`check_spaces` compares a policy's declared spaces with the env's before any episode
runs and reports every mismatch at once.

Optionally a policy says what its actions are, so no run executes them at another rate or
meaning (`policy.like.check_convention`): `action_convention` = NATIVE (the controller's own
commands, one per control tick, as the expert and replay of a raw dataset act; `action_hz`
[Hz] when they were recorded at a fixed rate), or a `demoforge.gym.ActionConvention` (the
labels of a baked dataset: a policy trained on one sets `from_bake(DATASET)`, and runs only
under `--like` of that convention and rate); absent or None: it acts as the run asks.
`action_source`, optional, says where that is recorded (for messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from demoforge.dataset.keys import STATE
from demoforge.errors import DemoforgeError


NATIVE = "native"  # action_convention of a policy commanding the controller directly, every tick


class PolicyError(DemoforgeError):
    """A policy cannot be loaded, does not fit the env, or produced an invalid action."""


@dataclass(frozen=True)
class PolicySpaces:
    """Observation and action shapes, per env (no batch axis)."""

    observation: Mapping[str, tuple[int, ...]]  # observation key -> shape, e.g. {"observation.state": (8,)}
    action: tuple[int, ...]  # action shape, e.g. (8,) = 7 arm joints + gripper
    names: Mapping[str, Any] = field(default_factory=dict)  # optional: feature names, for humans


@dataclass(frozen=True, eq=False)
class EpisodeStartInfo:
    """What a policy is told when one of its slots starts an episode."""

    problem: Any  # execute.Problem being run
    episode: int  # episode index within the problem
    context: Any  # the env's context of the slot (execute.PddlEpisode: scene, binding, start)
    env: Any  # the VecSimEnv (the expert adapter reads it; learned policies ignore it)
    layout: Any  # execute.RunLayout of the run


@runtime_checkable
class Policy(Protocol):
    """A batched policy (plug-in point: rollout, eval)."""

    spaces: PolicySpaces

    def reset(self, slot: int, start: EpisodeStartInfo) -> None:
        """Slot `slot` starts a new episode (drop that slot's memory)."""

    def act(self, observations: Mapping[str, np.ndarray]) -> np.ndarray:
        """(N, *action) actions for (N, ...) observations."""


def env_spaces(n_arm: int) -> PolicySpaces:
    """The spaces a state-only VecSimEnv of an `n_arm`-joint arm offers and accepts."""
    return PolicySpaces({STATE: (n_arm + 1,)}, (n_arm + 1,))


def check_spaces(policy: PolicySpaces, env: PolicySpaces, *, where: str = "policy") -> None:
    """Raise PolicyError listing every observation the env cannot give and an action shape mismatch."""
    problems = []
    for key, shape in sorted(policy.observation.items()):
        have = env.observation.get(key)
        if have is None:
            problems.append(f"observation {key!r}: the env offers no such observation "
                            f"(it offers {sorted(env.observation)})")
        elif tuple(have) != tuple(shape):
            problems.append(f"observation {key!r}: policy expects shape {tuple(shape)}, env gives {tuple(have)}")
    if tuple(policy.action) != tuple(env.action):
        problems.append(f"action: policy writes shape {tuple(policy.action)}, env takes {tuple(env.action)} "
                        "(arm command under the control law + gripper closedness)")
    if problems:
        raise PolicyError(f"{where} does not fit the env:\n  " + "\n  ".join(problems))


def check_actions(actions: np.ndarray, active: np.ndarray, shape: tuple[int, ...], *,
                  where: str = "policy") -> np.ndarray:
    """The actions as float64 (N, *shape); non-finite values or a gripper outside [0, 1] on an
    active slot are errors (never clamped)."""
    a = np.asarray(actions, dtype=np.float64)
    n = len(active)
    if a.shape != (n, *shape):
        raise PolicyError(f"{where}: act returned shape {a.shape}, expected {(n, *shape)}")
    rows = a[active]
    bad = ~np.isfinite(rows).all(axis=1)
    grip = rows[:, -1]
    out = (grip < 0.0) | (grip > 1.0)
    if bad.any() or out.any():
        slots = np.flatnonzero(active)
        raise PolicyError(f"{where}: invalid actions: non-finite in slots {slots[bad].tolist()}, gripper closedness "
                          f"outside [0, 1] in slots {slots[out & ~bad].tolist()} "
                          f"(values {grip[out & ~bad].tolist()[:5]}); the policy must output closedness in [0, 1]")
    return a
