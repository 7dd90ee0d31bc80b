"""The per-episode record of a raw dataset, typed: `EpisodeRecord` and its `FailureCause`.

In the dataset each field is one episodes-parquet column `demoforge/<field>` holding JSON
(`to_extras()` gives the writer's `extra`, `from_row()` reads an episode row back). Records
that later stages add (render's `look`, bake's `bake_source`, a roll-out's metrics, ...)
ride along in `more`, verbatim.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from demoforge.dataset.keys import EXTRA_PREFIX, episode_extras
from demoforge.raw.schema import RawError


class FailureKind(str, enum.Enum):
    """Why an episode failed."""

    PLANNING = "planning"  # the symbolic planner found no plan (or ran out of budget)
    IK = "ik"  # a skill's target had no inverse-kinematics solution
    COLLISION = "collision"  # a skill's path collides
    PHYSICS = "physics"  # the simulated effect differs from the operator's (a drop, a topple, a goal not holding)
    TIMEOUT = "timeout"  # the episode ran past its time limit


@dataclass(frozen=True)
class FailureCause:
    """What ended a failed episode (`demoforge/failure`)."""

    kind: FailureKind
    message: str  # what happened, for people
    skill: str | None = None  # the PDDL operator whose skill failed (None: before or after any step)
    args: tuple[str, ...] | None = None  # that operator's arguments
    step: int | None = None  # index of the step in the executed plan
    predicate: str | None = None  # the atom found wrong, e.g. "(on a b)", when one was

    def to_json(self) -> dict[str, Any]:
        return {"skill": self.skill, "args": None if self.args is None else list(self.args), "step": self.step,
                "predicate": self.predicate, "kind": self.kind.value, "message": self.message}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "demoforge/failure") -> FailureCause:
        kinds = [k.value for k in FailureKind]
        if data.get("kind") not in kinds:
            raise RawError(f"{where}: failure kind {data.get('kind')!r} is not one of {kinds}")
        args = data.get("args")
        return cls(FailureKind(data["kind"]), str(data.get("message", "")), data.get("skill"),
                   None if args is None else tuple(args), data.get("step"), data.get("predicate"))


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode's records: where it came from, what ran, how it ended."""

    problem: str  # problem name; scene inputs in meta/demoforge/scenes/<problem>.json
    seed: dict  # the episode's seed entropy (run seed, problem key, episode index, streams)
    scene_draw: dict  # the scene draw (block sizes, table offset, friction, robot start)
    env_package: dict | None = None  # scene package path, profile and reset-state index used; None: sampled
    #                                  (a dataset column: it keeps the name it was written under)
    reset_state: dict | None = None  # what the reset sampler placed (poses), for people; sim.state row 0 is exact
    randomization: dict | None = None  # the physics randomization draw; None: none
    goal: tuple[str, ...] = ()  # the goal atoms, e.g. "(on a b)"
    plan: tuple[dict, ...] = ()  # the executed steps: operator, args, skill parameters, attempts, ticks
    retries: tuple[dict, ...] = ()  # per step: the failed attempts and their causes
    replans: dict = field(default_factory=lambda: {"count": 0, "why": []})  # number of re-plans and why
    outcome: str | None = None  # "success", "failure", or None (not run yet: a coverage episode)
    failure: FailureCause | None = None  # set when outcome is "failure"
    sim_state_width: int | None = None  # this episode's physics-state size; sim.state values past it are zero
    #                                     padding (a run mixing problems of several sizes); None: the whole row
    more: dict = field(default_factory=dict)  # records of other stages by name (look, bake_source, ...), verbatim

    @property
    def success(self) -> bool:
        return self.outcome == "success"

    def to_extras(self) -> dict[str, Any]:
        """The writer's `extra`: one JSON value per field (and per entry of `more`)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "more"}
        out.update(goal=list(self.goal), plan=list(self.plan), retries=list(self.retries),
                   failure=None if self.failure is None else self.failure.to_json())
        clash = sorted(set(out) & set(self.more))
        if clash:
            raise RawError(f"EpisodeRecord.more repeats fields {clash}; set them as fields")
        return {**out, **self.more}

    @classmethod
    def from_extras(cls, extras: Mapping[str, Any], *, where: str = "episode") -> EpisodeRecord:
        """From decoded records by name (`DatasetWriter.episode_extras`, `episode_extras(row)`)."""
        names = {f.name for f in fields(cls)} - {"more"}
        missing = [n for n in ("problem", "seed", "scene_draw") if extras.get(n) is None]
        if missing:
            raise RawError(f"{where}: no {', '.join(EXTRA_PREFIX + n for n in missing)} record; "
                           "not a raw demoforge dataset (generate, roll out or render one)")
        known = {k: v for k, v in extras.items() if k in names}
        failure = known.get("failure")
        for name in ("goal", "plan", "retries"):
            if known.get(name) is not None:
                known[name] = tuple(known[name])
            else:
                known.pop(name, None)
        if known.get("replans") is None:
            known.pop("replans", None)
        known["failure"] = None if failure is None else FailureCause.from_json(failure, where=f"{where}: failure")
        return cls(**known, more={k: v for k, v in extras.items() if k not in names})

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EpisodeRecord:
        """From an episodes-parquet row (`DatasetReader.episode`)."""
        return cls.from_extras(episode_extras(row), where=f"episode {row.get('episode_index')}")


def own_states(states: np.ndarray, record: EpisodeRecord, *, where: str = "episode") -> np.ndarray:
    """An episode's recorded sim.state rows (T, n) cut to its own physics-state width
    (`record.sim_state_width`): a dataset's sim.state is as wide as its widest problem's state,
    the rest of a narrower episode's row zeros. Rows as they are when the record gives no width."""
    states = np.asarray(states)
    width = record.sim_state_width
    if width is None:
        return states
    if not (isinstance(width, int) and 0 < width <= states.shape[-1]):
        raise RawError(f"{where}: {EXTRA_PREFIX}sim_state_width {width!r} is not a width in 1..{states.shape[-1]} "
                       "(the sim.state feature's); the record is damaged, regenerate the episode")
    if np.any(states[..., width:]):
        raise RawError(f"{where}: sim.state holds non-zero values past the episode's width {width} "
                       f"({EXTRA_PREFIX}sim_state_width); the padding or the record is damaged, regenerate the episode")
    return states[..., :width]
