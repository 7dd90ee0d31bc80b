"""`bake --std-floor`: a floored meta/stats.json beside the exact statistics, and the doctor's view of it."""

import json
import shutil
from pathlib import Path

import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.doctor import run_doctor
from demoforge.errors import DemoforgeError
from demoforge.replay import EPISODE_MODELS

PROBLEM = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "stack_three-all-0000.pddl"
FLOOR = 0.01
ENV = "observation.environment_state"


@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    """(exact bake, floored bake) of one executed stack_three episode, with object poses."""
    from demoforge.execute.generate import generate

    tmp = tmp_path_factory.mktemp("std_floor")
    generate([PROBLEM], tmp / "run", episodes_per_problem=1, seed=0)
    exact = bake([tmp / "run"], tmp / "exact", BakeConfig(control_freq=15, environment_state=True),
                 models=EPISODE_MODELS)
    floored = bake([tmp / "run"], tmp / "floored", BakeConfig(control_freq=15, environment_state=True,
                                                             std_floor=FLOOR), models=EPISODE_MODELS)
    return exact, floored


def test_the_floor_widens_only_narrow_spreads_and_keeps_the_exact_statistics(baked):
    exact, floored = baked
    assert (floored / "meta/stats.exact.json").read_bytes() == (exact / "meta/stats.json").read_bytes()
    assert not (exact / "meta/stats.exact.json").exists()
    want = json.loads((exact / "meta/stats.json").read_text())
    got = json.loads((floored / "meta/stats.json").read_text())
    record = json.loads((floored / "meta/bake.json").read_text())["stats"]
    assert record["std_floor"] == FLOOR and record["exact"] == "meta/stats.exact.json"
    # the block that stays on the table never tilts: its quaternion is among the floored dims
    assert ENV in record["floored"] and len(record["floored"][ENV]) >= 3
    assert "action" in want and got["action"] == want["action"]  # the targets' spread weighs the loss: untouched
    for key, entry in want.items():
        if not key.startswith("observation.") or "std" not in entry or key not in got:
            assert got[key] == entry
            continue
        for d, (s, lo, hi) in enumerate(zip(entry["std"], entry["min"], entry["max"], strict=True)):
            moved = s < FLOOR or (hi - lo) / 2 < FLOOR
            assert moved == (d in record["floored"].get(key, [])), (key, d)
            assert got[key]["std"][d] == max(s, FLOOR)
            if (hi - lo) / 2 >= FLOOR:
                assert (got[key]["min"][d], got[key]["max"][d]) == (lo, hi)
            else:
                assert got[key]["max"][d] - got[key]["min"][d] == pytest.approx(2 * FLOOR)
                assert (got[key]["min"][d] + got[key]["max"][d]) / 2 == pytest.approx((lo + hi) / 2)
        assert got[key]["mean"] == entry["mean"] and got[key]["count"] == entry["count"]
    assert "std_floor" not in json.loads((exact / "meta/bake.json").read_text())["config"]


def test_the_doctor_checks_the_exact_statistics_and_the_floor_applied_to_them(baked, tmp_path):
    exact, floored = baked
    plain = run_doctor(exact, checks=["D004", "D011"])
    assert plain.count("D011") == 0 and plain.count("D004", "warning") >= 1
    result = run_doctor(floored, checks=["D004", "D011"])
    assert result.count("D011", "error") == 0 and result.count("D011", "info") == 1, [str(f) for f in result.findings]
    assert result.count("D004", "warning") == plain.count("D004", "warning") - 1  # the env state's is now info
    assert any(f.code == "D004" and f.severity == "info" and ENV in f.message for f in result.findings)

    tampered = tmp_path / "tampered"
    shutil.copytree(floored, tampered)
    stats = json.loads((tampered / "meta/stats.json").read_text())
    stats[ENV]["std"][0] *= 3
    (tampered / "meta/stats.json").write_text(json.dumps(stats, indent=4))
    bad = [f for f in run_doctor(tampered, checks=["D011"]).findings if f.severity == "error"]
    assert len(bad) == 1 and "stats.exact.json floored at 0.01" in bad[0].message

    unrecorded = tmp_path / "unrecorded"
    shutil.copytree(floored, unrecorded)
    stamp = json.loads((unrecorded / "meta/bake.json").read_text())
    del stamp["stats"]
    (unrecorded / "meta/bake.json").write_text(json.dumps(stamp))
    bad = [f for f in run_doctor(unrecorded, checks=["D011"]).findings if f.severity == "error"]
    assert len(bad) == 1 and "records no std floor" in bad[0].message


def test_a_floor_is_refused_where_lerobot_would_not_read_it(baked, tmp_path):
    from typer.testing import CliRunner

    from demoforge.cli.main import app

    run = baked[0].parent / "run"
    with pytest.raises(DemoforgeError, match="episodes_stats.jsonl"):
        bake([run], tmp_path / "v21", BakeConfig(control_freq=15, std_floor=FLOOR, lerobot_format="v2.1"))
    assert not (tmp_path / "v21").exists()
    for extra in (["--lerobot-format", "v2.1"], []):
        result = CliRunner().invoke(app, ["bake", str(run), "--control-freq", "15", "--std-floor",
                                          "0.01" if extra else "-1", *extra, "--quiet", "--out", str(tmp_path / "o")])
        assert result.exit_code == 2 and "--std-floor" in result.output and "Traceback" not in result.output
        assert not (tmp_path / "o").exists()
