"""`demoforge.export`: the openpi and GR00T exports of a baked dataset.

openpi and GR00T are not installable here, so their side is checked against faithful readings
of their code (tests/export/openpi_reading.py, gr00t_reading.py); the conformance test
tests/conformance/test_export_conformance.py loads the same exports with the real LeRobot
v2.1 reader openpi pins (lerobot 0.3.3, datasets 3.6.0)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.dataset.check import check_dataset
from demoforge.export import EXPORT_PATH, ExportConfig, ExportError, export, read_source
from tests.convert._sources import law, write_raw
from tests.export import gr00t_reading, openpi_reading

OPENPI_H, GR00T_H = 4, 3


@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    base = tmp_path_factory.mktemp("export")
    raw = write_raw(base / "raw", lengths=(12, 9))
    return {
        "base": base, "raw": raw,
        "joint_target": bake([raw], base / "target", BakeConfig(control_space="joint_target", control_freq=30)),
        "joint_vel": bake([raw], base / "vel", BakeConfig(control_space="joint_vel", control_freq=30)),
    }


@pytest.fixture(scope="module")
def exports(baked):
    homes = baked["base"] / "lerobot_home"
    out = {}
    for conv in ("joint_target", "joint_vel"):
        out["openpi", conv] = export(baked[conv], homes / f"openpi-{conv}",
                                     ExportConfig(trainer="openpi", action_horizon=OPENPI_H))
        out["gr00t", conv] = export(baked[conv], homes / f"gr00t-{conv}",
                                    ExportConfig(trainer="gr00t", action_horizon=GR00T_H))
    return out


def _episodes(root: Path) -> list[dict[str, np.ndarray]]:
    """Every episode's parquet of a v2.1 root, as the trainers' loaders find it (info.json data_path)."""
    info = json.loads((root / "meta/info.json").read_text())
    eps = [json.loads(x) for x in (root / "meta/episodes.jsonl").read_text().splitlines()]
    out = []
    for e in eps:
        i = e["episode_index"]
        t = pq.read_table(root / info["data_path"].format(episode_chunk=i // info["chunks_size"], episode_index=i))
        out.append({k: np.stack(t.column(k).to_numpy(zero_copy_only=False)) if k in ("observation.state", "action")
                    else t.column(k).to_numpy() for k in t.column_names})
    return out


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_exports_are_v21_datasets_with_the_trainers_files(exports, baked):
    for (trainer, conv), root in exports.items():
        assert check_dataset(root) == [], (trainer, conv)
        info = json.loads((root / "meta/info.json").read_text())
        assert info["codebase_version"] == "v2.1"
        stamp = json.loads((root / EXPORT_PATH).read_text())
        assert (stamp["trainer"], stamp["convention"]) == (trainer, conv)
        assert stamp["source"] == str(baked[conv].resolve())
    target = exports["openpi", "joint_target"]
    assert (target / "meta/openpi/norm_stats.json").is_file() and (target / "meta/openpi/demoforge_config.py").is_file()
    g = exports["gr00t", "joint_target"]
    assert {p.name for p in (g / "meta").iterdir()} >= {
        "modality.json", "relative_stats.json", "demoforge_modality_config.py", "stats.json", "episodes.jsonl",
        "tasks.jsonl", "info.json"}


def test_export_leaves_its_source_as_it_was_and_no_partial_folder(baked, tmp_path):
    before = _tree(baked["joint_target"])
    out = export(baked["joint_target"], tmp_path / "o", ExportConfig(trainer="openpi", action_horizon=2))
    assert _tree(baked["joint_target"]) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"] and out == tmp_path / "o"


def test_the_delta_mask_covers_the_arm_under_target_conventions_only(exports):
    for trainer in ("openpi", "gr00t"):
        target = json.loads((exports[trainer, "joint_target"] / EXPORT_PATH).read_text())
        vel = json.loads((exports[trainer, "joint_vel"] / EXPORT_PATH).read_text())
        assert target["delta_action_mask"] == [True, True, True, False] and target["relative_parts"] == ["arm"]
        assert vel["delta_action_mask"] == [False] * 4 and vel["relative_parts"] == []


def test_openpi_config_builds_openpis_data_config_from_the_export(exports):
    root = exports["openpi", "joint_target"]
    mod = openpi_reading.load_config_module(root / "meta/openpi/demoforge_config.py", root.parent)
    cfg = mod.CONFIGS[0]
    assert cfg.name == "pi0_openpi_joint_target" and cfg.model.action_horizon == OPENPI_H
    data = cfg.data.create(cfg.assets_dirs, cfg.model)
    assert data.repo_id == root.name and data.prompt_from_task and tuple(data.action_sequence_keys) == ("action",)
    assert set(data.norm_stats) == {"state", "actions"}  # found at $HF_LEROBOT_HOME/<repo_id>/meta/openpi
    assert mod.DELTA_ACTION_MASK == (True, True, True, False)
    assert mod.IMAGES == {"base_0_rgb": "observation.images.front", "left_wrist_0_rgb": "observation.images.wrist"}
    vel = exports["openpi", "joint_vel"]
    assert openpi_reading.load_config_module(vel / "meta/openpi/demoforge_config.py", vel.parent).DELTA_ACTION_MASK \
        is None


@pytest.mark.parametrize("conv", ["joint_target", "joint_vel"])
def test_openpi_norm_stats_are_those_of_its_training_samples(exports, conv):
    """Every frame through openpi's pipeline (an action chunk clamped at the episode's end, as
    lerobot pads; the repack; our inputs; DeltaActions): the stats of the samples are the file's."""
    root = exports["openpi", conv]
    mod = openpi_reading.load_config_module(root / "meta/openpi/demoforge_config.py", root.parent)
    cfg = mod.CONFIGS[0]
    data = cfg.data.create(cfg.assets_dirs, cfg.model)
    states, actions = [], []
    hw = (32, 48, 3)
    for ep in _episodes(root):
        n = len(ep["action"])
        for t in range(n):
            chunk = ep["action"][np.minimum(np.arange(t, t + OPENPI_H), n - 1)].copy()
            item = {"observation.state": ep["observation.state"][t].copy(), "action": chunk, "prompt": "p",
                    "observation.images.front": np.zeros((3, 32, 48), np.float32),
                    "observation.images.wrist": np.ones((3, 32, 48), np.float32)}
            sample = openpi_reading.training_sample(data, item)
            assert sample["image"]["base_0_rgb"].shape == hw and sample["image"]["base_0_rgb"].dtype == np.uint8
            assert sample["image_mask"]["right_wrist_0_rgb"] == np.False_
            states.append(sample["state"])
            actions.append(sample["actions"])
            if conv == "joint_target":
                np.testing.assert_array_equal(sample["actions"][:, 3], chunk[:, 3])  # gripper stays absolute
    states, actions = np.stack(states), np.concatenate(actions)
    stats = json.loads((root / "meta/openpi/norm_stats.json").read_text())["norm_stats"]
    for key, values in (("state", states), ("actions", actions)):
        got = stats[key]
        assert set(got) == {"mean", "std", "q01", "q99"}
        v = values.astype(np.float64)
        np.testing.assert_allclose(got["mean"], v.mean(0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got["std"], v.std(0), rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(got["q01"], np.quantile(v, 0.01, axis=0))
        np.testing.assert_array_equal(got["q99"], np.quantile(v, 0.99, axis=0))
    if conv == "joint_target":  # the chunk's first step is the target minus the state: the bake's 1/64 offset
        np.testing.assert_allclose(actions[::OPENPI_H, :3], 1 / 64, atol=1e-6)


def test_gr00t_modality_config_names_what_modality_json_holds(exports):
    root = exports["gr00t", "joint_target"]
    cfg = gr00t_reading.load_modality_config(root / "meta/demoforge_modality_config.py")
    modality = json.loads((root / "meta/modality.json").read_text())
    assert cfg["video"].modality_keys == ["front", "wrist"] == list(modality["video"])
    for kind in ("state", "action"):
        assert cfg[kind].modality_keys == list(modality[kind]) == ["arm", "gripper"]
    assert cfg["action"].delta_indices == list(range(GR00T_H))
    reps = [a.rep for a in cfg["action"].action_configs]
    assert reps == [gr00t_reading.ActionRepresentation.RELATIVE, gr00t_reading.ActionRepresentation.ABSOLUTE]
    assert cfg["language"].modality_keys == ["annotation.human.task_description"]
    assert modality["annotation"]["human.task_description"]["original_key"] == "task_index"
    assert gr00t_reading.stats_valid(root)
    stats = gr00t_reading.dataset_statistics(root, cfg)
    assert np.shape(stats["state"]["arm"]["q01"]) == (3,) and np.shape(stats["action"]["gripper"]["max"]) == (1,)
    assert np.shape(stats["relative_action"]["arm"]["q99"]) == (GR00T_H, 3)
    vel = gr00t_reading.load_modality_config(exports["gr00t", "joint_vel"] / "meta/demoforge_modality_config.py")
    assert {a.rep for a in vel["action"].action_configs} == {gr00t_reading.ActionRepresentation.ABSOLUTE}
    assert not (exports["gr00t", "joint_vel"] / "meta/relative_stats.json").exists()


def test_gr00t_relative_stats_are_those_gr00t_computes(exports):
    root = exports["gr00t", "joint_target"]
    eps = _episodes(root)
    want = gr00t_reading.relative_action_stats([e["observation.state"][:, :3] for e in eps],
                                               [e["action"][:, :3] for e in eps], GR00T_H)
    got = json.loads((root / "meta/relative_stats.json").read_text())
    assert list(got) == ["arm"] and list(got["arm"]) == ["max", "min", "q01", "q99", "mean", "std"]
    for k, v in want.items():
        np.testing.assert_allclose(got["arm"][k], v, rtol=1e-6, atol=1e-7, err_msg=k)


def _bake_without_cams(base: Path) -> Path:
    raw = write_raw(base / "raw-nocam", lengths=(6,), cams=())
    return bake([raw], base / "nocam", BakeConfig(control_space="joint_target"))


@pytest.mark.parametrize("case, fragment", [
    ("trainer", "trainer 'lerobot' is unknown; choose one of ['gr00t', 'openpi']"),
    ("horizon", "--action-horizon 0 must be an integer in [1, 1000]"),
    ("repo_id", "--repo-id '../x' must be a relative name"),
    ("not_baked", "no meta/bake.json, so what its actions mean (convention, parts) is unknown; bake it first"),
    ("v21", "codebase_version 'v2.1'; export reads the v3.0 output of bake"),
    ("inside", "lies inside the input"),
    ("not_empty", "exists and is not empty"),
    ("short", "every episode is shorter than the action horizon 50"),
    ("no_cams", "openpi's pi0 models take at least one camera image"),
])
def test_bad_input_is_refused_with_the_fix_and_writes_nothing(baked, tmp_path, case, fragment):
    src, out = baked["joint_target"], tmp_path / "out"
    cfg = ExportConfig(trainer="openpi", action_horizon=2)
    if case == "trainer":
        cfg = ExportConfig(trainer="lerobot")
    elif case == "horizon":
        cfg = ExportConfig(trainer="gr00t", action_horizon=0)
    elif case == "repo_id":
        cfg = ExportConfig(trainer="openpi", repo_id="../x")
    elif case == "not_baked":
        src = baked["raw"]
    elif case == "v21":
        src = bake([baked["raw"]], tmp_path / "v21", BakeConfig(control_space="joint_target", lerobot_format="v2.1"))
    elif case == "inside":
        out = src / "export"
    elif case == "not_empty":
        out.mkdir()
        (out / "x").write_text("x")
    elif case == "short":
        cfg = ExportConfig(trainer="gr00t", action_horizon=50)
    elif case == "no_cams":
        src = _bake_without_cams(tmp_path)
    before = _tree(src)
    with pytest.raises(ExportError) as err:
        export(src, out, cfg)
    assert fragment in str(err.value)
    assert _tree(src) == before
    assert not out.exists() or case == "not_empty"
    assert not list(out.parent.glob(".*export-shards"))


@pytest.mark.parametrize("convention, relative", [
    ("joint_pos", ["arm"]), ("joint_target", ["arm"]), ("raw_cmd", ["arm"]),  # raw_cmd: joint-position law
    ("joint_vel", []), ("as_recorded", []),  # velocities; an action demoforge does not interpret
])
def test_relative_parts_follow_what_the_action_holds(baked, tmp_path, convention, relative):
    src = read_source(bake([baked["raw"]], tmp_path / "b", BakeConfig(control_space=convention, cams=())))
    assert list(src.relative_parts) == relative
    assert src.delta_mask == tuple(p in relative for p in ("arm",) * 3 + ("gripper",))


def test_a_raw_command_that_is_not_joint_positions_stays_absolute(tmp_path):
    raw = write_raw(tmp_path / "raw", lengths=(6,), cams=(), control=law("cartesian_delta"))
    src = read_source(bake([raw], tmp_path / "b", BakeConfig(control_space="raw_cmd", cams=())))
    assert (src.convention, src.law_mode, src.relative_parts) == ("raw_cmd", "cartesian_delta", ())


@pytest.mark.parametrize("trainer", ["openpi", "gr00t"])
def test_export_is_byte_identical_run_to_run_and_clears_a_killed_runs_folder(baked, tmp_path, trainer):
    cfg = ExportConfig(trainer=trainer, action_horizon=3, repo_id="demo/stack")
    stale = tmp_path / ".b.export-shards"  # a folder of no run of this export: replaced
    stale.mkdir()
    (stale / "junk").write_text("left by a killed run")
    a = export(baked["joint_target"], tmp_path / "a", cfg)
    b = export(baked["joint_target"], tmp_path / "b", cfg)
    assert _tree(a) == _tree(b)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


@pytest.mark.parametrize("trainer", ["openpi", "gr00t"])
def test_export_is_a_stage_whose_bytes_depend_on_no_worker_count_and_whose_kill_resumes(tmp_path, trainer,
                                                                                         monkeypatch):
    """Ten episodes in two work items: two workers write the bytes one does, and an export killed
    in its second item keeps the first item's shard and resumes to the same bytes."""
    import demoforge.export.run as run

    raw = write_raw(tmp_path / "raw", lengths=(5, 6, 4, 7, 5, 6, 5, 4, 6, 5))
    src = bake([raw], tmp_path / "src", BakeConfig(control_space="joint_target"))
    cfg = ExportConfig(trainer=trainer, action_horizon=3, repo_id="demo/ten")
    one = export(src, tmp_path / "one", cfg)
    two = export(src, tmp_path / "two", cfg, workers=2)
    assert _tree(one) == _tree(two)

    real = run.write_v21_episodes

    def dies_in_the_second_item(ds, out, indices, **kw):
        if indices[0] > 0:
            raise KeyboardInterrupt("killed")
        return real(ds, out, indices, **kw)

    monkeypatch.setattr(run, "write_v21_episodes", dies_in_the_second_item)
    with pytest.raises(KeyboardInterrupt):
        export(src, tmp_path / "three", cfg)
    work = tmp_path / ".three.export-shards"
    assert not (tmp_path / "three").exists() and len(list(work.glob(".shards/*/done.json"))) == 1
    monkeypatch.undo()
    events = []
    export(src, tmp_path / "three", cfg, progress=events.append)
    assert _tree(tmp_path / "three") == _tree(one) and not work.exists()
    assert {e.stage for e in events} == {"export"} and events[-1].done == 10 and events[-1].total == 10
