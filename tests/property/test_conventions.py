"""Properties of the action conventions (`demoforge.convert.conventions`) on random episodes:
joint_vel integrates back to joint_pos, joint_target at the native rate is the recorded action,
and a rate that divides the native one keeps exactly every k-th tick."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from demoforge.convert import BakeError, Episode, project, valid_rates
from demoforge.convert.conventions import stride_for

NATIVE = (60, 50, 30, 24)  # native control rates [Hz]
ANGLES = st.floats(-np.pi, np.pi, allow_nan=False, width=64)


@st.composite
def episodes(draw) -> Episode:
    """A demoforge raw episode: random achieved q and gripper, commanded targets near them."""
    fps = draw(st.sampled_from(NATIVE))
    length = draw(st.integers(1, 40))
    n_arm = draw(st.integers(1, 7))
    q = draw(arrays(np.float64, (length, n_arm), elements=ANGLES))
    gripper = draw(arrays(np.float64, (length,), elements=st.floats(0.0, 1.0)))
    target = q + draw(arrays(np.float64, (length, n_arm), elements=st.floats(-0.05, 0.05)))
    target_gripper = draw(arrays(np.float64, (length,), elements=st.floats(0.0, 1.5)))  # > 1: squeeze
    # the raw dataset stores these columns as float32: the reader hands them on as read
    target, target_gripper = target.astype(np.float32), target_gripper.astype(np.float32)
    action = np.column_stack([target, target_gripper])
    return Episode(
        source=Path("synthetic"), index=0, reader="demoforge_raw", fps=fps, task="t", time=np.arange(length) / fps,
        q=q, gripper=gripper, joint_names=tuple(f"j{k}" for k in range(n_arm)), target=target,
        target_gripper=target_gripper, raw_command=action.copy(), sim_state=None, law={"mode": "joint_position"},
        action=action, action_names=(*(f"j{k}" for k in range(n_arm)), "gripper"),
    )


@st.composite
def episode_and_rate(draw) -> tuple[Episode, int]:
    ep = draw(episodes())
    return ep, draw(st.sampled_from(valid_rates(ep.fps)))


@settings(max_examples=60, deadline=None)
@given(episode_and_rate())
def test_joint_vel_integrates_back_to_joint_pos(case):
    ep, rate = case
    pos, vel = project(ep, "joint_pos", rate), project(ep, "joint_vel", rate)
    n = ep.n_arm
    np.testing.assert_array_equal(vel.action[:, n], pos.action[:, n])  # the same gripper: the next tick's
    # every output tick: q now + v / rate lands on joint_pos's target (the last tick: v = 0, stays)
    step = pos.state[:, :n].astype(np.float64) + vel.action[:, :n].astype(np.float64) / rate
    np.testing.assert_allclose(step, pos.action[:, :n], rtol=0, atol=1e-5)
    # and integrated from the first tick, the whole trajectory comes back
    walked = ep.q[0] + np.cumsum(vel.action[:, :n].astype(np.float64), axis=0) / rate
    np.testing.assert_allclose(walked, pos.action[:, :n], rtol=0, atol=1e-5 * len(pos.ticks))


@settings(max_examples=60, deadline=None)
@given(episodes())
def test_joint_target_at_the_native_rate_is_the_recorded_action(ep):
    p = project(ep, "joint_target")
    np.testing.assert_array_equal(p.ticks, np.arange(ep.length))
    assert p.action.tobytes() == ep.action.astype(np.float32).tobytes()
    assert p.action.tobytes() == project(ep, "as_recorded").action.tobytes()


@settings(max_examples=60, deadline=None)
@given(episode_and_rate(), st.sampled_from(["joint_pos", "joint_vel", "joint_target", "raw_cmd", "as_recorded"]))
def test_a_rate_dividing_the_native_one_keeps_exactly_every_kth_tick(case, convention):
    ep, rate = case
    k = ep.fps // rate
    p = project(ep, convention, rate)
    np.testing.assert_array_equal(p.ticks, np.arange(0, ep.length, k))
    assert p.state.tobytes() == np.column_stack([ep.q[::k], ep.gripper[::k]]).astype(np.float32).tobytes()
    assert len(p.action) == len(p.state) == -(-ep.length // k)
    if convention in ("joint_target", "raw_cmd", "as_recorded"):  # sampled, never recomputed
        assert p.action.tobytes() == ep.action[::k].astype(np.float32).tobytes()


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(NATIVE), st.integers(-5, 100))
def test_a_rate_that_does_not_divide_the_native_one_is_refused(native, rate):
    if rate in valid_rates(native):
        assert stride_for(native, rate) * rate == native
    else:
        with pytest.raises(BakeError, match="valid rates are"):
            stride_for(native, rate)
