"""Recording episodes per the raw dataset contract (`demoforge.raw.schema`).

`run_layout` builds a run's `RunLayout` (`demoforge.execute.layout`): the atom names (sorted
union over the run's problems), the operator and phase vocabularies, the arm, the control
law (the robot card's, or the card's gains under another mode) and the physics-state width. `EpisodeRecorder` accumulates one episode's ticks (and
drops a failed attempt's ticks when the expert loop restores a snapshot).

sim.state width: a dataset feature has one shape, so a run mixing problems of several MuJoCo
state sizes (flip, pnp and unstack problems: one block, one block and two regions, three blocks)
records sim.state as wide as its widest problem's state, each row zero padded past its own
episode's size; the episode record says that size (`EpisodeRecord.sim_state_width`, read back
with `demoforge.raw.episode.own_states`). The width is fixed from the problems before any
episode runs, so it does not depend on which episodes ran where.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from demoforge.execute.layout import RunLayout
from demoforge.execute.problems import ExecuteError, Problem
from demoforge.raw import schema
from demoforge.sim import Scene, gripper_closedness, joint_targets, snapshot, state_size
from demoforge.sim.controllers import MODES
from demoforge.skills import PHASES
from demoforge.symbolic import Binding
from demoforge.symbolic.abstract import truth_of_samples
from demoforge.symbolic.predicates import sample, stack_samples
from demoforge.tasks import Task, goal_atoms
from demoforge.tasks.pddl_text import format_atom


def run_layout(problems: list[Problem], *, fps: int = 60, control_law: str | None = None) -> RunLayout:
    """The layout of a run over `problems` (builds one scene per problem to read its symbols).
    `control_law`: the mode the arm is commanded in (`demoforge.sim.controllers.MODES`); None:
    the robot card's law."""
    from demoforge.execute.problems import start_layout_scene

    if control_law is not None and control_law not in MODES:
        raise ExecuteError(f"control law {control_law!r} is not one of {list(MODES)}")
    atoms: set[str] = set()
    operators: set[str] = set()
    sizes, card = [], None
    for p in problems:
        scene, binding = start_layout_scene(p)
        atoms.update(format_atom(a) for a in binding.candidates)
        operators.update(p.task.index.actions)
        sizes.append(state_size(scene.model))
        if card is None:
            card = scene.robot.card
        elif scene.robot.card != card:
            raise ExecuteError(f"problem {p.name!r} uses robot {scene.robot.card.name!r}, others {card.name!r}; "
                               "one robot per run")
    law = card.controller
    if control_law is not None and control_law != law.mode:
        # the card's gains and gripper drive; scales are per command component, which differ by mode
        law = dataclasses.replace(law, mode=control_law, scales=())
    return RunLayout(tuple(sorted(atoms)), tuple(sorted(operators)), tuple(PHASES), tuple(card.arm_joints), law,
                     max(sizes), int(fps), card.name)


class EpisodeRecorder:
    """One episode's per-tick rows, appended tick by tick.

    With a `binding`, `record(None, ...)` takes a cheap sample of the block poses and
    contacts instead of the symbolic state; `columns()` then abstracts all sampled ticks in
    one vectorized pass (the same atoms `abstract` gives tick by tick)."""

    def __init__(self, layout: RunLayout, scene: Scene, binding: Binding | None = None):
        self.layout, self.scene, self.binding = layout, scene, binding
        self._rows: dict[str, list] = {k: [] for k in (schema.STATE, schema.ACTION, schema.RAW_COMMAND,
                                                       schema.SIM_STATE, schema.SYMBOLIC_STATE, schema.OPERATOR,
                                                       schema.PHASE)}
        self._vec: dict[frozenset, np.ndarray] = {}

    @property
    def length(self) -> int:
        return len(self._rows[schema.STATE])

    @property
    def state_width(self) -> int:
        """This episode's physics-state size (sim.state values before the run's zero padding)."""
        return state_size(self.scene.model)

    def _symbols(self, atoms: frozenset) -> np.ndarray:
        vec = self._vec.get(atoms)
        if vec is None:
            vec = np.zeros(len(self.layout.atoms), bool)
            for a in atoms:
                col = self.layout.atom_column(a)
                if col is not None:
                    vec[col] = True
            self._vec[atoms] = vec
        return vec

    def record(self, atoms: frozenset | None, command: np.ndarray, gripper: float, operator: int, phase: int) -> None:
        """The tick about to be stepped: state before the command, and the command (under the
        layout's law: joint targets, or a TCP delta whose joint targets are recorded as the action);
        `atoms` None: sampled now, abstracted in `columns()` (needs the recorder's binding)."""
        m, d, robot = self.scene.model, self.scene.data, self.scene.robot
        rows = self._rows
        obs = np.empty(len(robot.arm_qpos) + 1, np.float32)
        obs[:-1] = d.qpos[robot.arm_qpos]
        obs[-1] = gripper_closedness(robot, d.qpos)
        act = np.empty_like(obs)
        law = self.layout.law
        if law.mode == "joint_position":
            act[:-1], act[-1] = command, gripper
            raw = act
        else:  # action: the joint targets the controller turns the command into this tick
            act[:-1], act[-1] = joint_targets(m, d, robot, law, command), gripper
            raw = np.empty(len(command) + 1, np.float32)
            raw[:-1], raw[-1] = command, gripper
        rows[schema.STATE].append(obs)
        rows[schema.ACTION].append(act)
        rows[schema.RAW_COMMAND].append(raw)
        rows[schema.SIM_STATE].append(snapshot(m, d))
        if atoms is None:
            if self.binding is None:
                raise ExecuteError("EpisodeRecorder.record(None, ...) samples the symbolic state and needs a binding")
            rows[schema.SYMBOLIC_STATE].append(sample(m, d, self.binding))
        else:
            rows[schema.SYMBOLIC_STATE].append(self._symbols(atoms))
        rows[schema.OPERATOR].append(operator)
        rows[schema.PHASE].append(phase)

    def truncate(self, length: int) -> None:
        """Drop every tick from `length` on (a failed attempt, undone by a restore)."""
        for rows in self._rows.values():
            del rows[length:]

    def _symbolic_column(self) -> np.ndarray:
        rows = self._rows[schema.SYMBOLIC_STATE]
        out = np.zeros((len(rows), len(self.layout.atoms)), bool)
        sampled = [t for t, r in enumerate(rows) if not isinstance(r, np.ndarray)]
        given = [t for t, r in enumerate(rows) if isinstance(r, np.ndarray)]
        if given:
            out[given] = np.stack([rows[t] for t in given])
        if sampled:
            b = self.binding
            truth = truth_of_samples(self.scene.model, b, stack_samples([rows[t] for t in sampled]))
            cols = np.array([-1 if (c := self.layout.atom_column(a)) is None else c for a in b.candidates], np.int64)
            keep = cols >= 0
            out[np.ix_(sampled, cols[keep])] = truth[:, keep]
        return out

    def _padded_states(self) -> np.ndarray:
        """(T, layout.n_state) snapshots, zeros past this episode's own `state_width`."""
        width, n = self.state_width, self.layout.n_state
        if width > n:
            raise ExecuteError(f"episode state has {width} values, more than the run's sim.state width {n}; the run "
                               "layout was built from other problems than this episode's (build it from all of them)")
        out = np.zeros((len(self._rows[schema.SIM_STATE]), n))
        out[:, :width] = self._rows[schema.SIM_STATE]
        return out

    def columns(self) -> dict[str, np.ndarray]:
        rows = self._rows
        out = {k: np.stack(rows[k]) for k in (schema.STATE, schema.ACTION, schema.RAW_COMMAND)}
        out[schema.SIM_STATE] = self._padded_states()
        out[schema.SYMBOLIC_STATE] = self._symbolic_column()
        out[schema.OPERATOR] = np.asarray(rows[schema.OPERATOR], np.int64).reshape(-1, 1)
        out[schema.PHASE] = np.asarray(rows[schema.PHASE], np.int64).reshape(-1, 1)
        return out


_WORDS = {
    "on": lambda x, y: f"stack {x} on {y}",
    "on_table": lambda x: f"put {x} on the table",
    "clear": lambda x: f"clear {x}",
    "holding": lambda x: f"hold {x}",
    "hand_empty": lambda: "leave the hand empty",
    "face_up": lambda x, f: f"turn {x} so that its {f} face is up",
    "yaw": lambda x, a: f"rotate {x} to {a}",
    "in_region": lambda x, r: f"place {x} in the {r} region",
}


def goal_words(task: Task) -> str:
    """The goal in words, e.g. "stack white on pink, then stack pink on green"."""
    atoms = goal_atoms(task)
    if not atoms or any(a[0] not in _WORDS for a in atoms):
        return f"reach {task.index.goal_text}"
    return ", ".join(_WORDS[a[0]](*a[1:]) for a in atoms)
