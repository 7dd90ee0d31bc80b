"""`demoforge sim lint` through typer's test runner."""

import io
import json

import mujoco
from rich.console import Console
from typer.testing import CliRunner

from demoforge.cli import sim as sim_cli
from demoforge.cli.main import app
from demoforge.sim.lint import lint_contact_stability

runner = CliRunner()

GOOD = """<mujoco><option timestep="0.002"/><worldbody><geom name="floor" type="plane" size="1 1 0.1"/>
<body name="cube" pos="0 0 0.02"><freejoint/><geom name="cube" type="box" size="0.02 0.02 0.02" mass="0.1"/></body>
</worldbody><keyframe><key name="rest" qpos="0 0 0.02 1 0 0 0"/></keyframe></mujoco>"""
# A 200 kg box on a soft contact sinks about 2.6 mm: one C002 warning.
SINKING = """<mujoco><option timestep="0.002"/><worldbody><geom name="floor" type="plane" size="1 1 0.1"/>
<body name="heavy" pos="0 0 0.05"><freejoint/><geom name="heavy" type="box" size="0.05 0.05 0.05" mass="200"
 solref="0.1 1" solimp="0.5 0.6 0.01"/></body></worldbody></mujoco>"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_clean_scene_exits_zero(tmp_path):
    result = runner.invoke(app, ["sim", "lint", str(write(tmp_path, "good.xml", GOOD))])
    assert result.exit_code == 0, result.output
    assert "no contact-stability findings" in result.stdout


def test_findings_print_plain_lines_and_exit_one(tmp_path):
    result = runner.invoke(app, ["sim", "lint", str(write(tmp_path, "sinking.xml", SINKING))])
    assert result.exit_code == 1
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("C002 warning [floor, heavy]") and "fix: stiffen the contact" in lines[0]
    assert lines[-1].endswith("sinking.xml: 1 finding (0 errors, 1 warning)")


def test_json_output_is_machine_readable(tmp_path):
    result = runner.invoke(app, ["sim", "lint", "--json", "--settle-s", "0.6", str(write(tmp_path, "s.xml", SINKING))])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["settle_s"] == 0.6 and report["thresholds"]["penetration_tol"] == 1e-3
    [finding] = report["findings"]
    assert finding["code"] == "C002" and finding["geoms"] == ["floor", "heavy"] and finding["unit"] == "m"
    assert finding["value"] > finding["threshold"]


def test_keyframe_by_name_and_unknown_keyframe(tmp_path):
    path = str(write(tmp_path, "good.xml", GOOD))
    assert runner.invoke(app, ["sim", "lint", "--keyframe", "rest", path]).exit_code == 0
    assert runner.invoke(app, ["sim", "lint", "--keyframe", "0", path]).exit_code == 0
    result = runner.invoke(app, ["sim", "lint", "--keyframe", "nope", path])
    assert result.exit_code == 2 and "['rest']" in result.stderr


def test_missing_and_invalid_files_are_clean_errors(tmp_path):
    missing = runner.invoke(app, ["sim", "lint", str(tmp_path / "absent.xml")])
    assert missing.exit_code == 2 and "absent.xml" in missing.stderr and "Traceback" not in missing.output
    assert missing.exception is None or isinstance(missing.exception, SystemExit)
    broken = write(tmp_path, "broken.xml", "<mujoco><worldbody><geom type='nonsense'/>")
    invalid = runner.invoke(app, ["sim", "lint", str(broken)])
    assert invalid.exit_code == 2 and "broken.xml" in invalid.stderr and "not a valid MJCF" in invalid.stderr
    wrong = runner.invoke(app, ["sim", "lint", str(write(tmp_path, "scene.yaml", "a: 1"))])
    assert wrong.exit_code == 2 and ".xml" in wrong.stderr


def test_terminal_output_is_a_table():
    report = lint_contact_stability(mujoco.MjModel.from_xml_string(SINKING))
    buffer = io.StringIO()
    sim_cli._print_table(Console(file=buffer, force_terminal=True, width=200), "sinking.xml", report)
    text = buffer.getvalue()
    assert "C002" in text and "floor, heavy" in text and "┃" in text
