"""The raw dataset: what execution records per tick and per episode.

A raw dataset is a LeRobot v3.0 dataset at the native control rate (60 Hz by default),
state-only (cameras are added later by the render stage), one row per control tick.
Every later stage (render, bake, doctor, replay) reads these names from here.

Per-tick features (data parquet columns):

| feature              | dtype   | shape        | meaning |
|----------------------|---------|--------------|---------|
| observation.state    | float32 | (n_arm + 1,) | achieved arm joint positions [rad] + gripper closedness [0..1] at the tick |
| action               | float32 | (n_arm + 1,) | commanded arm joint targets [rad] + commanded gripper closedness in force during the tick |
| raw_command          | float32 | (m,)         | the controller input verbatim (joint targets, or TCP delta for cartesian_delta) + gripper |
| sim.state            | float64 | (n_state,)   | MuJoCo mjSTATE_INTEGRATION snapshot at the tick (before the tick's command is applied); n_state is the run's widest problem state, an episode's row zero past its own `sim_state_width` record (`raw.episode.own_states`) |
| symbolic.state       | bool    | (n_atoms,)   | truth of each atom at the tick; names are the atoms, e.g. "(on a b)", the sorted union over the run's problems (an atom of another problem is false) |
| plan.operator        | int64   | (1,)         | index into meta/demoforge/vocab.json "operators" of the operator running (-1 = none) |
| plan.phase           | int64   | (1,)         | index into meta/demoforge/vocab.json "phases" of the skill phase running (-1 = none) |

The task string of an episode is its PDDL goal rendered in words (and the goal atoms are
in the episode record). Per-episode records live in the episodes parquet as extra
columns `demoforge/<name>` holding JSON: `demoforge.raw.episode.EpisodeRecord` is their
typed form. Dataset-level files in meta/demoforge/: `controller.json` (the control law),
`vocab.json` (operator and phase names), `provenance.json`, and per problem the scene
inputs needed to rebuild the model (`scenes/<problem>.json`: PDDL problem text, domain
name, scene sidecar; see `demoforge.raw.scene`).
"""

from __future__ import annotations

import json
from pathlib import Path

from demoforge.dataset.keys import ACTION, STATE
from demoforge.dataset.layout import DEMOFORGE_META_DIR, Feature
from demoforge.errors import DatasetError

RAW_COMMAND = "raw_command"
SIM_STATE = "sim.state"
SYMBOLIC_STATE = "symbolic.state"
OPERATOR = "plan.operator"
PHASE = "plan.phase"

CONTROLLER_META = "controller.json"
VOCAB_META = "vocab.json"
SCENES_META = "scenes"  # folder of <problem>.json: the scene inputs of each problem
CONTRACT_META = (SCENES_META, VOCAB_META, CONTROLLER_META)  # meta/demoforge entries a raw dataset is read with
CONTROLLER_PATH = f"{DEMOFORGE_META_DIR}/{CONTROLLER_META}"  # what marks a dataset as a raw demoforge one
SCENES_DIR = f"{DEMOFORGE_META_DIR}/{SCENES_META}"


class RawError(DatasetError):
    """A raw dataset lacks, or holds a bad, record that a later stage needs to read it."""


def raw_features(*, n_arm: int, n_command: int, n_state: int, atoms: list[str],
                 joint_names: list[str]) -> dict[str, Feature]:
    """The per-tick features of a raw dataset."""
    arm = list(joint_names) + ["gripper"]
    return {
        STATE: Feature("float32", (n_arm + 1,), arm),
        ACTION: Feature("float32", (n_arm + 1,), arm),
        RAW_COMMAND: Feature("float32", (n_command + 1,)),
        SIM_STATE: Feature("float64", (n_state,)),
        SYMBOLIC_STATE: Feature("bool", (len(atoms),), list(atoms)),
        OPERATOR: Feature("int64", (1,)),
        PHASE: Feature("int64", (1,)),
    }


def read_vocab(root: str | Path, *, required: bool = False) -> dict | None:
    """meta/demoforge/vocab.json of `root` ({operators, phases, atoms}); None when absent,
    unless `required`."""
    file = Path(root) / DEMOFORGE_META_DIR / VOCAB_META
    if not file.is_file():
        if required:
            raise RawError(f"{file}: missing; a raw dataset names its plan.operator and plan.phase values there")
        return None
    return json.loads(file.read_text(encoding="utf-8"))
