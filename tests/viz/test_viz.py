"""viz and plot produce non-empty files with the expected frame count and size."""

import av
import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.policy import RolloutSettings, load_policy, rollout
from demoforge.viz import TileSettings, plot_episode, write_tiles
from demoforge.viz.text import burn_text, text_mask
from demoforge.viz.tiles import VizError
from tests.policy.conftest import expert_data, pnp  # noqa: F401  (session fixtures)



@pytest.fixture(scope="module")
def short(pnp, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("short") / "r"
    rollout(load_policy("tests.policy.scripted:hold"), [pnp], out, episodes=2, settings=RolloutSettings(max_ticks=12),
            spec="hold")
    return out / "dataset"


def frames(path):
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def test_tiles_are_kinds_by_cameras_with_one_frame_per_tick(short, tmp_path):
    files = write_tiles(short, tmp_path / "v", [1], TileSettings(width=64, height=48))
    assert [f.name for f in files] == ["episode_000001.mp4"]
    got = frames(files[0])
    assert len(got) == 12
    assert got[0].shape == (3 * 48, 3 * 64, 3)  # rgb, depth, segmentation x front, side, wrist
    assert got[0].std() > 10  # an image, not a blank
    two = write_tiles(short, tmp_path / "w", [0], TileSettings(width=64, height=48, cameras=("front",),
                                                                kinds=("rgb", "segmentation"), stride=3))
    got = frames(two[0])
    assert len(got) == 4 and got[0].shape == (2 * 48, 64, 3)


def test_write_tiles_reports_each_episode(short, tmp_path):
    events = []
    write_tiles(short, tmp_path / "v", [1, 0], TileSettings(width=32, height=24, cameras=("front",), kinds=("rgb",),
                                                            stride=6), progress=events.append)
    assert [(e.stage, e.kind, e.item, e.done, e.total) for e in events] == [
        ("viz", "episode", "episode 1", 1, 2), ("viz", "episode", "episode 0", 2, 2)]


def test_viz_reports_each_episode_off_a_terminal_and_nothing_when_quiet(short, tmp_path):
    args = ["viz", str(short), "--episodes", "0,1", "--cameras", "front", "--kinds", "rgb", "--width", "32",
            "--height", "24", "--stride", "6"]
    loud = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert loud.exit_code == 0, loud.output
    assert "viz: 2/2 episodes" in loud.stderr
    quiet = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b"), "--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert "viz:" not in quiet.stderr and len(list((tmp_path / "b").iterdir())) == 2


def test_bad_viz_requests_are_refused(short, tmp_path):
    with pytest.raises(VizError, match="cameras"):
        write_tiles(short, tmp_path / "v", [0], TileSettings(width=64, height=48, cameras=("nope",)))
    with pytest.raises(VizError, match="no episodes"):
        write_tiles(short, tmp_path / "v", [5])


def test_overlay_text_is_burnt_in():
    img = np.full((20, 60, 3), 128, np.uint8)
    burn_text(img, "T 12", 0, 0)
    assert text_mask("T 12").shape == (7, 24)
    assert (img[1:8, 1:25] == 255).any() and (img[0, 0] == 0).all()


def test_plot_writes_a_png_of_the_episode(expert_data, tmp_path):  # noqa: F811
    path = plot_episode(expert_data, 0, tmp_path / "p.png")
    from PIL import Image

    with Image.open(path) as im:
        assert im.size[0] >= 800 and im.size[1] >= 600
    assert path.stat().st_size > 20_000


def test_cli(short, tmp_path):
    r = CliRunner().invoke(app, ["viz", str(short), "--out", str(tmp_path / "v"), "--episodes", "0-1", "--width", "32",
                                 "--height", "24", "--kinds", "rgb"])
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "v").glob("*.mp4"))) == 2
    r = CliRunner().invoke(app, ["plot", str(short), "--episode", "1", "--out", str(tmp_path / "p.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.png").stat().st_size > 0
    bad = CliRunner().invoke(app, ["plot", str(short), "--episode", "9", "--out", str(tmp_path / "q.png")])
    assert bad.exit_code == 2


def test_a_dataset_with_camera_videos_is_tiled_from_them(pnp, tmp_path):  # noqa: F811
    rollout(load_policy("tests.policy.scripted:seeing"), [pnp], tmp_path / "r", episodes=1,
            settings=RolloutSettings(max_ticks=6), spec="seeing")
    files = write_tiles(tmp_path / "r" / "dataset", tmp_path / "v")
    got = frames(files[0])
    assert len(got) == 6 and got[0].shape == (24, 32, 3)  # one camera, rgb only, at the recorded size


def test_a_rendered_dataset_shows_rgb_depth_and_segmentation_rows(short, tmp_path):
    from demoforge.render import RenderConfig, parse_look_arg, render_dataset

    render_dataset(short, tmp_path / "rendered", RenderConfig(looks=(parse_look_arg("plain"),), cameras=("front",),
                                                              depth=True, segmentation=True))
    files = write_tiles(tmp_path / "rendered", tmp_path / "v", [0])
    got = frames(files[0])
    assert len(got) == 12
    h, w = got[0].shape[:2]
    assert h == 3 * w  # one camera, three rows (square 224 images)
    rows = got[0].reshape(3, w, w, 3)
    depth = rows[1].astype(int)
    assert np.median(np.abs(depth[..., 0] - depth[..., 2])) < 4  # grey (yuv420p bleeds colour at edges)
    assert depth.std() > 10  # spread over the scene's range, not one flat grey
