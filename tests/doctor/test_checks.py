"""Each check fires on a dataset built to have exactly its defect and stays silent on a clean one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from demoforge.dataset import Feature
from demoforge.doctor import CHECKS, DoctorConfig, DoctorError, get_check, run_doctor
from tests.doctor import _build as b

from tests.lerobot_fixtures import FIXTURES


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    return b.write(tmp_path_factory.mktemp("clean") / "ds", b.clean_episodes())


def codes(result) -> dict[str, int]:
    return {c: result.count(c) for c in result.checks}


def only(result, code: str, *also: str) -> None:
    """`code` fired, and nothing else did but `also` (stats go stale when the data are patched)."""
    fired = {c for c, n in codes(result).items() if n}
    assert code in fired and fired <= {code, *also}, [str(f) for f in result.findings]


def test_clean_dataset_has_no_findings(clean):
    result = run_doctor(clean)
    assert result.findings == (), [str(f) for f in result.findings]
    assert result.scan.limits is not None and "panda" in result.scan.limits.source  # found from state names
    assert not result.failed("warning")


def test_registry_lists_d001_to_d014_and_lookup_errors_name_them():
    assert list(CHECKS) == [f"D{i:03d}" for i in range(1, 15)]
    assert get_check("d004").code == "D004"
    with pytest.raises(DoctorError, match="D001"):
        get_check("D099")


def test_d001_counts_disagree(clean, tmp_path):
    root = b.write(tmp_path / "ds", b.clean_episodes())
    b.patch_json(root / "meta/info.json", lambda raw: raw.update(total_frames=raw["total_frames"] + 1))
    result = run_doctor(root)
    only(result, "D001")
    assert "total_frames" in result.findings[0].message


def test_d002_timestamp_off_and_float32_hazard(tmp_path):
    root = b.write(tmp_path / "ds", b.clean_episodes())

    def shift(ep, ts):
        ts[(ep == 2)] += np.float32(0.25)
        return ts

    b.patch_data(root, "timestamp", shift)
    result = run_doctor(root)
    only(result, "D002", "D011")
    f = result.findings[0]
    assert f.code == "D002" and f.severity == "error" and f.evidence.episode == 2
    assert f.evidence.values["timestamp"] - f.evidence.values["expected"] == pytest.approx(0.25)

    # one frame per second for 1100 frames: past the float32 hazard
    slow = [{k: np.repeat(v, 11, axis=0)[:1100] for k, v in ep.items()} for ep in b.clean_episodes()[:1]]
    root = b.write(tmp_path / "long", slow, fps=1)
    result = run_doctor(root, checks=["D002"])
    assert [f.severity for f in result.findings] == ["warning"]
    assert result.findings[0].evidence.values["duration_s"] == pytest.approx(1099.0)


def test_d003_nan(tmp_path):
    root = b.write(tmp_path / "ds", b.clean_episodes())

    def poison(ep, vals):
        rows = np.flatnonzero(ep == 3)
        vals[rows[7], 2] = np.nan
        vals[rows[9], 4] = np.inf
        return vals

    b.patch_data(root, "observation.state", poison)
    result = run_doctor(root)
    only(result, "D003", "D011")
    f = result.findings[0]
    assert (f.evidence.episode, f.evidence.frame, f.evidence.values["count"]) == (3, 7, 2)
    assert "joint3" in f.message


def test_d004_constant_dimension(tmp_path):
    eps = b.clean_episodes()
    for ep in eps:
        ep["observation.state"][:, 6] = 0.25
    result = run_doctor(b.write(tmp_path / "ds", eps), robot=None, checks=["D004"])
    assert [(f.severity, f.evidence.values["names"]) for f in result.findings] == [("error", ["joint7"])]
    eps = b.clean_episodes()
    for ep in eps:
        ep["action"][:, 1] = 0.25 + 1e-5 * (np.arange(len(ep["action"])) % 2)
    result = run_doctor(b.write(tmp_path / "near", eps), checks=["D004"])
    assert [(f.severity, f.evidence.feature, f.evidence.values["dims"]) for f in result.findings] == [
        ("warning", "action", [1])]


def test_d005_frozen_and_idle(tmp_path):
    eps = b.clean_episodes()
    eps[1]["action"][:] = eps[1]["action"][0]
    eps[4]["action"][30:] = eps[4]["action"][30]  # idle for ~70% of the episode
    result = run_doctor(b.write(tmp_path / "ds", eps), checks=["D005"])
    assert [(f.evidence.episode, f.severity) for f in result.findings] == [(1, "error"), (4, "warning")]
    assert run_doctor(b.write(tmp_path / "ds2", eps)).count("D005") == 2


def test_d006_missing_video_and_clean_video(tmp_path):
    feats = {**b.FEATURES, "observation.images.front": Feature("video", (16, 16, 3))}
    eps = b.clean_episodes()
    for e, ep in enumerate(eps):
        ep["observation.images.front"] = np.full((len(ep["action"]), 16, 16, 3), 40 * e, np.uint8)
    root = b.write(tmp_path / "ds", eps, features=feats)
    assert run_doctor(root).findings == ()
    assert run_doctor(root, config=DoctorConfig(decode_video=True), checks=["D006"]).findings == ()
    for mp4 in root.glob("videos/**/*.mp4"):
        mp4.unlink()
    result = run_doctor(root)
    only(result, "D006")
    assert "not found" in result.findings[0].message


def _squeeze_joint(eps, j: int, frac_lo: float, frac_hi: float, which=None) -> None:
    """Joint j of the episodes (all, or those in `which`) moved into [frac_lo, frac_hi] of its range."""
    lo, hi = b.LIMITS[j]
    for e, ep in enumerate(eps):
        if which is None or e in which:
            for k in ("observation.state", "action"):
                u = (ep[k][:, j] - lo) / (hi - lo)
                ep[k][:, j] = lo + (hi - lo) * (frac_lo + (frac_hi - frac_lo) * u)


def test_d007_a_joint_its_tasks_keep_in_a_corridor_is_a_note_not_a_warning(tmp_path):
    eps = b.clean_episodes()
    _squeeze_joint(eps, 0, 0.40, 0.55)  # joint1 stays within 15% of its range, every bin of it visited
    result = run_doctor(b.write(tmp_path / "ds", eps), robot="panda")
    only(result, "D007")
    (f,) = result.findings
    assert f.severity == "info" and not result.failed("warning")
    v = f.evidence.values
    assert (v["joint"], v["task_bins"], v["holes"]) == ("joint1", [4, 5], [])
    assert v["empty_bins"] == [0, 1, 2, 3, 6, 7, 8, 9] and v["occupancy"] == pytest.approx(0.2)
    assert "do not need" in f.message and "separate dataset" in f.fix and "--robot panda" in f.fix


def test_d007_warns_on_a_stretch_inside_the_span_the_episodes_never_visit(tmp_path):
    eps = b.clean_episodes()
    # joint1: half the episodes near its lower end, half near its upper end, none in between
    _squeeze_joint(eps, 0, 0.02, 0.18, which={0, 2, 4})
    _squeeze_joint(eps, 0, 0.82, 0.98, which={1, 3, 5})
    result = run_doctor(b.write(tmp_path / "ds", eps), robot="panda", checks=["D007"])
    (f,) = result.findings
    assert f.severity == "warning" and f.evidence.values["joint"] == "joint1"
    assert f.evidence.values["task_bins"] == [0, 9] and f.evidence.values["holes"] == [2, 3, 4, 5, 6, 7]
    assert "never visited inside that span: bins [2, 3, 4, 5, 6, 7]" in f.message
    assert "demoforge coverage DATASET OUT --robot panda" in f.fix and "separate dataset" in f.fix


def test_d007_needs_a_robot_and_bad_robot_is_an_error(tmp_path):
    eps = b.clean_episodes()
    feats = {k: Feature("float32", (8,), [f"s{i}" for i in range(8)]) for k in b.FEATURES}
    root = b.write(tmp_path / "ds", eps, features=feats)
    result = run_doctor(root, checks=["D007"])
    assert [f.severity for f in result.findings] == ["info"]
    # the names say nothing about joints: taken in order, and the doctor says so
    (note,) = run_doctor(root, robot="panda", checks=["D007"]).findings
    assert note.severity == "info" and "taken in order (s0=joint1, s1=joint2" in note.message
    with pytest.raises(Exception, match="built-ins"):
        run_doctor(root, robot="ur5", checks=["D007"])


def test_d007_names_joints_by_the_datasets_own_names_and_warns_when_they_contradict_the_order(tmp_path):
    eps = b.clean_episodes()
    _squeeze_joint(eps, 0, 0.40, 0.55)
    names = [f"joint{k}" for k in range(7)] + ["gripper"]  # zero-based: not the card's joint1..joint7
    feats = {k: Feature("float32", (8,), names) for k in b.FEATURES}
    result = run_doctor(b.write(tmp_path / "ds", eps, features=feats), robot="panda", checks=["D007"])
    mapping, corridor = result.findings
    assert mapping.severity == "warning" and "joint0=joint1" in mapping.message and "contradict" in mapping.message
    assert mapping.evidence.values["state_names"][:2] == ["joint0", "joint1"]
    assert corridor.evidence.values["joint"] == "joint0 (robot joint joint1)"
    assert "'joint0 (robot joint joint1)'" in corridor.message
    # the same names in the card's own order are matched by name, wherever they sit
    shuffled = ["gripper", *b.JOINTS]
    feats = {k: Feature("float32", (8,), shuffled) for k in b.FEATURES}
    moved = [{k: np.roll(v, 1, axis=1) for k, v in ep.items()} for ep in eps]
    result = run_doctor(b.write(tmp_path / "named", moved, features=feats), robot="panda", checks=["D007"])
    (f,) = result.findings
    assert (f.severity, f.evidence.values["joint"], f.evidence.values["dim"]) == ("info", "joint1", 1)


def test_d008_action_jump(tmp_path):
    eps = b.clean_episodes()
    eps[2]["action"][50:, 3] += 0.6  # 18 rad/s at 30 fps
    eps[2]["action"][20:, 7] = 1.0 - eps[2]["action"][20:, 7]  # gripper switches are exempt
    result = run_doctor(b.write(tmp_path / "ds", eps))
    only(result, "D008")
    f = result.findings[0]
    assert (f.evidence.episode, f.evidence.frame, f.evidence.values["name"]) == (2, 50, "joint4")


def test_d009_length_outlier(tmp_path):
    eps = b.clean_episodes((*b.LENGTHS, 20))
    result = run_doctor(b.write(tmp_path / "ds", eps), checks=["D009"])
    assert [(f.evidence.episode, f.evidence.values["length"]) for f in result.findings] == [(6, 20)]


def test_d010_duplicates(tmp_path):
    eps = b.clean_episodes()
    eps.append({k: v.copy() for k, v in eps[2].items()})
    result = run_doctor(b.write(tmp_path / "ds", eps))
    only(result, "D010")
    assert result.findings[0].evidence.values["episodes"] == [2, 6]


def test_d011_stale_stats(tmp_path):
    root = b.write(tmp_path / "ds", b.clean_episodes())

    def stale(raw):
        raw["action"]["mean"][5] += 0.3

    b.patch_json(root / "meta/stats.json", stale)
    result = run_doctor(root)
    only(result, "D011")
    v = result.findings[0].evidence.values
    assert (v["stat"], v["dim"]) == ("mean", 5)


def test_d012_constant_success_column(tmp_path):
    feats = {**b.FEATURES, "next.success": Feature("bool", (1,))}
    eps = b.clean_episodes()
    for ep in eps:
        ep["next.success"] = np.zeros((len(ep["action"]), 1), bool)
    result = run_doctor(b.write(tmp_path / "ds", eps, features=feats))
    only(result, "D012")
    assert result.findings[0].evidence.feature == "next.success"
    for ep in eps:
        ep["next.success"][-5:] = True
    assert run_doctor(b.write(tmp_path / "ok", eps, features=feats)).findings == ()


def test_d013_bake_rate(tmp_path):
    root = b.write(tmp_path / "ds", b.clean_episodes())
    stamp = {"convention": "joint_target", "control_freq": 30, "native_freq": 60, "stride": 2}
    (root / "meta/bake.json").write_text(json.dumps(stamp))
    assert run_doctor(root).findings == ()
    (root / "meta/bake.json").write_text(json.dumps({**stamp, "control_freq": 20}))
    result = run_doctor(root)
    only(result, "D013")
    assert result.count("D013") == 2  # control_freq vs fps, and native / stride vs control_freq
    (root / "meta/bake.json").write_text(json.dumps({"control_freq": 30}))  # damaged: read_stamp's message
    result = run_doctor(root)
    only(result, "D013")
    assert "cannot read the bake stamp" in result.findings[0].message
    (root / "meta/bake.json").unlink()
    (root / "meta/demoforge").mkdir(exist_ok=True)
    (root / "meta/demoforge/provenance.json").write_text(json.dumps({"stage": "execute", "fps": 60}))
    assert [f.evidence.values["recorded_fps"] for f in run_doctor(root).findings] == [60]


@pytest.mark.parametrize("name", ["lerobot044_video", "lerobot061_state_only", "lerobot061_video"])
def test_lerobot_fixtures_pass_d001_to_d006(name):
    root = FIXTURES / name
    if not root.is_dir():
        pytest.skip(f"fixture {root} not present")
    result = run_doctor(root, checks=[f"D{i:03d}" for i in range(1, 7)])
    assert result.findings == (), [str(f) for f in result.findings]
    assert run_doctor(root).count("D011") == 0  # lerobot's own stats agree with the data


def test_config_rejects_bad_values():
    with pytest.raises(Exception, match="bins"):
        DoctorConfig(bins=1)
    with pytest.raises(Exception, match="unknown keys"):
        DoctorConfig.from_dict({"binz": 3})


def test_raw_dataset_from_execute_has_no_errors(tmp_path):
    """Ours: a raw dataset written by `demoforge generate` (sim.state, symbolic.state, plan.* columns)."""
    generate = pytest.importorskip("demoforge.execute").generate
    from demoforge.tasks import generate_family, write_tasks

    paths = [p for p in write_tasks(generate_family("pnp", count=1, seed=11), tmp_path / "tasks")
             if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    summary = generate([str(p) for p in paths], tmp_path / "run", episodes_per_problem=2, envs=2, workers=1, seed=0)
    result = run_doctor(summary.roots["success"])
    assert result.scan.limits is not None  # panda found from the state names
    assert result.count(severity="error") == 0, [str(f) for f in result.findings]
    # sim.state holds constant dims (resting props, unused qvel); D004 judges only what a policy normalizes
    assert all(f.evidence.feature in ("observation.state", "action") for f in result.findings if f.code == "D004")


def test_d009_judges_lengths_within_each_task(tmp_path):
    """Two tasks with very different lengths: no outliers; a short one within its task is one."""
    from demoforge.dataset import DatasetWriter

    root = tmp_path / "ds"
    with DatasetWriter.create(root, fps=30, features=b.FEATURES) as w:
        for e, n in enumerate((100, 102, 98, 100, 101, 300, 296, 304, 300, 299, 120)):
            ep = b.clean_episodes((n,))[0] if n < 250 else {k: np.repeat(v, 3, axis=0)[:n] for k, v in
                                                             b.clean_episodes((100,))[0].items()}
            w.add_episode(ep, task="short task" if e < 5 else "long task")
    result = run_doctor(root, checks=["D009"])
    assert [(f.evidence.episode, f.evidence.values["task"]) for f in result.findings] == [(10, "long task")]


def test_scan_holds_one_episode_at_a_time(tmp_path):
    """numpy memory during the doctor stays near one episode's worth, far below the whole dataset's."""
    import tracemalloc

    wide = {**b.FEATURES, "sim.state": Feature("float64", (512,))}
    eps = b.clean_episodes((100,) * 16)
    for e, ep in enumerate(eps):
        ep["sim.state"] = np.random.default_rng(e).normal(size=(100, 512))
    root = b.write(tmp_path / "ds", eps, features=wide)
    total = 16 * 100 * 512 * 8  # 6.6 MB of sim.state alone; one episode is 0.4 MB
    tracemalloc.start()
    try:
        run_doctor(root)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < total / 3, f"peak {peak / 1e6:.1f} MB for {total / 1e6:.1f} MB of data"


def test_d007_counts_float32_states_at_a_limit_as_inside_and_just_past_it_as_outside(tmp_path):
    lo, hi = b.LIMITS[6]
    eps = b.clean_episodes()
    eps[0]["observation.state"][:5, 6] = hi  # float32(hi) is a hair above the float64 limit
    eps[0]["observation.state"][5:8, 6] = lo
    assert np.float32(hi) > hi or np.float32(lo) < lo
    assert not [f for f in run_doctor(b.write(tmp_path / "a", eps), robot="panda", checks=["D007"]).findings
                if "outside" in f.message]
    eps[1]["observation.state"][:2, 6] = hi + 5e-4  # really past it
    found = [f for f in run_doctor(b.write(tmp_path / "b", eps), robot="panda", checks=["D007"]).findings
             if "outside" in f.message]
    assert len(found) == 1 and found[0].evidence.values["frames"] == 2


def test_the_doctor_knows_every_built_in_robot_by_name():
    # A UR5e dataset names its robot in info.json and its joints by the card's names: the doctor
    # finds the UR5e's limits without --robot, and --robot ur5e_2f85 names it too.
    from demoforge.dataset.layout import DatasetInfo, Feature, index_features
    from demoforge.doctor.limits import resolve_limits
    from demoforge.sim.robots import ROBOTS

    card = ROBOTS["ur5e_2f85"]()
    names = [*card.arm_joints, "gripper"]
    state = {"observation.state": Feature("float32", (len(names),), names)}
    info = DatasetInfo(fps=30, features={**state, **index_features()}, robot_type="ur5e_2f85")
    found = resolve_limits(info)
    assert found is not None and found.names == tuple(card.arm_joints) and "ur5e" in found.source
    named = resolve_limits(DatasetInfo(fps=30, features={**state, **index_features()}), "ur5e_2f85")
    assert named.names == found.names and named.lower == found.lower
