"""The look sheet: one scene under several draws of a look, as a PNG, the same bytes every time."""

import av
import numpy as np
from typer.testing import CliRunner

from demoforge.cli.main import app


def _read_png(path) -> np.ndarray:
    with av.open(str(path)) as container:
        return next(container.decode(video=0)).to_ndarray(format="rgb24")


def test_sheet_cells_are_the_draws_and_repeat_exactly(tmp_path):
    args = ["look-sheet", "--look", "randomized", "--draws", "3", "--columns", "2", "--cameras", "front"]
    first = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a.png")])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b.png")])
    assert again.exit_code == 0, again.output
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    img = _read_png(tmp_path / "a.png")
    assert img.shape == (224 * 2 + 2, 224 * 2 + 2, 3)  # 2 x 2 cells with a 2 px gap; the 4th cell blank
    cells = [img[:224, :224], img[:224, 226:], img[226:, :224]]
    assert all(c.std() > 10 for c in cells)  # scenes, not blanks
    assert np.mean(np.abs(cells[0].astype(int) - cells[1])) > 5  # draws differ
    assert (img[226:, 226:] == 0).all()


def test_sheet_refuses_an_unknown_camera(tmp_path):
    result = CliRunner().invoke(app, ["look-sheet", "--look", "plain", "--cameras", "top",
                                      "--out", str(tmp_path / "x.png")])
    assert result.exit_code == 2 and "cameras ['top'] are not in the scene" in result.output
    assert not (tmp_path / "x.png").exists()
