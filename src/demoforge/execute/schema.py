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
| sim.state            | float64 | (n_state,)   | MuJoCo mjSTATE_INTEGRATION snapshot at the tick (before the tick's command is applied) |
| symbolic.state       | bool    | (n_atoms,)   | truth of each atom at the tick; names are the atoms, e.g. "(on a b)", the sorted union over the run's problems (an atom of another problem is false) |
| plan.operator        | int64   | (1,)         | index into meta/demoforge/vocab.json "operators" of the operator running (-1 = none) |
| plan.phase           | int64   | (1,)         | index into meta/demoforge/vocab.json "phases" of the skill phase running (-1 = none) |

The task string of an episode is its PDDL goal rendered in words (and the goal atoms are
in the episode record). Per-episode records live in the episodes parquet as extra
columns `demoforge/<name>` holding JSON (see `EPISODE_EXTRAS`). Dataset-level files in
meta/demoforge/: `controller.json` (the control law), `vocab.json` (operator and phase
names), `provenance.json`, and per problem the scene inputs needed to rebuild the model
(`scenes/<problem>.json`: PDDL problem text, domain name, scene sidecar).
"""

from __future__ import annotations

from demoforge.dataset.layout import Feature

STATE = "observation.state"
ACTION = "action"
RAW_COMMAND = "raw_command"
SIM_STATE = "sim.state"
SYMBOLIC_STATE = "symbolic.state"
OPERATOR = "plan.operator"
PHASE = "plan.phase"

CONTROLLER_META = "controller.json"
VOCAB_META = "vocab.json"

# Per-episode extra columns (JSON in `demoforge/<name>`):
EPISODE_EXTRAS = {
    "seed": "the episode's seed entropy (run seed, problem, episode index)",
    "problem": "problem name; scene inputs in meta/demoforge/scenes/<problem>.json",
    "env_package": "env package path and profile / reset-state index used, or null",
    "scene_draw": "the scene draw (block sizes, table offset, friction, robot start) as JSON",
    "randomization": "the physics randomization draw (or null)",
    "reset_state": "what the reset sampler placed (poses), for humans; sim.state row 0 is exact",
    "goal": "the goal atoms",
    "plan": "the executed operator sequence, with each skill's sampled parameters",
    "retries": "per step: attempts and their failure causes",
    "replans": "number of re-plans and why",
    "outcome": "'success' or 'failure'",
    "failure": "for failures: {skill, step, predicate, kind} with kind in planning|ik|collision|physics|timeout",
}


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
