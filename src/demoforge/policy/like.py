"""`--like DATASET`: a policy trained on a baked dataset acts under that dataset's convention and rate.

    policy = like(load_policy("module:factory"), "out/baked")   # wraps; rollout/eval run it at 60 Hz

The roll-out steps the native controller (60 Hz joint targets). Every `stride` native ticks
of a slot the wrapped policy decides (its other rows are NaN, which the protocol reads as
idle slots), and `demoforge.gym.ActionConvention.targets` turns the decision into the next
`stride` ticks' joint targets, exactly as the demoforge lerobot env executes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from demoforge.gym.convention import ActionConvention, from_bake
from demoforge.policy.protocol import EpisodeStartInfo, Policy, PolicySpaces

STATE = "observation.state"


class ConventionPolicy:
    """`inner` acts at the convention's rate and in its units; this acts at the native rate in joint targets."""

    def __init__(self, inner: Policy, convention: ActionConvention):
        self.inner = inner
        self.convention = convention
        self.spaces = PolicySpaces({STATE: (), **inner.spaces.observation}, inner.spaces.action, inner.spaces.names)
        self._tick: dict[int, int] = {}
        self._plan: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def bind_action_width(self, width: int) -> None:
        if hasattr(self.inner, "bind_action_width"):
            self.inner.bind_action_width(width)
        obs = {STATE: (width,), **self.inner.spaces.observation}
        self.spaces = PolicySpaces(obs, (width,), self.inner.spaces.names)

    def reset(self, slot: int, start: EpisodeStartInfo) -> None:
        self.inner.reset(slot, start)
        self._tick[slot] = 0
        self._plan.pop(slot, None)

    def act(self, observations: Mapping[str, np.ndarray]) -> np.ndarray:
        state = np.asarray(observations[STATE])
        n, n_arm = state.shape[0], state.shape[1] - 1
        deciding = [i for i in range(n) if i in self._tick and self._tick[i] % self.convention.stride == 0
                    and np.isfinite(state[i]).all()]
        if deciding:
            rows = np.zeros(n, bool)
            rows[deciding] = True
            masked = {k: np.where(rows.reshape(-1, *([1] * (np.ndim(v) - 1))), v, np.nan)
                      if np.issubdtype(np.asarray(v).dtype, np.floating) else v for k, v in observations.items()
                      if k in self.inner.spaces.observation}
            actions = np.asarray(self.inner.act(masked), dtype=np.float64)
            for i in deciding:
                self._plan[i] = self.convention.targets(actions[i], state[i, :n_arm])
        out = np.zeros((n, n_arm + 1))
        for i in range(n):
            if i not in self._plan:
                out[i, :n_arm], out[i, -1] = state[i, :n_arm] if np.isfinite(state[i]).all() else 0.0, 0.0
                continue
            arm, grip = self._plan[i]
            k = self._tick[i] % self.convention.stride
            out[i, :n_arm], out[i, -1] = arm[k], grip[k]
            self._tick[i] += 1
        return out


def like(policy: Policy, dataset: str | Path) -> ConventionPolicy:
    """`policy` acting under the convention and rate of the baked `dataset` (its meta/bake.json)."""
    return ConventionPolicy(policy, from_bake(dataset))
