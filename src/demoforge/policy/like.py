"""`--like DATASET`: a policy trained on a baked dataset acts under that dataset's convention and rate.

    policy = like(load_policy("module:factory"), "out/baked")   # wraps; rollout/eval run it at 60 Hz

The roll-out steps the native controller (60 Hz joint targets). Every `stride` native ticks
of a slot the wrapped policy decides (its other rows are NaN, which the protocol reads as
idle slots), and `demoforge.gym.ActionConvention.targets` turns the decision into the next
`stride` ticks' joint targets, exactly as the demoforge lerobot env executes it.

A policy says what its actions are with an optional `action_convention` attribute (see
`policy.protocol`): NATIVE ones (the expert, replay of a raw dataset) act every native tick
and, under `--like`, their command at each decision tick is taken as the convention's action
(joint_target: the target held; joint_pos: the position wanted; joint_vel: the velocity
toward it), as a perfect imitator of that dataset's labels would act. A declared
`ActionConvention` (replay of a baked dataset; a policy trained on one) must be the one the
run executes: `check_convention` refuses any other rate or convention before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from demoforge.dataset.keys import STATE
from demoforge.gym.convention import BAKE_JSON, ActionConvention, from_bake
from demoforge.policy.protocol import NATIVE, EpisodeStartInfo, Policy, PolicyError, PolicySpaces


class ConventionPolicy:
    """`inner` acts at the convention's rate and in its units; this acts at the native rate in joint targets."""

    def __init__(self, inner: Policy, convention: ActionConvention, source: str = "?"):
        self.inner = inner
        self.convention = convention
        self.source = source  # the baked dataset given as --like, for messages
        self.native = getattr(inner, "action_convention", None) == NATIVE  # acts every tick in joint targets
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
        if self.native:  # every tick, so it follows its own clock; its decision-tick commands are the labels
            commands = np.asarray(self.inner.act(observations), dtype=np.float64)
            for i in deciding:
                self._plan[i] = self.convention.targets(self._label(commands[i], state[i, :n_arm]), state[i, :n_arm])
        elif deciding:
            rows = np.zeros(n, bool)
            rows[deciding] = True
            masked = {k: np.where(rows.reshape(-1, *([1] * (np.ndim(v) - 1))), v, np.nan)
                      if np.issubdtype(np.asarray(v).dtype, np.floating) else v for k, v in observations.items()}
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


    def _label(self, command: np.ndarray, q: np.ndarray) -> np.ndarray:
        """A native joint-target command as this convention's action taken with the arm at `q`."""
        if self.convention.convention != "joint_vel":
            return command  # joint_target, raw_cmd: the target; joint_pos: the position wanted
        return np.concatenate([(command[:-1] - q) * self.convention.control_freq, command[-1:]])


def like(policy: Policy, dataset: str | Path) -> ConventionPolicy:
    """`policy` acting under the convention and rate of the baked `dataset` (its meta/bake.json)."""
    return ConventionPolicy(policy, from_bake(dataset), str(Path(dataset) / BAKE_JSON))


def _says(c: ActionConvention) -> str:
    return f"{c.convention} actions at {c.control_freq} Hz"


def check_convention(policy: Policy, control_hz: float, spec: str) -> None:
    """Refuse a policy whose declared actions (`action_convention`) are not what the run executes:
    another convention or rate than --like's, a baked convention without --like, or a --like
    dataset baked from another native rate than the run's controller."""
    wrapped = isinstance(policy, ConventionPolicy)
    inner = policy.inner if wrapped else policy
    declared = getattr(inner, "action_convention", None)
    source = getattr(inner, "action_source", None) or "the policy's action_convention"
    runs = f"{_says(policy.convention)} ({policy.source}, from --like)" if wrapped \
        else f"controller commands at {control_hz:g} Hz, one per tick (no --like)"
    if wrapped and policy.convention.native_freq != control_hz:
        raise PolicyError(f"--like {policy.source}: baked from a {policy.convention.native_freq} Hz controller, but "
                          f"this run's controller ticks at {control_hz:g} Hz; use a dataset baked from a "
                          f"{control_hz:g} Hz run")
    if declared is None:
        return
    if declared == NATIVE:
        hz = getattr(inner, "action_hz", None)
        if hz is not None and hz != control_hz:
            raise PolicyError(f"policy {spec!r}: its actions are controller commands at {hz:g} Hz ({source}), but "
                              f"this run's controller ticks at {control_hz:g} Hz; they would play "
                              f"{control_hz / hz:g}x too fast")
        return
    if not isinstance(declared, ActionConvention):
        raise PolicyError(f"policy {spec!r}: action_convention {declared!r} must be {NATIVE!r}, None or a "
                          "demoforge.gym.ActionConvention (e.g. from_bake(DATASET))")
    if wrapped and (declared.convention, declared.control_freq) == (policy.convention.convention,
                                                                    policy.convention.control_freq):
        return
    fix = ("pass --like with a baked dataset of that convention and rate" +
           (f" (for replay:DATASET, DATASET itself: --like {inner.root})" if hasattr(inner, "root") else ""))
    raise PolicyError(f"policy {spec!r}: its actions are {_says(declared)} ({source}), but this run executes "
                      f"{runs}, which would play them at the wrong rate or with the wrong meaning; {fix}")
