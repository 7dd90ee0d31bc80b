"""The contact-stability linter on tiny MuJoCo scenes that really explode, penetrate and jitter."""

import mujoco
import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim.lint import lint_contact_stability, load_mjcf, record_settle


def box(name, z, *, half=0.02, mass=0.1, solref="0.02 1", solimp="0.9 0.95 0.001", x=0.0):
    return (f'<body name="{name}" pos="{x} 0 {z}"><freejoint/><geom name="{name}" type="box" '
            f'size="{half} {half} {half}" mass="{mass}" solref="{solref}" solimp="{solimp}"/></body>')


def scene(*bodies, option='timestep="0.002" cone="elliptic" impratio="10"', flags="", floor_solref="0.02 1"):
    return (f'<mujoco><option {option}>{flags}</option><worldbody>'
            f'<geom name="floor" type="plane" size="1 1 0.1" solref="{floor_solref}"/>{"".join(bodies)}'
            f'</worldbody></mujoco>')


def lint(xml, **kw):
    return lint_contact_stability(mujoco.MjModel.from_xml_string(xml), **kw)


STACK = scene(box("a", 0.02), box("b", 0.06))
# Two 10 cm boxes started 7 cm inside each other with a contact 20x stiffer than the step can resolve.
EXPLODING = scene(box("a", 0.05, half=0.05, solref="0.0005 1"), box("b", 0.08, half=0.05, solref="0.0005 1", x=0.02),
                  option='timestep="0.01"', flags='<flag refsafe="disable"/>')
# 200 kg on a soft, weak contact.
PENETRATING = scene(box("heavy", 0.05, half=0.05, mass=200, solref="0.1 1", solimp="0.5 0.6 0.01"))
# A contact with 5% of critical damping: the box dropped from 2 cm keeps bouncing.
UNDERDAMPED = scene(box("b0", 0.04, solref="0.5 0.05"), option='timestep="0.001"', floor_solref="0.5 0.05")
# One PGS iteration at a 10 ms step: the solver never converges and the resting force rattles.
UNCONVERGED = scene(box("b0", 0.02), option='timestep="0.01" solver="PGS" iterations="1"')


def codes(report):
    return [f.code for f in report.findings]


def test_resting_stack_has_no_findings():
    report = lint(STACK)
    assert report.findings == ()
    assert [(p.geom1, p.geom2) for p in report.trace.pairs] == [("a", "b"), ("floor", "a")]
    assert len(report.trace.qacc_max) == 500


def test_interpenetrating_stiff_boxes_explode():
    report = lint(EXPLODING)
    assert codes(report) == ["C001"]
    [f] = report.findings
    assert f.value > 1e3 and f.unit == "J"
    assert set(f.geoms) == {"a", "b"} and "mm inside each other" in f.fix
    assert f.bodies and f.bodies[0] in {"a", "b"}


def test_heavy_box_on_soft_contact_penetrates_and_the_fix_helps():
    [f] = lint(PENETRATING).findings
    assert (f.code, f.geoms, f.bodies) == ("C002", ("floor", "heavy"), ("world", "heavy"))
    assert f.value > 2e-3
    # The fix names a stiffer solref and dmin/dmax 0.95/0.99; applying it removes the finding.
    assert "0.95/0.99" in f.fix
    fixed = PENETRATING.replace('solref="0.1 1" solimp="0.5 0.6 0.01"', 'solref="0.02 1" solimp="0.95 0.99 0.001"')
    assert lint(fixed).findings == ()


@pytest.mark.parametrize("xml, fixed", [
    (UNDERDAMPED, UNDERDAMPED.replace("0.5 0.05", "0.02 1")),
    (UNCONVERGED, UNCONVERGED.replace('solver="PGS" iterations="1"', 'solver="Newton"')),
])
def test_jittering_contacts_and_their_fix(xml, fixed):
    [f] = lint(xml).findings
    assert (f.code, f.geoms) == ("C003", ("floor", "b0"))
    assert f.value > 0.1
    assert lint(fixed).findings == ()


def test_unconverged_jitter_fix_names_the_solver():
    [f] = lint(UNCONVERGED).findings
    assert "solver newton (now pgs)" in f.fix and "now 1" in f.fix


def test_actuator_work_is_not_counted_as_created_energy():
    # A position servo swings a 1 kg pendulum from 0 to 1 rad: energy rises, but the actuator paid for it.
    xml = """<mujoco><option timestep="0.002"/><worldbody>
      <body name="link"><joint name="hinge" axis="0 1 0" damping="2"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1"/></body></worldbody>
      <actuator><position joint="hinge" kp="200"/></actuator>
      <keyframe><key name="swing" ctrl="1"/></keyframe></mujoco>"""
    report = lint(xml, keyframe="swing")
    assert report.trace.kinetic_energy.max() > 0.05
    assert report.findings == ()


def test_rollout_is_deterministic_and_leaves_the_model_alone():
    model = mujoco.MjModel.from_xml_string(UNCONVERGED)
    flags = model.opt.enableflags
    a, b = record_settle(model, settle_s=0.5), record_settle(model, settle_s=0.5)
    assert model.opt.enableflags == flags
    np.testing.assert_array_equal(a.normal_force, b.normal_force)
    np.testing.assert_array_equal(a.energy_gain, b.energy_gain)


def test_unknown_keyframe_lists_the_keyframes():
    xml = STACK.replace("</worldbody>", '</worldbody><keyframe><key name="home"/></keyframe>')
    with pytest.raises(SimError, match=r"'nope'.*\['home'\]"):
        lint(xml, keyframe="nope")


def test_settle_time_must_cover_two_windows():
    with pytest.raises(SimError, match="settle_s=0.3"):
        lint(STACK, settle_s=0.3)


def test_load_mjcf_names_the_file(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><geom type='nonsense'/></worldbody></mujoco>")
    with pytest.raises(SimError, match="bad.xml"):
        load_mjcf(bad)
    with pytest.raises(SimError, match="missing.xml"):
        load_mjcf(tmp_path / "missing.xml")
    other = tmp_path / "scene.txt"
    other.write_text(STACK)
    with pytest.raises(SimError, match=r"\.xml"):
        load_mjcf(other)
    good = tmp_path / "good.xml"
    good.write_text(STACK)
    assert load_mjcf(good).nbody == 3


@pytest.mark.parametrize("option", ['timestep="0.002" cone="elliptic" impratio="10"', 'timestep="0.002" cone="pyramidal"'])
def test_the_trace_holds_mujocos_own_contact_forces_and_depths(option):
    """The trace reads whole contact arrays (an elliptic cone's normal force straight from the
    constraint forces); per step and geom pair it holds what mj_contactForce and the contacts'
    distances give: the summed normal force and the deepest penetration."""
    m = mujoco.MjModel.from_xml_string(scene(box("a", 0.02), box("b", 0.06), option=option))
    trace = record_settle(m, settle_s=0.1)
    d, force6 = mujoco.MjData(m), np.zeros(6)
    names = [(p.geom1, p.geom2) for p in trace.pairs]
    assert len(names) == 2
    for k in range(len(trace.qacc_max)):
        mujoco.mj_step(m, d)
        depth, force = np.full(len(names), np.nan), np.zeros(len(names))
        for c in range(d.ncon):
            g1, g2 = sorted(int(g) for g in d.contact[c].geom)
            col = names.index((m.geom(g1).name, m.geom(g2).name))
            mujoco.mj_contactForce(m, d, c, force6)
            depth[col] = max(np.nan_to_num(depth[col], nan=-np.inf), -d.contact[c].dist)
            force[col] += force6[0]
        np.testing.assert_array_equal(trace.depth[k], depth)
        np.testing.assert_array_equal(trace.normal_force[k], force)
    assert trace.normal_force[1:].min() > 0.0  # both pairs carry a box from the second step on
