"""The openpi and GR00T exports, and bake's v2.1 output, loaded by the REAL LeRobot v2.1 reader
openpi trains with (lerobot 0.3.3 = the read path of openpi's pinned commit 0cf8648, with
datasets 3.6.0; scripts/lerobot-v21-venv.sh), called as openpi calls it; openpi's transforms and
GR00T's loader are faithful readings (tests/export/*_reading.py), run in the same venv.

`make test` builds the venv and sets DEMOFORGE_LEROBOT_V21_PYTHON; without it these tests skip,
or fail when DEMOFORGE_REQUIRE_LEROBOT=1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.dataset import open_dataset
from demoforge.export import ExportConfig, export

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.convert._sources import write_raw  # noqa: E402
from tests.export import gr00t_reading  # noqa: E402
from tests.timeouts import SUBPROCESS_S  # noqa: E402

pytestmark = pytest.mark.conformance

PROBE = Path(__file__).with_name("lerobot_v21_probe.py")
ENV = "DEMOFORGE_LEROBOT_V21_PYTHON"
OPENPI_H, GR00T_H = 5, 4


@pytest.fixture(scope="module")
def v21_python() -> str:
    python = os.environ.get(ENV, "")
    if not python or not Path(python).is_file() or not os.access(python, os.X_OK):
        message = (f"LeRobot v2.1 reader unavailable ({ENV}={python!r} is not an executable); run `make test`, "
                   "which builds it (scripts/lerobot-v21-venv.sh: lerobot 0.3.3, datasets 3.6.0) and sets it")
        if os.environ.get("DEMOFORGE_REQUIRE_LEROBOT") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return python


@pytest.fixture(scope="module")
def probed(v21_python, tmp_path_factory):
    base = tmp_path_factory.mktemp("export_conformance")
    raw = write_raw(base / "raw", lengths=(14, 9))
    baked = bake([raw], base / "baked", BakeConfig(control_space="joint_target", control_freq=30))
    home = base / "lerobot_home"
    roots = {
        "openpi": export(baked, home / "stack-openpi", ExportConfig(trainer="openpi", action_horizon=OPENPI_H)),
        "gr00t": export(baked, base / "stack-gr00t", ExportConfig(trainer="gr00t", action_horizon=GR00T_H)),
        "v21": bake([raw], base / "v21", BakeConfig(control_space="joint_target", control_freq=30, lerobot_format="v2.1")),
    }
    roots["v21_list"] = shutil.copytree(roots["v21"], base / "v21-list")
    for path in roots["v21_list"].glob("data/*/*.parquet"):  # the tag datasets >= 4 writes
        table = pq.read_table(path)
        meta = dict(table.schema.metadata)
        meta[b"huggingface"] = meta[b"huggingface"].replace(b'"Sequence"', b'"List"')
        pq.write_table(table.replace_schema_metadata(meta), path)
    kinds = {"openpi": "openpi", "gr00t": "gr00t", "v21": "lerobot", "v21_list": "lerobot"}
    spec = [{"kind": kinds[k], "root": str(r), "out": str(base / f"{k}.npz")} for k, r in roots.items()]
    (base / "spec.json").write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    proc = subprocess.run([v21_python, str(PROBE), str(base / "spec.json")], capture_output=True, text=True,
                          timeout=SUBPROCESS_S, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = {}
    for k in roots:
        out = base / f"{k}.npz"
        error = Path(str(out) + ".error")
        results[k] = error.read_text() if error.exists() else dict(np.load(out, allow_pickle=False))
    return baked, roots, results


def _loaded(result, what: str) -> dict:
    if isinstance(result, str):
        pytest.fail(f"the LeRobot v2.1 reader failed on {what}:\n{result}", pytrace=False)
    return result


def _source(baked: Path) -> tuple[list[np.ndarray], list[np.ndarray]]:
    ds = open_dataset(baked)
    eps = [ds.read_episode(i, ["observation.state", "action"]) for i in ds.episode_indices]
    return [e["observation.state"] for e in eps], [e["action"] for e in eps]


def test_openpi_export_loads_as_openpi_loads_it_and_its_norm_stats_are_the_samples(probed):
    baked, roots, results = probed
    got = _loaded(results["openpi"], "the openpi export")
    meta = json.loads(str(got["meta"]))
    assert (meta["len"], meta["num_episodes"], meta["fps"], meta["horizon"]) == (12, 2, 30, OPENPI_H)
    assert meta["repo_id"] == "stack-openpi" and meta["root"] == str(roots["openpi"])
    assert meta["norm_stats_keys"] == ["actions", "state"] and meta["delta_mask"] == [True, True, True, False]
    states, actions = _source(baked)
    np.testing.assert_array_equal(got["raw_state"], np.concatenate(states))
    # lerobot's chunk: actions t .. t+H-1 of the episode, the last one repeated past its end (flagged as pad)
    want, pad = [], []
    for a in actions:
        idx = np.arange(len(a))[:, None] + np.arange(OPENPI_H)[None, :]
        want.append(a[np.minimum(idx, len(a) - 1)])
        pad.append(idx >= len(a))
    np.testing.assert_array_equal(got["raw_action"], np.concatenate(want))
    np.testing.assert_array_equal(got["is_pad"], np.concatenate(pad))
    assert list(got["prompt"]) == ["stack 0"] * 7 + ["stack 1"] * 5
    assert len(meta["image_shapes"]) == 1  # every frame alike
    shapes = json.loads(meta["image_shapes"][0])
    assert shapes == {slot: [[32, 48, 3], "uint8"] for slot in ("base_0_rgb", "left_wrist_0_rgb", "right_wrist_0_rgb")}
    assert json.loads(meta["image_masks"][0]) == {"base_0_rgb": True, "left_wrist_0_rgb": True,
                                                  "right_wrist_0_rgb": False}
    stats = json.loads((roots["openpi"] / "meta/openpi/norm_stats.json").read_text())["norm_stats"]
    for key, values in (("state", got["state"]), ("actions", got["actions"].reshape(-1, 4))):
        v = values.astype(np.float64)
        np.testing.assert_allclose(stats[key]["mean"], v.mean(0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(stats[key]["std"], v.std(0), rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(stats[key]["q01"], np.quantile(v, 0.01, axis=0))
        np.testing.assert_array_equal(stats[key]["q99"], np.quantile(v, 0.99, axis=0))


def test_bake_v21_output_loads_with_datasets_36_and_the_list_tag_does_not(probed):
    baked, roots, results = probed
    got = _loaded(results["v21"], "bake --lerobot-format v2.1")
    states, actions = _source(baked)
    np.testing.assert_array_equal(got["state"], np.concatenate(states))
    np.testing.assert_array_equal(got["action"], np.concatenate(actions))
    assert json.loads(str(got["meta"]))["len"] == 12
    assert isinstance(results["v21_list"], str) and "Feature type 'List' not found" in results["v21_list"]


def test_gr00t_export_reads_as_gr00ts_loader_reads_it(probed):
    baked, roots, results = probed
    got = _loaded(results["gr00t"], "the GR00T export (faithful reading of LeRobotEpisodeLoader)")
    meta = json.loads(str(got["meta"]))
    assert meta["episodes"] == 2 and meta["stats_valid"] and meta["relative"] == ["arm"] and meta["horizon"] == GR00T_H
    states, actions = _source(baked)
    for i, (s, a) in enumerate(zip(states, actions)):
        np.testing.assert_array_equal(got[f"{i}/state.arm"], s[:, :3])
        np.testing.assert_array_equal(got[f"{i}/state.gripper"], s[:, 3:])
        np.testing.assert_array_equal(got[f"{i}/action.arm"], a[:, :3])
        np.testing.assert_array_equal(got[f"{i}/action.gripper"], a[:, 3:])
        assert list(got[f"{i}/language.annotation.human.task_description"]) == [f"stack {i}"] * len(a)
        for cam in ("front", "wrist"):
            assert meta["frames"][f"{i}/video.{cam}"] == [len(a), [32, 48, 3]]
    assert meta["statistics"]["relative_action"]["arm"]["q01"] == [GR00T_H, 3]
    want = gr00t_reading.relative_action_stats([got[f"{i}/state.arm"] for i in range(2)],
                                               [got[f"{i}/action.arm"] for i in range(2)], GR00T_H)
    rel = json.loads((roots["gr00t"] / "meta/relative_stats.json").read_text())["arm"]
    for k, v in want.items():
        np.testing.assert_allclose(rel[k], v, rtol=1e-6, atol=1e-7, err_msg=k)
