import math
from pathlib import Path

import pytest

from demoforge.errors import DemoforgeError
from demoforge.randomize import (
    RandomizationError,
    RandomizationSpec,
    load_spec,
    spec_from_dict,
    spec_to_dict,
    spec_with_overrides,
)

EXAMPLE = Path(__file__).parents[2] / "examples" / "randomize" / "physics.yaml"


def test_default_spec_is_all_off():
    assert spec_to_dict(RandomizationSpec()) == {}


@pytest.mark.parametrize("field, value, words", [
    ("mass_scale", (1.2, 0.8), ["mass_scale", "1.2", "0.8", "swap"]),
    ("mass_scale", (0.0, 1.0), ["mass_scale", "> 0.0"]),
    ("damping_scale", (-0.5, 1.0), ["damping_scale", "-0.5", ">= 0.0"]),
    ("kp_scale", (math.nan, 1.0), ["kp_scale", "finite"]),
    ("kd_scale", (1.0,), ["kd_scale", "pair"]),
    ("camera_pos_jitter_m", -0.01, ["camera_pos_jitter_m", "-0.01", ">= 0"]),
    ("camera_rot_jitter_rad", math.nan, ["camera_rot_jitter_rad", "nan"]),
    ("camera_rot_jitter_rad", 4.0, ["camera_rot_jitter_rad", "<= 3.14"]),
    ("spawn_jitter", math.inf, ["spawn_jitter", "inf"]),
    ("gravity_jitter_mps2", "big", ["gravity_jitter_mps2", "'big'"]),
    ("friction", (0.0, 1.0), ["friction", "> 0.0"]),
    ("block_size_m", (0.05, 0.03), ["block_size_m", "swap"]),
    ("table_height_offset_m", (0.02, -0.02), ["table_height_offset_m", "swap"]),
    ("cameras", ("front", ""), ["cameras"]),
])
def test_invalid_field_is_named_with_its_value(field, value, words):
    with pytest.raises(RandomizationError) as info:
        RandomizationSpec(**{field: value})
    assert isinstance(info.value, DemoforgeError)
    for word in words:
        assert word in str(info.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(RandomizationError) as info:
        spec_from_dict({"mass_scale": [2, 1], "kd_scale": [-1, 1], "spawn_jitter": -1, "colour": 3, "gains": 1})
    text = str(info.value)
    # Unknown keys are reported first, then (once the keys are right) every bad value.
    assert "'colour'" in text and "'gains'" in text and "known keys" in text
    with pytest.raises(RandomizationError) as info:
        spec_from_dict({"mass_scale": [2, 1], "kd_scale": [-1, 1], "spawn_jitter": -1})
    text = str(info.value)
    assert "mass_scale" in text and "kd_scale" in text and "spawn_jitter" in text


def test_yaml_round_trip_and_file_named_in_errors(tmp_path):
    spec = load_spec(EXAMPLE)
    assert spec.mass_scale == (0.9, 1.1) and spec.cameras == ("front", "side") and spec.props is False
    assert spec_from_dict(spec_to_dict(spec)) == spec
    bad = tmp_path / "bad.yaml"
    bad.write_text("mass_scale: [1.1, .nan]\nspawn_jiter: 0.1\n")
    with pytest.raises(RandomizationError, match="bad.yaml") as info:
        load_spec(bad)
    assert "spawn_jiter" in str(info.value)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert load_spec(empty) == RandomizationSpec()
    bad.write_text("mass_scale: [1.1, .nan]\n")
    with pytest.raises(RandomizationError, match="mass_scale.*finite"):
        load_spec(bad)
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(RandomizationError, match="mapping"):
        load_spec(bad)


def test_command_line_overrides():
    spec = load_spec(EXAMPLE)
    out = spec_with_overrides(spec, ["kp_scale=null", "mass_scale=[0.5, 0.6]", "props=true", "cameras=[front]"])
    assert out.kp_scale is None and out.mass_scale == (0.5, 0.6) and out.props is True and out.cameras == ("front",)
    assert out.kd_scale == spec.kd_scale
    assert spec_with_overrides(spec, []) == spec
    with pytest.raises(RandomizationError, match="'oops' is not FIELD=VALUE"):
        spec_with_overrides(spec, ["oops"])
    with pytest.raises(RandomizationError, match="kp_scal'.*known keys"):
        spec_with_overrides(spec, ["kp_scal=[1, 2]"])
    with pytest.raises(RandomizationError, match="(?s)--set.*mass_scale: low 0.6 > high 0.5"):
        spec_with_overrides(spec, ["mass_scale=[0.6, 0.5]"])
