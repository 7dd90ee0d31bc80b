"""Coverage generator on a corridor-shaped dataset: occupancy rises, D007 clears, same seed same bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import Feature, check_dataset, open_dataset
from demoforge.doctor import DoctorConfig, run_doctor
from demoforge.doctor.coverage import CoverageConfig, CoverageError, generate_coverage
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
    assert covered.d007_before == 7
    assert covered.occupancy_after.min() >= 0.7
    assert covered.d007_after == 0
    assert len(covered.planned) == 40


def test_output_is_input_plus_new_episodes_and_sound(covered, corridor_root):
    src, out = open_dataset(corridor_root), open_dataset(covered.output)
    assert out.num_episodes == src.num_episodes + 40
    assert check_dataset(covered.output) == []
    np.testing.assert_array_equal(out.read_episode(3)["action"], src.read_episode(3)["action"])
    new = out.read_episode(src.num_episodes + 5)
    p = covered.planned[5]
    # the arm ends at the planned goal (settled during the hold)
    np.testing.assert_allclose(new["observation.state"][-1, :7], p.q_goal, atol=0.05)
    result = run_doctor(covered.output, robot="panda")
    assert result.count("D007") == 0 and not result.failed("error"), [str(f) for f in result.findings]


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


def test_refuses_features_it_cannot_produce_and_existing_output(tmp_path, corridor_root):
    eps = corridor(3)
    for ep in eps:
        ep["observation.velocity"] = np.zeros((100, 2), np.float32)
    feats = {**b.FEATURES, "observation.velocity": Feature("float32", (2,))}
    root = b.write(tmp_path / "in", eps, features=feats)
    with pytest.raises(CoverageError, match="observation.velocity"):
        generate_coverage(root, tmp_path / "out", robot="panda")
    with pytest.raises(CoverageError, match="already exists"):
        generate_coverage(corridor_root, corridor_root, robot="panda")
    with pytest.raises(CoverageError, match="episodes"):
        CoverageConfig(episodes=0)


def test_cli_coverage(corridor_root, tmp_path):
    res = CliRunner().invoke(app, ["coverage", str(corridor_root), str(tmp_path / "out"), "--robot", "panda",
                                   "-n", "4", "--seed", "1", "--json", str(tmp_path / "c.json"),
                                   "--report", str(tmp_path / "r.md")])
    assert res.exit_code == 0, res.output
    assert "D007 findings 7 ->" in res.output and (tmp_path / "c.json").is_file()
    assert "Coverage: D007 findings 7 ->" in (tmp_path / "r.md").read_text()
    assert open_dataset(tmp_path / "out").num_episodes == 14
    assert DoctorConfig().bins == 10


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
    from demoforge.raw.replay import episode_scene, replay_states

    before = tree_digest(raw_run)
    cfg = CoverageConfig(episodes=4, seed=0)
    report = generate_coverage(raw_run, tmp_path / "a", config=cfg)  # the robot is found from the state names
    assert tree_digest(raw_run) == before
    assert report.occupancy_after.min() > report.occupancy_before.min()
    assert report.d007_after < report.d007_before
    ds = open_dataset(report.output)
    assert ds.num_episodes == 2 + 4 and check_dataset(report.output) == []
    e = ds.num_episodes - 1
    row = ds.episode(e)
    assert row["demoforge/outcome"] == "null" and row["demoforge/problem"] == ds.episode(1)["demoforge/problem"]
    cols = ds.read_episode(e, ["observation.state", "plan.operator", "symbolic.state"])
    assert (cols["plan.operator"] == -1).all() and cols["symbolic.state"].dtype == bool
    # the coverage episode replays from its own sim.state in its rebuilt scene
    replayed = np.array([s.data.qpos[s.robot.arm_qpos] for s in replay_states(report.output, e,
                                                                              episode_scene(report.output, e))])
    np.testing.assert_allclose(replayed, cols["observation.state"][:, :7], atol=1e-6)
    again = generate_coverage(raw_run, tmp_path / "b", config=cfg)
    assert tree_digest(again.output) == tree_digest(report.output)
