"""What every episode of a raw dataset shares, and the meta/demoforge files that record it.

`RunLayout` fixes, once per run, everything every shard must agree on: the atom names
(sorted union over the run's problems), the operator and phase vocabularies, the arm,
the control law and the physics-state width (`demoforge.execute.run_layout` builds it from
a run's problems). `write_raw_meta` writes controller.json, vocab.json, provenance.json
and the scene inputs (`demoforge.raw.schema.read_vocab` reads the vocabularies back). The file
names and features are the format's (`demoforge.raw.schema`); this module fills them from a run
that has a simulator (its control law, MuJoCo's version).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import mujoco

import demoforge
from demoforge.dataset.layout import DEMOFORGE_META_DIR, Feature, write_json_atomic
from demoforge.raw.scene import write_scene_inputs
from demoforge.raw.schema import CONTROLLER_META, VOCAB_META, raw_features
from demoforge.replay import scene_inputs
from demoforge.scenes.problem import Problem
from demoforge.sim import ControlLaw
from demoforge.sim.controllers import command_size
from demoforge.tasks.pddl_text import Atom, format_atom

PROVENANCE_META = "provenance.json"
# how an episode narrower than the dataset's sim.state fills its rows (raw.episode.own_states)
SIM_STATE_PADDING = "zeros past each episode's demoforge/sim_state_width"


@dataclass(frozen=True, eq=False)
class RunLayout:
    """What all episodes of a run share."""

    atoms: tuple[str, ...]  # symbolic.state names, e.g. "(on a b)", sorted
    operators: tuple[str, ...]  # plan.operator vocabulary, sorted
    phases: tuple[str, ...]  # plan.phase vocabulary (skills.PHASES)
    joint_names: tuple[str, ...]  # arm joints
    law: ControlLaw  # the run's control law (the robot card's gains; joint_position or cartesian_delta)
    n_state: int  # sim.state width: the largest state size of the problems (narrower episodes zero padded)
    fps: int  # control and recording rate [Hz]
    robot_type: str | None = None  # info.json robot_type: the robot card's name

    def __post_init__(self):
        object.__setattr__(self, "_atom_col", {a: k for k, a in enumerate(self.atoms)})
        object.__setattr__(self, "_op_col", {o: k for k, o in enumerate(self.operators)})

    def atom_column(self, atom: Atom) -> int | None:
        return self._atom_col.get(format_atom(atom))

    def operator_index(self, name: str) -> int:
        return self._op_col[name]

    def features(self) -> dict[str, Feature]:
        n = len(self.joint_names)
        return raw_features(n_arm=n, n_command=command_size(self.law, n), n_state=self.n_state, atoms=list(self.atoms),
                            joint_names=list(self.joint_names))

    def vocab(self) -> dict:
        return {"operators": list(self.operators), "phases": list(self.phases), "atoms": list(self.atoms)}


def write_raw_meta(root: str | Path, layout: RunLayout, problems: list[Problem], *, stage: str, run: dict) -> None:
    """meta/demoforge files of a raw dataset: controller, vocab, provenance (`stage` wrote it
    with settings `run`) and scene inputs."""
    meta = Path(root) / DEMOFORGE_META_DIR
    write_json_atomic(meta / CONTROLLER_META, json.loads(layout.law.to_json()))
    write_json_atomic(meta / VOCAB_META, layout.vocab())
    write_json_atomic(meta / PROVENANCE_META, {"stage": stage, "demoforge_version": demoforge.__version__,
                                               "mujoco_version": mujoco.__version__, "run": run, "fps": layout.fps,
                                               "sim_state_width": layout.n_state,
                                               "sim_state_padding": SIM_STATE_PADDING})
    write_scene_inputs(root, [scene_inputs(p) for p in problems])
