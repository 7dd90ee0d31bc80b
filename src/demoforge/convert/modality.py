"""GR00T's meta/modality.json: named parts of the state and action vectors, the video key map.

GR00T's LeRobot loader reads this file to slice `observation.state` and `action` into
body parts and to find camera streams and the task annotation by short names.
"""

from __future__ import annotations

from typing import Any

from demoforge.dataset.keys import ACTION, STATE, camera_of

MODALITY_PATH = "meta/modality.json"


def modality_json(state_parts: dict[str, tuple[int, int]], action_parts: dict[str, tuple[int, int]],
                  video_keys: list[str]) -> dict[str, Any]:
    """The modality.json object for one baked dataset."""
    return {
        "state": {name: {"start": s, "end": e, "original_key": STATE}
                  for name, (s, e) in state_parts.items()},
        "action": {name: {"start": s, "end": e, "original_key": ACTION} for name, (s, e) in action_parts.items()},
        "video": {camera_of(k): {"original_key": k} for k in video_keys},
        "annotation": {"human.task_description": {"original_key": "task_index"}},
    }
