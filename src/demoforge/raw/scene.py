"""A raw dataset's scene inputs: per problem, what rebuilds its models with a scene draw.

`meta/demoforge/scenes/<problem>.json` holds the PDDL problem and domain text, the
scene sidecar and the robot card (`SceneInputs`; `write_scene_inputs` writes them,
`read_scene_inputs` reads one back); with an episode's `scene_draw` record the scene builder, a
pure function of those, rebuilds the very model the episode was stepped in (`demoforge.replay`,
whose `recorded_problem` turns the inputs back into the problem a run executes). The robot card
is kept here as its JSON record, so the format needs no simulator. A file without `robot` was
written before cards were recorded, when every scene had the built-in arm.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demoforge.dataset.layout import write_json_atomic
from demoforge.raw.schema import SCENES_DIR, RawError

SCENE_SCHEMA = "demoforge.execute.scene/1"  # the name it was first written under; kept so old datasets read


@dataclass(frozen=True)
class SceneInputs:
    """The scene inputs of one problem: meta/demoforge/scenes/<problem>.json."""

    problem: str  # PDDL problem name (the file's stem)
    problem_pddl: str  # PDDL problem text as read
    domain_pddl: str  # PDDL domain text
    domain_name: str  # the domain's name
    scene_sidecar: dict[str, Any]  # the scene sidecar (`demoforge.tasks.scene_to_json`, parsed)
    source: str  # the file or package the problem came from
    robot: dict[str, Any] | None  # the robot card (`demoforge.sim.card_to_dict`); None: the built-in Panda

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCENE_SCHEMA, "problem": self.problem, "problem_pddl": self.problem_pddl,
                "domain_pddl": self.domain_pddl, "domain_name": self.domain_name,
                "scene_sidecar": self.scene_sidecar, "source": self.source, "robot": self.robot}

    @classmethod
    def from_json(cls, data: Any, *, file: str | Path) -> SceneInputs:
        """The inputs in `data` (a file's parsed JSON); every missing key named at once."""
        if not isinstance(data, dict):
            raise RawError(f"{file}: holds {type(data).__name__}, not the JSON object of a problem's scene inputs")
        keys = ("problem", "problem_pddl", "domain_pddl", "domain_name", "scene_sidecar", "source")
        missing = [k for k in keys if k not in data]
        if missing:
            raise RawError(f"{file}: scene inputs lack {missing}; rewrite the dataset with demoforge generate")
        return cls(**{k: data[k] for k in keys}, robot=data.get("robot"))


def write_scene_inputs(root: str | Path, inputs: Iterable[SceneInputs]) -> None:
    """Write the scene inputs of each distinct problem under `root`/meta/demoforge/scenes/."""
    folder = Path(root) / SCENES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for s in {s.problem: s for s in inputs}.values():
        write_json_atomic(folder / f"{s.problem}.json", s.to_json())


def read_scene_inputs(root: str | Path, name: str) -> SceneInputs:
    """The scene inputs of problem `name` of the raw dataset at `root`."""
    file = Path(root) / SCENES_DIR / f"{name}.json"
    if not file.is_file():
        raise RawError(f"{file}: missing; the scene inputs of problem {name!r} are needed to rebuild its model")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RawError(f"{file}: not the JSON of a problem's scene inputs ({exc}); rewrite the dataset "
                       "with demoforge generate") from None
    return SceneInputs.from_json(data, file=file)
