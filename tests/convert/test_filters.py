import numpy as np
import pytest

from demoforge.convert import BakeError, IdleFilter, dead_ticks, keep_mask, output_ticks
from tests.convert._sources import episode, motion

T = 14
STILL = slice(4, 10)  # ticks 4..9 hold tick 4's pose


def _idle_episode(*, push=0.0, object_moves=False):
    m = motion(T)
    q, g = m["q"].copy(), m["gripper"].copy()
    q[STILL], g[STILL] = q[4], g[4]
    target, tg = q.copy(), g.copy()  # command == achieved: no intent
    target[STILL] += push
    objects = np.full((T, 7), 0.3)
    if object_moves:
        objects[STILL, 2] += np.arange(6) * 1e-3
    return episode(T, q=q, gripper=g, target=target, target_gripper=tg, objects=objects)


def test_dead_ticks_are_dropped_but_the_first_of_each_run_is_kept():
    ep = _idle_episode()
    ticks = output_ticks(T, 1)
    dead = dead_ticks(ep, ticks)
    np.testing.assert_array_equal(np.flatnonzero(dead), [4, 5, 6, 7, 8])  # 9 moves on to 10
    np.testing.assert_array_equal(ticks[keep_mask(dead)], [0, 1, 2, 3, 4, 9, 10, 11, 12, 13])


def test_static_but_pushing_tick_is_kept():
    ep = _idle_episode(push=0.05)  # sustained offset between command and achieved pose: intent
    assert not dead_ticks(ep, output_ticks(T, 1)).any()


def test_moving_object_keeps_the_tick():
    ep = _idle_episode(object_moves=True)
    assert not dead_ticks(ep, output_ticks(T, 1)).any()


def test_tolerances_apply():
    ep = _idle_episode(push=0.005)  # under intent_tol
    assert dead_ticks(ep, output_ticks(T, 1)).sum() == 5
    assert not dead_ticks(ep, output_ticks(T, 1), IdleFilter(intent_tol=1e-3)).any()


def test_keep_mask_on_separate_runs():
    dead = np.array([0, 1, 1, 0, 1, 0, 1, 1, 1, 0], bool)
    np.testing.assert_array_equal(np.flatnonzero(keep_mask(dead)), [0, 1, 3, 4, 5, 6, 9])


def test_idle_filter_refused_without_object_poses():
    ep = episode(T, sim_state=None, objects=None, target=None, target_gripper=None, reader="lerobot")
    with pytest.raises(BakeError, match="without --filter-idle"):
        dead_ticks(ep, output_ticks(T, 1))
