"""eval --from-dataset starts from the exact recorded states."""

import json

import numpy as np

from demoforge.dataset import open_dataset
from demoforge.policy import RolloutSettings, load_policy
from demoforge.policy.evaluate import evaluate_from_dataset


def test_eval_starts_from_the_recorded_states_and_replays_to_success(expert_data, tmp_path):
    summary = evaluate_from_dataset(load_policy(f"replay:{expert_data}"), expert_data, tmp_path / "e", envs=2,
                                    spec="r", settings=RolloutSettings(max_ticks=900))
    assert summary["overall"]["episodes"] == 2 and summary["overall"]["success_rate"] == 1.0
    src, ev = open_dataset(expert_data), open_dataset(tmp_path / "e" / "dataset")
    for k in range(2):
        a = src.read_episode(k, ["sim.state"])["sim.state"]
        b = ev.read_episode(k, ["sim.state"])["sim.state"]
        assert np.array_equal(a[0], b[0])
        source = json.loads(ev.episode(k)["demoforge/eval_source"])
        assert source["episode"] == k
        assert ev.episode(k)["demoforge/scene_draw"] == src.episode(k)["demoforge/scene_draw"]


def test_eval_of_a_subset(expert_data, tmp_path):
    summary = evaluate_from_dataset(load_policy("tests.policy.scripted:hold"), expert_data, tmp_path / "e",
                                    episodes=[1], settings=RolloutSettings(max_ticks=10), spec="hold")
    ev = open_dataset(tmp_path / "e" / "dataset")
    assert ev.num_episodes == 1 and summary["overall"]["success_rate"] == 0.0
    first = open_dataset(expert_data).read_episode(1, ["sim.state"])["sim.state"][0]
    assert np.array_equal(ev.read_episode(0, ["sim.state"])["sim.state"][0], first)


def test_eval_reproduces_the_recorded_randomization_draw(pnp, tmp_path):
    from demoforge.policy import rollout
    from demoforge.randomize import RandomizationSpec
    from demoforge.replay import episode_scene

    spec = RandomizationSpec(mass_scale=(0.8, 1.2), damping_scale=(0.8, 1.25), kp_scale=(0.9, 1.1),
                             spawn_jitter=0.02)
    rollout(load_policy("tests.policy.scripted:hold"), [pnp], tmp_path / "r", episodes=2, spec="hold",
            settings=RolloutSettings(max_ticks=8), randomization=spec)
    src_root = tmp_path / "r" / "dataset"
    src = open_dataset(src_root)
    draws = [json.loads(src.episode(k)["demoforge/randomization"]) for k in range(2)]
    assert draws[0] and draws[0] != draws[1]
    evaluate_from_dataset(load_policy("tests.policy.scripted:hold"), src_root, tmp_path / "e", spec="hold",
                          settings=RolloutSettings(max_ticks=8))
    ev_root = tmp_path / "e" / "dataset"
    ev = open_dataset(ev_root)
    for k in range(2):
        assert json.loads(ev.episode(k)["demoforge/randomization"]) == draws[k]
        a, b = episode_scene(src_root, k).model, episode_scene(ev_root, k).model
        assert np.array_equal(a.body_mass, b.body_mass) and np.array_equal(a.dof_damping, b.dof_damping)
        # the same policy from the same state under the same physics: the same episode
        x, y = src.read_episode(k, ["sim.state"])["sim.state"], ev.read_episode(k, ["sim.state"])["sim.state"]
        assert np.array_equal(x, y)
    from demoforge.policy.replay import replay_dataset

    assert replay_dataset(src_root).exact  # randomized roll-outs replay bit for bit too
