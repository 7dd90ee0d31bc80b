"""The pixel recipe of benchmarks/bench_train_eval.py, in small: demos rendered under a training
look at a chosen size with two cameras, baked with the goal-only environment state, a from-scratch pixel ACT
trained for a few steps with stock lerobot-train, and lerobot-eval from pixels on the demoforge
env under two looks."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from demoforge.dataset import open_dataset
from tests.gym.conftest import family_run  # noqa: F401  (a shared session fixture)
from tests.timeouts import SUBPROCESS_S

pytestmark = pytest.mark.closed_loop

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_train_eval.py"


def test_the_pixel_recipe_trains_and_evaluates_from_pixels(tmp_path):
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(BENCH), "--obs", "pixels", "--families", "pnp", "--demos", "2",
                           "--steps", "2", "--episodes", "2", "--episode-length", "6", "--batch-size", "2",
                           "--image-size", "64", "--camera", "front,wrist", "--eval-looks", "plain,randomized:test",
                           "--work", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=SUBPROCESS_S)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert proc.stdout.strip().splitlines()[-1].startswith("headline: pnp[plain] ")
    work = tmp_path / "pnp-2-pixels-front+wrist64-randomized-train"
    baked = open_dataset(work / "baked")
    for camera in ("front", "wrist"):  # both cameras rendered, baked and (below) observed by the policy
        assert baked.info.features[f"observation.images.{camera}"].shape[:2] == (64, 64)
    assert baked.info.features["observation.environment_state"].shape == (10,)  # the target region only
    assert json.loads((work / "baked" / "meta" / "bake.json").read_text())["environment_state"]["kind"] == "goal"
    for look in ("plain-train-64", "randomized-test-64"):
        info = json.loads((work / f"eval-2-2-{look}" / "eval_info.json").read_text())
        assert info["overall"]["n_episodes"] == 2
    config = json.loads((work / "train" / "checkpoints" / "000002" / "pretrained_model" / "config.json").read_text())
    assert {"observation.images.front", "observation.images.wrist"} <= set(config["input_features"])


def test_the_plugin_observes_the_environment_state_kind_its_dataset_was_baked_with(family_run, tmp_path):
    from lerobot.envs.factory import make_env_config
    from lerobot.utils.import_utils import register_third_party_plugins

    from demoforge.convert import BakeConfig, bake
    from demoforge.replay import EPISODE_MODELS

    register_third_party_plugins()
    baked = bake([family_run], tmp_path / "goal", BakeConfig(control_freq=15, environment_state=True,
                                                             environment_state_kind="goal"), models=EPISODE_MODELS)
    cfg = make_env_config("demoforge", task="pnp", split="train", problems=2, episodes=2, dataset=str(baked))
    assert cfg.features["environment_state"].shape == (10,)  # the target region, no object pose
    with pytest.raises(ValueError, match="environment state kind 'goal'"):
        make_env_config("demoforge", task="pnp", split="train", problems=2, dataset=str(baked),
                        environment_state="objects")


def test_the_std_floor_reaches_the_policys_normalizer_and_keeps_the_exact_stats(tmp_path):
    """`--std-floor`: the spread stock lerobot-train normalizes each non-image feature by is at
    least the floor (a near-constant block quaternion no longer turns a small tilt into hundreds of
    units), the exact statistics stay beside it, and the run is kept apart as a variant."""
    from safetensors.numpy import load_file

    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1"}
    args = [sys.executable, str(BENCH), "--families", "pnp", "--demos", "2", "--steps", "2", "--episodes", "1",
            "--episode-length", "4", "--batch-size", "2", "--std-floor", "0.2", "--work", str(tmp_path)]
    refused = subprocess.run(args, capture_output=True, text=True, env=env, timeout=SUBPROCESS_S)
    assert refused.returncode != 0 and "--variant" in refused.stderr
    proc = subprocess.run([*args, "--variant", "floor"], capture_output=True, text=True, env=env,
                          timeout=SUBPROCESS_S)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    meta = tmp_path / "pnp-2-floor" / "baked" / "meta"
    exact = json.loads((meta / "stats.exact.json").read_text())["observation.environment_state"]
    floored = json.loads((meta / "stats.json").read_text())["observation.environment_state"]
    assert min(exact["std"]) < 0.2  # the floor moved something
    assert floored["std"] == [max(s, 0.2) for s in exact["std"]]
    assert all(hi - lo >= 0.4 - 1e-9 for lo, hi in zip(floored["min"], floored["max"], strict=True))
    model = tmp_path / "pnp-2-floor" / "train" / "checkpoints" / "000002" / "pretrained_model"
    (norm,) = model.glob("policy_preprocessor_step_*_normalizer_processor.safetensors")
    assert min(load_file(norm)["observation.environment_state.std"]) >= 0.2 - 1e-6
