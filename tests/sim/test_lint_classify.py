"""The contact-stability rules on synthetic traces: no MuJoCo involved."""

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from demoforge.sim import lint_classify
from demoforge.sim.lint_classify import ContactPair, LintThresholds, SettleTrace, classify

DT = 0.005
STEPS = 200  # 1 s; the default trailing window is the last 50 steps


def settled_trace(**changes) -> SettleTrace:
    """Two boxes resting on a floor: forces constant, 0.2 mm deep, no energy created."""
    pairs = (
        ContactPair("box_a", "floor", "a", "world", (0.02, 1.0), (0.9, 0.95, 0.001, 0.5, 2.0)),
        ContactPair("box_b", "floor", "b", "world", (0.02, 1.0), (0.9, 0.95, 0.001, 0.5, 2.0)),
    )
    qacc = np.full(STEPS, 1e-6)
    qacc[:10] = 9.81  # the first steps fall onto the floor
    fields = dict(
        timestep=DT,
        integrator="euler",
        solver="newton",
        iterations=100,
        body_names=("world", "a", "b"),
        qacc_max=qacc,
        qacc_body=np.ones(STEPS, np.int64),
        kinetic_energy=np.zeros(STEPS),
        energy_gain=np.zeros(STEPS),
        unstable=np.zeros(STEPS, bool),
        pairs=pairs,
        depth=np.full((STEPS, 2), 2e-4),
        normal_force=np.tile([0.98, 1.96], (STEPS, 1)),
    )
    fields.update(changes)
    return SettleTrace(**fields)


def test_classifier_does_not_import_mujoco():
    source = Path(lint_classify.__file__).read_text()
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert "mujoco" not in imported and "numpy" in imported


def test_settled_trace_has_no_findings():
    assert classify(settled_trace()) == []


def test_energy_creation_is_c001_and_names_the_body():
    gain = np.zeros(STEPS)
    gain[30:] = 3.0
    [f] = classify(settled_trace(energy_gain=gain, qacc_body=np.full(STEPS, 2)))
    assert f.code == "C001" and f.severity == "error"
    assert f.value == pytest.approx(3.0) and f.threshold == LintThresholds().energy_gain_tol and f.unit == "J"
    assert f.bodies == ("b",)
    assert "timestep" in f.fix and "0.0025" in f.fix


def test_energy_gain_at_the_tolerance_is_not_c001():
    t = LintThresholds()
    gain = np.full(STEPS, t.energy_gain_tol)
    assert classify(settled_trace(energy_gain=gain), t) == []


def test_growing_qacc_is_c001_even_without_energy_gain():
    qacc = np.full(STEPS, 1.0)
    qacc[-20:] = 1e5
    [f] = classify(settled_trace(qacc_max=qacc))
    assert f.code == "C001" and f.unit == "x" and f.value == pytest.approx(1e5)


def test_large_but_not_growing_qacc_is_not_c001():
    qacc = np.full(STEPS, 5e4)  # big everywhere: a stiff but steady model
    assert classify(settled_trace(qacc_max=qacc)) == []


def test_simulator_instability_is_c001():
    unstable = np.zeros(STEPS, bool)
    unstable[[40, 90]] = True
    [f] = classify(settled_trace(unstable=unstable))
    assert f.code == "C001" and f.value == 2 and "t = 0.2 s" in f.message


def test_nan_energy_counts_as_explosion():
    gain = np.zeros(STEPS)
    gain[50:] = np.nan
    assert [f.code for f in classify(settled_trace(energy_gain=gain))] == ["C001"]


def test_c001_names_initially_overlapping_geoms_in_the_fix():
    depth = np.full((STEPS, 2), 2e-4)
    depth[0, 1] = 0.03
    gain = np.full(STEPS, 10.0)
    [f] = classify(settled_trace(energy_gain=gain, depth=depth))
    assert f.geoms == ("box_b", "floor") and "30.0 mm" in f.fix


def test_c001_suppresses_penetration_and_jitter():
    force = np.tile([0.98, 1.96], (STEPS, 1))
    force[1::2, 0] = 0.0
    trace = settled_trace(energy_gain=np.full(STEPS, 10.0), depth=np.full((STEPS, 2), 0.01), normal_force=force)
    assert [f.code for f in classify(trace)] == ["C001"]
    no_explosion = dataclasses.replace(trace, energy_gain=np.zeros(STEPS))
    assert [f.code for f in classify(no_explosion)] == ["C002", "C002", "C003"]


def test_persistent_penetration_is_c002_per_pair():
    depth = np.full((STEPS, 2), 2e-4)
    depth[:, 1] = 4e-3
    [f] = classify(settled_trace(depth=depth))
    assert (f.code, f.severity, f.geoms, f.bodies) == ("C002", "warning", ("box_b", "floor"), ("b", "world"))
    assert f.value == pytest.approx(4e-3) and f.threshold == 1e-3 and f.unit == "m"
    assert "solref timeconst 0.02 -> 0.01" in f.fix


def test_penetration_before_the_window_or_intermittent_is_not_c002():
    depth = np.full((STEPS, 2), 2e-4)
    depth[:100, 0] = 0.01  # deep only while settling
    depth[-50:, 1] = np.where(np.arange(50) % 2, 0.01, np.nan)  # deep but present half the time
    assert all(f.code != "C002" for f in classify(settled_trace(depth=depth)))


def test_oscillating_force_is_c003():
    force = np.tile([0.98, 1.96], (STEPS, 1))
    force[:, 0] += 0.3 * np.sin(np.arange(STEPS) * 2.5)
    [f] = classify(settled_trace(normal_force=force))
    assert f.code == "C003" and f.geoms == ("box_a", "floor")
    assert f.value == pytest.approx(0.3 / np.sqrt(2) / 0.98, rel=0.05) and f.unit == "std/mean"
    assert "implicitfast" in f.fix and "dampratio" not in f.fix  # dampratio is already 1


def test_jitter_fix_lists_only_changes_that_apply():
    pair = ContactPair("box_a", "floor", "a", "world", (0.02, 0.1), (0.9, 0.95, 0.001, 0.5, 2.0))
    force = np.tile([0.98], (STEPS, 1)) * (1 + 0.5 * (np.arange(STEPS) % 2))[:, None]
    trace = settled_trace(pairs=(pair,), depth=np.full((STEPS, 1), 2e-4), normal_force=force,
                          integrator="implicitfast", solver="pgs", iterations=3)
    [f] = classify(trace)
    assert "dampratio 0.1 -> 1" in f.fix and "implicitfast" not in f.fix
    assert "solver newton (now pgs)" in f.fix and "now 3" in f.fix


def test_tiny_forces_are_not_judged():
    force = np.tile([0.98, 1.96], (STEPS, 1))
    force[:, 0] = 1e-5 * (np.arange(STEPS) % 2)
    assert classify(settled_trace(normal_force=force)) == []


def test_thresholds_move_the_line():
    depth = np.full((STEPS, 2), 2e-4)
    depth[:, 0] = 1.5e-3
    assert [f.code for f in classify(settled_trace(depth=depth))] == ["C002"]
    assert classify(settled_trace(depth=depth), LintThresholds(penetration_tol=2e-3)) == []


def test_findings_are_sorted_and_deterministic():
    depth = np.full((STEPS, 2), 5e-3)
    a = classify(settled_trace(depth=depth))
    assert [f.geoms for f in a] == [("box_a", "floor"), ("box_b", "floor")]
    assert a == classify(settled_trace(depth=depth))
