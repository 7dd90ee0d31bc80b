"""rollout / eval --look: a policy's cameras see a named look (one draw per episode) or, in eval,
each source episode's recorded look draw; `recorded` gives the policy, at its start tick, the
very frame the render stage drew for that tick."""

import json

import numpy as np
import pytest

from demoforge.dataset import open_dataset
from demoforge.policy import PolicyError, RolloutSettings, rollout
from demoforge.policy.evaluate import evaluate_from_dataset
from demoforge.policy.looks import eval_look
from demoforge.render import CameraRecorder, RenderConfig, loads_look_draw, parse_look_arg, render_dataset
from demoforge.replay import episode_scene
from demoforge.sim import restore
from tests.policy.scripted import seeing

SETTINGS = RolloutSettings(max_ticks=4)


@pytest.fixture(scope="module")
def rendered(expert_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("rendered") / "r"
    look = parse_look_arg("randomized")
    render_dataset(expert_data, out, RenderConfig(looks=(look,), cameras=("front",), seed=5))
    return out


def test_recorded_gives_the_policy_the_rendered_frame_of_its_start_tick(rendered, tmp_path):
    policy = seeing(224, 224)
    evaluate_from_dataset(policy, rendered, tmp_path / "e", spec="seeing", settings=SETTINGS,
                          look=eval_look("recorded", source=rendered))
    reader = open_dataset(rendered)
    draws = [loads_look_draw(reader.episode(k)["demoforge/look"]) for k in range(2)]
    assert draws[0] != draws[1]
    for k, first in ((0, policy.seen[0]), (1, policy.seen[SETTINGS.max_ticks])):
        scene = episode_scene(rendered, k)
        states = reader.read_episode(k, ["sim.state"])["sim.state"]
        with CameraRecorder(scene, draws[k], ["front"]) as cam:  # as the render stage draws tick 0
            restore(cam.scene.model, cam.scene.data, states[0])
            expected = cam.render()["observation.images.front"]
        np.testing.assert_array_equal(first, expected)  # bit for bit, before any encoding
        decoded = reader.read_video(k, "observation.images.front", [0])[0]
        assert np.abs(decoded.astype(int) - first.astype(int)).mean() < 6  # the stored frame, within the codec
    ev = open_dataset(tmp_path / "e" / "dataset")
    assert [json.loads(ev.episode(k)["demoforge/look"]) for k in range(2)] == draws  # recorded with each episode


def test_a_named_look_draws_per_episode_at_its_size_and_repeats_with_the_seed(pnp, tmp_path):
    frames = []
    for run in ("a", "b"):
        policy = seeing(64, 96)
        rollout(policy, [pnp], tmp_path / run, episodes=2, spec="seeing", settings=SETTINGS, seed=3,
                look=eval_look("randomized:test", seed=3, image_size=(96, 64)))
        frames.append([policy.seen[0], policy.seen[SETTINGS.max_ticks]])
        ds = open_dataset(tmp_path / run / "dataset")
        assert ds.info.features["observation.images.front"].shape == (64, 96, 3)
        draws = [json.loads(ds.episode(k)["demoforge/look"]) for k in range(2)]
        assert draws[0] != draws[1] and draws[0]["image"] == [96, 64]
    np.testing.assert_array_equal(frames[0][0], frames[1][0])
    assert not np.array_equal(frames[0][0], frames[0][1])  # another draw for the next episode


def test_a_policy_asking_for_another_size_is_refused_naming_both(pnp, tmp_path):
    with pytest.raises(PolicyError, match=r"observation.images.front.*\(24, 32, 3\).*\(224, 224, 3\)|"
                                          r"observation.images.front.*\(224, 224, 3\).*\(24, 32, 3\)"):
        rollout(seeing(24, 32), [pnp], tmp_path / "o", episodes=1, spec="seeing", settings=SETTINGS,
                look=eval_look("plain"))
    assert not (tmp_path / "o").exists()


def test_recorded_needs_recorded_episodes(expert_data, tmp_path):
    with pytest.raises(PolicyError, match="eval --from-dataset"):
        eval_look("recorded")
    with pytest.raises(PolicyError, match="records no look draw|no observation.images.front video"):
        evaluate_from_dataset(seeing(224, 224), expert_data, tmp_path / "e", spec="seeing", settings=SETTINGS,
                              look=eval_look("recorded", source=expert_data))
    with pytest.raises(PolicyError, match="--image-size needs --look"):
        eval_look(None, image_size=(96, 96))
