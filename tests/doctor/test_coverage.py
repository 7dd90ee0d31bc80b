"""Coverage generator: on a corridor-shaped dataset occupancy rises and D007 clears, same seed same
bytes; on raw, rendered and baked datasets the episodes come out as a dataset of their own."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import Feature, check_dataset, open_dataset
from demoforge.doctor import DoctorConfig, run_doctor
from demoforge.doctor.coverage import TASK, CoverageConfig, CoverageError, generate_coverage
from demoforge.sim.robot import panda_card
from tests.doctor import _build as b


def corridor(n: int = 10, length: int = 100) -> list[dict[str, np.ndarray]]:
    """Every joint within +-7% of its range around home: about 2 of 10 bins visited."""
    home = np.array(panda_card().home)
    lo, hi = b.LIMITS[:, 0], b.LIMITS[:, 1]
    eps = []
    for e in range(n):
        rng = np.random.default_rng(e)
        s = np.linspace(0, 1, length + 1)[:, None]
        arm = home + 0.07 * (hi - lo) * np.sin(2 * np.pi * s + rng.uniform(0, 2 * np.pi, size=(1, 7)))
        grip = 0.5 - 0.5 * np.cos(2 * np.pi * s)  # closes and opens once
        path = np.concatenate([arm, grip], axis=1).astype(np.float32)
        eps.append({"observation.state": path[:-1].copy(), "action": path[1:].copy()})
    return eps


def tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def corridor_root(tmp_path_factory) -> Path:
    return b.write(tmp_path_factory.mktemp("corridor") / "in", corridor())


@pytest.fixture(scope="module")
def covered(corridor_root, tmp_path_factory):
    before = tree_digest(corridor_root)
    report = generate_coverage(corridor_root, tmp_path_factory.mktemp("cov") / "out", robot="panda",
                               config=CoverageConfig(episodes=40, seed=0))
    assert tree_digest(corridor_root) == before  # the input is never mutated
    return report


def test_corridor_occupancy_rises_and_d007_clears(covered):
    assert covered.occupancy_before.min() == pytest.approx(0.2, abs=0.1)
    # every joint keeps to its corridor and visits all of it: notes, not warnings
    assert (covered.d007_before, covered.warnings_before) == (7, 0)
    assert covered.occupancy_after.min() >= 0.7
    assert covered.d007_after == 0
    assert len(covered.planned) == 40 and covered.kind == "state_action"


def test_output_holds_the_coverage_episodes_alone_under_their_own_task(covered, corridor_root):
    src, out = open_dataset(corridor_root), open_dataset(covered.output)
    assert out.num_episodes == 40 and src.num_episodes == 10
    assert check_dataset(covered.output) == []
    assert {out.episode(e)["tasks"][0] for e in range(40)} == {TASK} and "no task" in TASK
    assert out.info.robot_type == "panda" and out.info.features == src.info.features
    new = out.read_episode(5)
    p = covered.planned[5]
    # the arm ends at the planned goal (settled during the hold)
    np.testing.assert_allclose(new["observation.state"][-1, :7], p.q_goal, atol=0.05)
    # together with the input, the counts the report gives are the real ones
    together = run_doctor(covered.output, robot="panda", checks=["D007"]).scan.occupancy
    np.testing.assert_array_equal(covered.counts_after, covered.counts_before + together)
    assert any("commanded arm joint targets" in n for n in covered.notes)


def test_a_dataset_d007_warns_on_gets_the_stretch_its_episodes_skip(tmp_path):
    eps = b.clean_episodes()
    lo, hi = b.LIMITS[0]
    for e, ep in enumerate(eps):  # joint1: half the episodes near each end of its range, none in between
        for k in ("observation.state", "action"):
            u = (ep[k][:, 0] - lo) / (hi - lo)
            ep[k][:, 0] = lo + (hi - lo) * ((0.02 if e % 2 == 0 else 0.82) + 0.16 * u)
    root = b.write(tmp_path / "in", eps)
    assert [f.severity for f in run_doctor(root, checks=["D007"]).findings] == ["warning"]
    report = generate_coverage(root, tmp_path / "out", robot="panda", config=CoverageConfig(episodes=8))
    assert (report.warnings_before, report.warnings_after) == (1, 0)
    assert {p.joint for p in report.planned[:4]} == {"joint1"}


def test_consecutive_episodes_chase_different_holes(covered):
    targets = [(p.joint, p.bin) for p in covered.planned[:8]]
    assert len(set(targets)) == len(targets)
    # the goal's target joint lies in the window it was planned for
    for p in covered.planned:
        j = b.JOINTS.index(p.joint)
        lo, hi = b.LIMITS[j]
        edges = np.linspace(lo, hi, 11)
        assert edges[p.window[0]] - 1e-9 <= p.q_goal[j] <= edges[p.window[1] + 1] + 1e-9 or p.mode == "free"


def test_same_seed_same_bytes(corridor_root, tmp_path):
    cfg = CoverageConfig(episodes=6, seed=3)
    a = generate_coverage(corridor_root, tmp_path / "a", robot="panda", config=cfg)
    c = generate_coverage(corridor_root, tmp_path / "c", robot="panda", config=cfg)
    assert tree_digest(a.output) == tree_digest(c.output)
    d = generate_coverage(corridor_root, tmp_path / "d", robot="panda", config=CoverageConfig(episodes=6, seed=4))
    assert tree_digest(d.output) != tree_digest(a.output)


def test_same_seed_same_bytes_at_40_episodes(corridor_root, covered, tmp_path):
    again = generate_coverage(corridor_root, tmp_path / "again", robot="panda", config=CoverageConfig(episodes=40))
    assert tree_digest(again.output) == tree_digest(covered.output)


def test_a_finished_run_rerun_returns_its_report_and_writes_nothing(covered, corridor_root):
    out = covered.output
    before = {p: (p.stat().st_mtime_ns, h) for p, h in ((out / k, h) for k, h in tree_digest(out).items())}
    again = generate_coverage(corridor_root, out, robot="panda", config=CoverageConfig(episodes=40, seed=0))
    assert {p: (p.stat().st_mtime_ns, h) for p, h in ((out / k, h) for k, h in tree_digest(out).items())} == before
    assert again.to_json() == covered.to_json()
    with pytest.raises(CoverageError, match="OUTPUT_ROOT .*not empty"):  # other settings: refused, not mixed in
        generate_coverage(corridor_root, out, robot="panda", config=CoverageConfig(episodes=40, seed=1))
    assert tree_digest(out) == {k: h for k, (_, h) in ((p.relative_to(out).as_posix(), v) for p, v in before.items())}


def test_other_features_are_named_and_what_cannot_be_written_is_refused(tmp_path, corridor_root):
    eps = corridor(3)
    for ep in eps:
        ep["observation.velocity"] = np.zeros((100, 2), np.float32)
    feats = {**b.FEATURES, "observation.velocity": Feature("float32", (2,))}
    root = b.write(tmp_path / "in", eps, features=feats)
    report = generate_coverage(root, tmp_path / "out", robot="panda", config=CoverageConfig(episodes=2))
    assert any("['observation.velocity'] are not made" in n for n in report.notes)
    assert "observation.velocity" not in open_dataset(tmp_path / "out").info.features
    wide = b.write(tmp_path / "wide", [{k: np.pad(v, ((0, 0), (0, 1))) for k, v in ep.items()} for ep in corridor(2)],
                   features={k: Feature("float32", (9,), [*b.NAMES, "extra"]) for k in b.FEATURES})
    with pytest.raises(CoverageError, match=r"float32 \[9\], expected float32 \[8\]"):
        generate_coverage(wide, tmp_path / "wide-out", robot="panda")
    assert not (tmp_path / "wide-out").exists()
    with pytest.raises(CoverageError, match="already exists"):
        generate_coverage(corridor_root, corridor_root, robot="panda")
    with pytest.raises(CoverageError, match="episodes"):
        CoverageConfig(episodes=0)


def test_cli_coverage(corridor_root, tmp_path):
    res = CliRunner().invoke(app, ["coverage", str(corridor_root), str(tmp_path / "out"), "--robot", "panda",
                                   "--episodes", "4", "--seed", "1", "--json", str(tmp_path / "c.json"),
                                   "--report", str(tmp_path / "r.md")])
    assert res.exit_code == 0, res.output
    assert "D007 findings 7 ->" in res.output and "(warnings 0 -> 0)" in res.output and (tmp_path / "c.json").is_file()
    assert "a dataset of their own" in res.output and "note: action:" in res.output
    assert "coverage: 4/4 episodes" in res.stderr and "took" in res.stderr  # CliRunner's stderr is no terminal
    assert "Coverage: D007 findings 7 ->" in (tmp_path / "r.md").read_text()
    assert open_dataset(tmp_path / "out").num_episodes == 4
    assert DoctorConfig().bins == 10


def test_cli_coverage_quiet_prints_no_progress(corridor_root, tmp_path):
    res = CliRunner().invoke(app, ["coverage", str(corridor_root), str(tmp_path / "out"), "--robot", "panda",
                                   "--episodes", "2", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "coverage:" not in res.stderr and "a dataset of their own" in res.stdout


def test_coverage_reports_one_event_per_episode(corridor_root, tmp_path):
    events = []
    generate_coverage(corridor_root, tmp_path / "out", robot="panda", config=CoverageConfig(episodes=3),
                      progress=events.append)
    eps = [e for e in events if e.kind == "episode"]
    assert [(e.stage, e.done, e.total) for e in eps] == [("coverage", k, 3) for k in (1, 2, 3)]


def test_coverage_is_a_stage_whose_bytes_depend_on_no_worker_count_and_whose_kill_resumes(corridor_root, tmp_path,
                                                                                           monkeypatch):
    """Ten episodes in two work items: two workers write the bytes one does; a run killed in its
    second item keeps the first item's shard, and the same call resumes to the same bytes."""
    import demoforge.doctor.coverage as cov

    cfg = CoverageConfig(episodes=10, seed=2)
    one = generate_coverage(corridor_root, tmp_path / "one", robot="panda", config=cfg)
    two = generate_coverage(corridor_root, tmp_path / "two", robot="panda", config=cfg, workers=2)
    assert tree_digest(one.output) == tree_digest(two.output)
    assert two.to_json() == {**one.to_json()}
    real = cov.execute

    def dies_in_the_second_item(planned, *args, **kw):
        if planned[0].index > 0:
            raise KeyboardInterrupt("killed")
        return real(planned, *args, **kw)

    monkeypatch.setattr(cov, "execute", dies_in_the_second_item)
    with pytest.raises(KeyboardInterrupt):
        generate_coverage(corridor_root, tmp_path / "three", robot="panda", config=cfg)
    work = tmp_path / ".three.coverage-shards"
    assert not (tmp_path / "three").exists() and len(list(work.glob(".shards/*/done.json"))) == 1
    monkeypatch.undo()
    again = generate_coverage(corridor_root, tmp_path / "three", robot="panda", config=cfg)
    assert tree_digest(again.output) == tree_digest(one.output) and not work.exists()


def _planner(monkeypatch, accept):
    from demoforge.dataset.layout import DatasetInfo, index_features
    from demoforge.doctor import coverage_plan
    from demoforge.doctor.limits import resolve_limits

    limits = resolve_limits(DatasetInfo(fps=30, features={**b.FEATURES, **index_features()}), "panda")
    counts = np.zeros((7, 10), np.int64)
    counts[:, 4:6] = 50
    planner = coverage_plan.Planner(limits, counts, bins=10, min_frames=1, attempts=4, max_widen=2, fps=30,
                                    move_s=1.0, hold_s=0.2, max_speed=2.4)
    real = planner._accept
    monkeypatch.setattr(planner, "_accept", lambda scene, q0, q, j, window, rng: accept(real, scene, q0, q, j,
                                                                                        window, rng))
    return planner


def _plan(planner, k):
    from demoforge.sim import SceneSpec, build_scene

    scene = build_scene(SceneSpec())
    return planner.plan(k, np.random.default_rng(k), scene, np.asarray(panda_card().home))


def test_planner_widens_the_window_then_samples_freely(monkeypatch):
    # only windows of 3+ bins are accepted: the first widening succeeds
    widened = _planner(monkeypatch, lambda real, s, q0, q, j, w, r: real(s, q0, q, j, w, r)
                       if w is None or w[1] - w[0] >= 2 else None)
    p = _plan(widened, 0)
    assert p.mode == "widened" and p.window[1] - p.window[0] >= 2
    # nothing in any window is accepted: free sampling
    free = _planner(monkeypatch, lambda real, s, q0, q, j, w, r: real(s, q0, q, j, w, r) if j is None else None)
    p = _plan(free, 0)
    assert p.mode == "free" and p.window == (0, 9)
    before = free.counts.copy()
    p = _plan(free, 1)
    assert free.counts.sum() == before.sum() + 7 * (p.move_ticks + p.hold_ticks)  # predicted frames, per joint
    # the move is slow enough for D008: peak joint speed under the cap
    speed = np.abs(np.diff(p.path, axis=0)).max() * 30
    assert speed <= 2.4 + 1e-6


def test_planner_gives_up_with_a_clear_error(monkeypatch):
    never = _planner(monkeypatch, lambda *args: None)
    with pytest.raises(CoverageError, match="no collision-free reachable goal"):
        _plan(never, 0)


@pytest.fixture(scope="module")
def raw_run(tmp_path_factory) -> Path:
    generate = pytest.importorskip("demoforge.execute").generate
    from demoforge.tasks import generate_family, write_tasks

    folder = tmp_path_factory.mktemp("raw")
    paths = [p for p in write_tasks(generate_family("pnp", count=1, seed=11), folder / "tasks")
             if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    return generate([str(p) for p in paths], folder / "run", episodes_per_problem=2, envs=2, workers=1,
                    seed=0).roots["success"]


def test_raw_execute_input_gets_raw_episodes_that_replay(raw_run, tmp_path):
    from demoforge.replay import episode_scene, replay_states

    before = tree_digest(raw_run)
    cfg = CoverageConfig(episodes=4, seed=0)
    report = generate_coverage(raw_run, tmp_path / "a", config=cfg)  # the robot is found from the state names
    assert tree_digest(raw_run) == before
    assert report.occupancy_after.min() > report.occupancy_before.min()
    assert report.kind == "raw" and report.warnings_before == 0  # task data: the span it visits is covered
    ds, src = open_dataset(report.output), open_dataset(raw_run)
    assert ds.num_episodes == 4 and check_dataset(report.output) == []
    assert {ds.episode(e)["tasks"][0] for e in range(4)} == {TASK}
    e = 3  # starts from input episode 3 mod 2
    row = ds.episode(e)
    assert row["demoforge/outcome"] == "null" and row["demoforge/problem"] == src.episode(1)["demoforge/problem"]
    cols = ds.read_episode(e, ["observation.state", "plan.operator", "symbolic.state"])
    assert (cols["plan.operator"] == -1).all() and cols["symbolic.state"].dtype == bool
    # the coverage episode replays from its own sim.state in its rebuilt scene
    replayed = np.array([s.data.qpos[s.robot.arm_qpos] for s in replay_states(report.output, e,
                                                                              episode_scene(report.output, e))])
    np.testing.assert_allclose(replayed, cols["observation.state"][:, :7], atol=1e-6)
    again = generate_coverage(raw_run, tmp_path / "b", config=cfg)
    assert tree_digest(again.output) == tree_digest(report.output)


def test_a_raw_input_under_a_cartesian_delta_law_is_refused_with_the_fix(raw_run, tmp_path):
    import json
    import shutil

    src = tmp_path / "cartesian"
    shutil.copytree(raw_run, src)
    law_file = src / "meta/demoforge/controller.json"
    law_file.write_text(json.dumps({**json.loads(law_file.read_text()), "mode": "cartesian_delta"}))
    with pytest.raises(CoverageError, match="'cartesian_delta' control law.*bake the input"):
        generate_coverage(src, tmp_path / "out", config=CoverageConfig(episodes=2, seed=0))
    assert not (tmp_path / "out").exists()


def test_rendered_and_baked_datasets_get_coverage_episodes_they_can_be_trained_beside(raw_run, tmp_path):
    from demoforge.convert import BakeConfig, bake
    from demoforge.render import RenderConfig, parse_look_arg, render_dataset

    rendered = tmp_path / "rendered"
    render_dataset(raw_run, rendered, RenderConfig(looks=(parse_look_arg("plain"),), cameras=("front",),
                                                   episodes=(0,)))
    report = generate_coverage(rendered, tmp_path / "from-rendered", config=CoverageConfig(episodes=2))
    assert report.kind == "raw" and open_dataset(report.output).info.video_keys == []
    assert any("camera videos ['observation.images.front'] are not made" in n and "demoforge render" in n
               for n in report.notes)
    # the coverage dataset bakes like the input's raw data
    baked = bake([rendered], tmp_path / "baked", BakeConfig(control_space="joint_pos", control_freq=30))
    out = generate_coverage(baked, tmp_path / "from-baked", config=CoverageConfig(episodes=2))
    ds, train = open_dataset(out.output), open_dataset(baked)
    assert out.kind == "baked" and ds.info.fps == 30 and check_dataset(out.output) == []
    assert ds.info.features["action"] == train.info.features["action"]
    cols = ds.read_episode(0)
    # joint_pos at 30 Hz, as bake labels it: the action is the next output tick's state
    np.testing.assert_array_equal(cols["action"][:-1], cols["observation.state"][1:])
    assert any("'observation.images.front'" in n and "raw_command" in n for n in out.notes)
    assert {ds.episode(e)["tasks"][0] for e in range(2)} == {TASK}
