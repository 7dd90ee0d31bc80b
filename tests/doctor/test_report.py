"""The report renders as HTML and Markdown with its plots, and the CLI writes JSON and exits by severity."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.doctor import run_doctor, write_report
from demoforge.doctor.report import flagged_episodes
from tests.doctor import _build as b

pytest.importorskip("matplotlib")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def flawed(tmp_path_factory):
    eps = b.clean_episodes()
    eps.append({k: v[:20].copy() for k, v in b.clean_episodes((100,))[0].items()})  # D009: truncated
    eps[2]["action"][50:, 3] += 0.6  # D008
    eps[1]["action"][:] = eps[1]["action"][0]  # D005 error
    return b.write(tmp_path_factory.mktemp("flawed") / "ds", eps)


def _pngs(text: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", text)]


@pytest.mark.parametrize("suffix", [".html", ".md"])
def test_report_renders_findings_and_plots(flawed, tmp_path, suffix):
    result = run_doctor(flawed, robot="panda")
    assert flagged_episodes(result) == [1, 2, 6]
    path = write_report(result, tmp_path / f"report{suffix}")
    text = path.read_text()
    pngs = _pngs(text)
    # occupancy, lengths, and one trace per flagged episode
    assert len(pngs) == 2 + 3 and all(p.startswith(PNG_MAGIC) for p in pngs)
    for f in result.findings:
        assert f.code in text
    assert "episode 2" in text and "Joint occupancy" in text
    if suffix == ".html":
        assert text.startswith("<!doctype html>") and "<img" in text
    else:
        assert text.startswith("# Dataset doctor") and "| D008 |" in text


def test_report_rejects_unknown_suffix(flawed, tmp_path):
    with pytest.raises(Exception, match=".html or .md"):
        write_report(run_doctor(flawed, checks=["D001"]), tmp_path / "r.pdf")


def test_cli_json_and_fail_on(flawed, tmp_path):
    runner = CliRunner()
    out = tmp_path / "f.json"
    res = runner.invoke(app, ["doctor", str(flawed), "--json", str(out), "--fail-on", "error"])
    assert res.exit_code == 1, res.output  # D005 frozen actions is an error
    data = json.loads(out.read_text())
    assert data["counts"]["D005"] == 1 and data["counts"]["D008"] == 1 and data["episodes"] == 7
    assert {f["code"] for f in data["findings"]} == {"D005", "D008", "D009"}
    res = runner.invoke(app, ["doctor", str(flawed), "--checks", "D008,D009", "--fail-on", "error"])
    assert res.exit_code == 0, res.output  # warnings only
    res = runner.invoke(app, ["doctor", str(flawed), "--checks", "D008", "--fail-on", "warning"])
    assert res.exit_code == 1 and "fix:" in res.output
    res = runner.invoke(app, ["doctor", str(flawed), "--robot", "nosuchrobot"])
    assert res.exit_code == 2 and "built-ins" in res.output
    res = runner.invoke(app, ["doctor", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "no such folder" in res.output


def test_json_is_deterministic(flawed):
    a = json.dumps(run_doctor(flawed).to_json(), sort_keys=True)
    assert a == json.dumps(run_doctor(flawed).to_json(), sort_keys=True)
    assert np.isfinite(json.loads(a)["frames"])


def test_doctor_reports_progress_off_a_terminal_and_not_when_quiet(flawed):
    events = []
    run_doctor(flawed, progress=events.append)
    assert {(e.stage, e.kind, e.total) for e in events} == {("doctor", "episode", 7)}
    done = [e.done for e in events]
    assert done[-1] == 7 and done == sorted(done) and done[0] >= 1
    loud = CliRunner().invoke(app, ["doctor", str(flawed), "--checks", "D009"])
    assert loud.exit_code == 0, loud.output
    assert "doctor: 7/7 episodes" in loud.stderr and "took" in loud.stderr
    assert "doctor:" not in loud.stdout  # the findings stay on stdout, the progress on stderr
    quiet = CliRunner().invoke(app, ["doctor", str(flawed), "--checks", "D009", "--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert "doctor:" not in quiet.stderr
