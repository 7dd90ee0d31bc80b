"""The raw dataset: the format execute writes and every later stage reads.

Below execute, render and convert (and doctor, viz, policy, pipeline), so none of them
reaches into another to read it. Modules:

- `schema`: the per-tick features and meta/demoforge files (no simulator needed)
- `episode`: `EpisodeRecord`, the typed per-episode record, and its `FailureCause`
- `scene`: the scene inputs of each problem (`SceneInputs`; the Problem rebuilt from them is
  `demoforge.replay.recorded_problem`'s)
- `envstate`: the environment state a state-based policy sees, from qpos rows

Writing the meta files from a run (`RunLayout`) is `demoforge.execute.layout`'s; replaying an
episode in the simulator is `demoforge.replay`'s; both are above this package. No module here
imports the simulator or the planner (a contract in pyproject.toml), so a reader of raw
datasets (bake of a real-robot log) loads neither.
"""

from demoforge.raw.episode import EpisodeRecord, FailureCause, FailureKind, own_states
from demoforge.raw.schema import RawError

__all__ = ["EpisodeRecord", "FailureCause", "FailureKind", "RawError", "own_states"]
