"""Stock lerobot 0.6.1 drives the demoforge env: the plugin is discovered, lerobot-eval of the
expert's baked actions succeeds, and a lerobot-train checkpoint evaluates on the env."""

import importlib.metadata

import numpy as np
import pytest

from tests.closed_loop.conftest import eval_info, lerobot

pytestmark = pytest.mark.closed_loop

# The env draws the episodes the family_run fixture generated: 2 train problems x 2 episodes.
ENV = ["--env.type=demoforge", "--env.task=pnp", "--env.split=train", "--env.problems=2", "--env.episodes=2"]


def test_the_plugin_is_discovered_by_lerobot():
    from lerobot.configs import PreTrainedConfig
    from lerobot.envs.configs import EnvConfig
    from lerobot.utils.import_utils import register_third_party_plugins

    names = {d.metadata["Name"] for d in importlib.metadata.distributions()}
    assert "lerobot_env_demoforge" in names  # the prefix lerobot scans for, spelled as the import name
    register_third_party_plugins()
    assert "demoforge" in EnvConfig.get_known_choices()
    assert "demoforge_replay" in PreTrainedConfig.get_known_choices()


def test_the_gym_env_passes_gymnasiums_checker_and_reseeds_identically(family_baked):
    from gymnasium.utils.env_checker import check_env
    from lerobot.envs.factory import make_env_config

    cfg = make_env_config("demoforge", task="pnp", split="train", problems=2, episodes=2, dataset=str(family_baked))
    assert cfg.fps == 15 and cfg.features["environment_state"].shape == (20,)
    vec = cfg.create_envs(n_envs=2)["demoforge"][0]
    env = vec.envs[0].unwrapped
    check_env(env, skip_render_check=True)
    a, _ = vec.reset(seed=[3, 4])
    b, _ = vec.reset(seed=[3, 4])
    np.testing.assert_array_equal(a["environment_state"], b["environment_state"])
    obs, reward, terminated, truncated, info = vec.step(np.zeros((2, 8), np.float32) + a["agent_pos"])
    assert obs["agent_pos"].shape == (2, 8) and reward.shape == (2,) and not terminated.any()
    assert vec.call("_max_episode_steps")[0] == 600  # 40 s at 15 Hz
    vec.close()


def test_lerobot_eval_of_the_expert_replayed_through_the_env_succeeds(family_baked, tmp_path):
    lerobot("lerobot_eval", "--policy.type=demoforge_replay", f"--policy.dataset={family_baked}",
            "--policy.device=cpu", *ENV, f"--env.dataset={family_baked}", "--eval.n_episodes=8",
            "--eval.batch_size=4", f"--output_dir={tmp_path / 'eval'}", cwd=tmp_path)
    overall = eval_info(tmp_path / "eval")["overall"]
    assert overall["n_episodes"] == 8
    assert overall["pc_success"] >= 95.0


def test_a_tiny_lerobot_train_run_evaluates_on_the_env_and_its_checkpoint_loads_in_lerobot_eval(family_baked,
                                                                                                 tmp_path):
    proc = lerobot("lerobot_train", *ENV, f"--env.dataset={family_baked}", "--env.episode_length=10",
            "--env_eval_freq=3", "--eval.n_episodes=2", "--eval.batch_size=2", "--dataset.repo_id=local/pnp", f"--dataset.root={family_baked}", "--policy.type=act",
            "--policy.device=cpu", "--policy.push_to_hub=false", "--policy.dim_model=32",
            "--policy.dim_feedforward=64", "--policy.n_encoder_layers=1", "--policy.n_decoder_layers=1",
            "--policy.chunk_size=5", "--policy.n_action_steps=5", "--policy.use_vae=false", "--batch_size=8",
            "--steps=3", "--log_freq=1", "--save_freq=3", "--num_workers=0", "--wandb.enable=false",
            f"--output_dir={tmp_path / 'train'}", cwd=tmp_path)
    assert "Eval policy at step 3" in proc.stdout + proc.stderr  # --env_eval_freq evaluated on the env
    assert list((tmp_path / "train" / "eval").glob("videos_step_*/*/*.mp4"))
    model = tmp_path / "train" / "checkpoints" / "last" / "pretrained_model"
    assert (model / "model.safetensors").is_file()
    lerobot("lerobot_eval", f"--policy.path={model}", "--policy.device=cpu", *ENV, f"--env.dataset={family_baked}",
            "--env.episode_length=10", "--eval.n_episodes=2", "--eval.batch_size=2",
            f"--output_dir={tmp_path / 'eval'}", cwd=tmp_path)
    overall = eval_info(tmp_path / "eval")["overall"]
    assert overall["n_episodes"] == 2 and 0.0 <= overall["pc_success"] <= 100.0
