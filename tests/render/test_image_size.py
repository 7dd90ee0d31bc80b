"""render --image-size: one size for every look's cameras, or per camera; refused when odd or
naming a camera not rendered."""

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import open_dataset
from demoforge.render import LookError, load_look
from demoforge.render.look import parse_image_sizes, sized_look


def test_sizes_for_every_camera_and_single_ones():
    assert parse_image_sizes("96") == ((96, 96), {})
    assert parse_image_sizes("128x96, wrist=64") == ((128, 96), {"wrist": (64, 64)})
    look = sized_look(load_look("randomized:test"), (128, 96), {"wrist": (64, 64)})
    assert look.split == "test" and look.image_size("front") == (128, 96) and look.image_size("wrist") == (64, 64)
    for bad in ("95", "big", "96,64", "front=7x8"):
        with pytest.raises(LookError):
            parse_image_sizes(bad)


def test_render_writes_each_camera_at_its_size(raw, tmp_path):
    result = CliRunner().invoke(app, ["render", str(raw), "--look", "plain", "--cameras", "front,wrist",
                                      "--image-size", "64x48,wrist=32", "--episodes", "0", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    features = open_dataset(tmp_path / "r").info.features
    assert features["observation.images.front"].shape == (48, 64, 3)
    assert features["observation.images.wrist"].shape == (32, 32, 3)


def test_a_size_for_a_camera_not_rendered_is_refused(raw, tmp_path):
    result = CliRunner().invoke(app, ["render", str(raw), "--look", "plain", "--cameras", "front",
                                      "--image-size", "side=96", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "side" in result.output and "--image-size" in result.output, result.output
    assert not (tmp_path / "r").exists()


def test_run_takes_the_same_key_and_passes_it_to_its_render_stage():
    from demoforge.pipeline.config import PipelineError, config_from_dict
    from demoforge.render import resolve_looks

    for raw in ({"render": {"looks": ["plain"], "image_size": "96,wrist=64"}},
                {"image_size": "96,wrist=64", "render": {"looks": ["plain"]}}):  # nested or flat, as every run key
        look = resolve_looks(config_from_dict({"experiment_id": "x", **raw}).render).looks[0].look
        assert look.image_size("front") == (96, 96) and look.image_size("wrist") == (64, 64)
    with pytest.raises(PipelineError, match=r"image_size \(--image-size\): \['side'\] are not among the rendered"):
        config_from_dict({"experiment_id": "x", "render": {"looks": ["plain"], "image_size": "side=64"}})
