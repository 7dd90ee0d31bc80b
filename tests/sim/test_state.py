import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim import build_scene, control_step, default_scene, restore, snapshot, state_size, step


def _commands(seed, n, home):
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    return [(home + rng.normal(0, 0.2, len(home)), float(rng.uniform())) for _ in range(n)]


def _rollout(seed):
    scene = build_scene(default_scene())
    law = scene.robot.card.controller
    trajectory = []
    for arm, gripper in _commands(seed, 40, np.array(scene.robot.card.home)):
        control_step(scene, law, arm, gripper, 10)
        trajectory.append(snapshot(scene.model, scene.data))
    return np.array(trajectory)


def test_same_scene_seed_and_commands_give_bitwise_identical_trajectories():
    first, second = _rollout(11), _rollout(11)
    assert first.tobytes() == second.tobytes()
    assert first.tobytes() != _rollout(12).tobytes()  # the test can fail


def test_restore_replays_exactly():
    scene = build_scene(default_scene())
    m, d = scene.model, scene.data
    law = scene.robot.card.controller
    commands = _commands(1, 20, np.array(scene.robot.card.home))
    control_step(scene, law, *commands[0], 10)
    saved = snapshot(m, d)
    assert saved.shape == (state_size(m),)

    def continue_run():
        out = []
        for arm, gripper in commands[1:]:
            control_step(scene, law, arm, gripper, 10)
            out.append(d.qpos.copy())
        return np.array(out)

    first = continue_run()
    restore(m, d, saved)
    np.testing.assert_array_equal(snapshot(m, d), saved)
    assert continue_run().tobytes() == first.tobytes()


def test_restore_rejects_a_snapshot_of_another_model():
    scene = build_scene(default_scene())
    other = build_scene(default_scene(props=()))
    with pytest.raises(SimError, match="different model"):
        restore(scene.model, scene.data, snapshot(other.model, other.data))
    step(scene)  # still usable
