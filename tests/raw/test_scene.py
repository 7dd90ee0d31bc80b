"""SceneInputs: meta/demoforge/scenes/<problem>.json written and read back without a simulator."""

from __future__ import annotations

import json

import pytest

from demoforge.raw import RawError
from demoforge.raw.scene import SCENE_SCHEMA, SceneInputs, read_scene_inputs, write_scene_inputs
from demoforge.raw.schema import SCENES_DIR

INPUTS = SceneInputs("p0", "(define (problem p0))", "(define (domain d))", "d", {"table": {"size_m": [1, 1]}},
                     "tasks/p0.pddl", {"name": "panda", "arm_joints": ["j1"]})


def test_scene_inputs_round_trip_through_their_file(tmp_path):
    write_scene_inputs(tmp_path, [INPUTS, INPUTS])  # one file per distinct problem
    file = tmp_path / SCENES_DIR / "p0.json"
    assert [f.name for f in file.parent.iterdir()] == ["p0.json"]
    assert json.loads(file.read_text())["schema"] == SCENE_SCHEMA
    assert read_scene_inputs(tmp_path, "p0") == INPUTS


def test_a_file_from_before_robot_cards_reads_as_the_built_in_arm(tmp_path):
    data = INPUTS.to_json()
    del data["robot"]
    (tmp_path / SCENES_DIR).mkdir(parents=True)
    (tmp_path / SCENES_DIR / "p0.json").write_text(json.dumps(data))
    assert read_scene_inputs(tmp_path, "p0").robot is None


def test_bad_scene_inputs_name_the_file_and_every_missing_key(tmp_path):
    with pytest.raises(RawError, match=r"p0\.json: missing; the scene inputs of problem 'p0'"):
        read_scene_inputs(tmp_path, "p0")
    (tmp_path / SCENES_DIR).mkdir(parents=True)
    (tmp_path / SCENES_DIR / "p0.json").write_bytes(b"\x00junk")
    with pytest.raises(RawError, match=r"p0\.json: not the JSON of a problem's scene inputs"):
        read_scene_inputs(tmp_path, "p0")
    (tmp_path / SCENES_DIR / "p0.json").write_text(json.dumps({"problem": "p0", "source": "x"}))
    with pytest.raises(RawError, match=r"lack \['problem_pddl', 'domain_pddl', 'domain_name', 'scene_sidecar'\]"):
        read_scene_inputs(tmp_path, "p0")

