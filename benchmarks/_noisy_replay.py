"""A policy for bench_precision.py: replay of a baked dataset's recorded actions with the arm's
joint targets perturbed, as a learned policy's errors would perturb them.

    demoforge eval --from-dataset BAKED --like BAKED --out OUT \\
        --policy benchmarks/_noisy_replay.py:make --policy-arg dataset=BAKED --policy-arg offset=0.02

`offset` [rad]: each episode draws one constant error per arm joint, N(0, offset), added to every
action of the episode (a policy that is consistently a little off, as a regressor's average is);
`jitter` [rad]: a fresh N(0, jitter) per joint and action (a policy that wavers). The gripper
column is left as recorded. The draws are seeded by (seed, problem, episode), so a slot's noise
does not depend on which slot or worker ran it.
"""

from __future__ import annotations

import zlib

import numpy as np

from demoforge.policy.adapters import ReplayPolicy


class NoisyReplay(ReplayPolicy):
    def __init__(self, dataset: str, offset: float = 0.0, jitter: float = 0.0, seed: int = 0):
        super().__init__(dataset)
        if offset < 0 or jitter < 0:
            raise ValueError(f"offset and jitter are standard deviations [rad], >= 0; got {offset}, {jitter}")
        self.offset, self.jitter, self.seed = float(offset), float(jitter), int(seed)
        self._rng: dict[int, np.random.Generator] = {}
        self._bias: dict[int, np.ndarray] = {}

    def reset(self, slot, start) -> None:
        super().reset(slot, start)
        key = zlib.crc32(f"{self.seed}/{start.problem.name}/{start.episode}".encode())
        rng = np.random.default_rng(key)
        n_arm = self.spaces.action[0] - 1
        self._bias[slot] = rng.normal(0.0, self.offset, n_arm) if self.offset else np.zeros(n_arm)
        self._rng[slot] = rng

    def act(self, observations):
        ticks = dict(self._t)
        out = super().act(observations)
        for slot, bias in self._bias.items():
            if self._t[slot] != ticks[slot]:  # the replay moved this slot on; idle slots draw nothing
                noise = self._rng[slot].normal(0.0, self.jitter, len(bias)) if self.jitter else 0.0
                out[slot, :-1] += bias + noise
        return out


def make(dataset: str, offset: float = 0.0, jitter: float = 0.0, seed: int = 0) -> NoisyReplay:
    return NoisyReplay(dataset, offset=offset, jitter=jitter, seed=seed)
