"""render --reference-video: each episode records its reference video path (a template over the
output and source episode indices), the template is kept in render.json, and a template naming
anything else is refused before anything is written."""

import json

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import open_dataset
from demoforge.dataset.keys import row_extra
from demoforge.dataset.layout import DEMOFORGE_META_DIR
from demoforge.render import LookError, RenderConfig, parse_look_arg, render_dataset
from demoforge.render.stage import REFERENCE_EXTRA, RENDER_META

TEMPLATE = "refs/src{source_episode:03d}/out{episode_index}.mp4"


def _render(raw, out, *extra, look="plain:2"):
    return CliRunner().invoke(app, ["render", str(raw), "--look", look, "--cameras", "front", "--image-size", "32",
                                    "--out", str(out), *extra])


def test_every_episode_records_its_reference_video(raw, tmp_path):
    result = _render(raw, tmp_path / "r", "--reference-video", TEMPLATE, "--workers", "2", look="plain:4")
    assert result.exit_code == 0, result.output
    reader = open_dataset(tmp_path / "r")
    got = [row_extra(reader.episode(i), REFERENCE_EXTRA) for i in reader.episode_indices]
    # four copies of each of the two source episodes, in canonical order, rendered as two work items
    assert got == [f"refs/src{n // 4:03d}/out{n}.mp4" for n in range(8)]
    meta = json.loads((tmp_path / "r" / DEMOFORGE_META_DIR / RENDER_META).read_text())
    assert meta["reference_video"] == TEMPLATE


def test_one_path_for_every_episode_and_none_without_the_option(raw, tmp_path):
    assert _render(raw, tmp_path / "one", "--episodes", "1", "--reference-video", "demo.mp4").exit_code == 0
    reader = open_dataset(tmp_path / "one")
    assert [row_extra(reader.episode(i), REFERENCE_EXTRA) for i in reader.episode_indices] == ["demo.mp4"] * 2
    assert _render(raw, tmp_path / "none", "--episodes", "1").exit_code == 0
    reader = open_dataset(tmp_path / "none")
    assert all(row_extra(reader.episode(i), REFERENCE_EXTRA) is None for i in reader.episode_indices)


def test_a_template_naming_another_field_is_refused(raw, tmp_path):
    for bad, why in (("refs/{episode}.mp4", "KeyError 'episode'"), ("refs/{episode_index.mp4", "ValueError"),
                     ("refs/{source_episode:q}.mp4", "ValueError")):
        result = _render(raw, tmp_path / "x", "--reference-video", bad)
        assert result.exit_code == 2, (bad, result.output)
        text = " ".join(result.output.split())
        assert why in text and "{episode_index}, {source_episode}" in text and "--reference-video" in text, text
        assert not (tmp_path / "x").exists()
    # on the command line "" and "none" mean no reference video, as for every optional value;
    # the library refuses an empty template
    with pytest.raises(LookError, match="--reference-video is empty"):
        render_dataset(raw, tmp_path / "y", RenderConfig(looks=(parse_look_arg("plain"),), reference_video=" "))
    assert not (tmp_path / "y").exists()
