"""--env.image_size in the lerobot plugin: it sizes every camera (over a look's size), lerobot's
observation_height/width say the same or are refused, and a policy or a training dataset whose
images have another size than the env renders is refused with both sizes named."""

import sys

import numpy as np
import pytest

from demoforge.errors import DemoforgeError

pytestmark = pytest.mark.closed_loop

BASE = {"task": "pnp", "problems": 1, "episodes": 2}


def _config(**kwargs):
    from lerobot.envs.factory import make_env_config

    import lerobot_env_demoforge  # noqa: F401  (registers --env.type=demoforge, as lerobot's plugin scan does)

    return make_env_config("demoforge", **{**BASE, **kwargs})


def test_image_size_sizes_every_camera_over_the_looks_size():
    cfg = _config(cameras="front,wrist", look="randomized", image_size="96x64")
    assert cfg.features["pixels/front"].shape == cfg.features["pixels/wrist"].shape == (64, 96, 3)
    vec = cfg.create_envs(n_envs=1)["demoforge"][0]
    obs, _ = vec.reset(seed=[0])
    vec.close()
    assert obs["pixels"]["front"].shape == (1, 64, 96, 3) and obs["pixels"]["wrist"].shape == (1, 64, 96, 3)
    assert obs["pixels"]["front"].std() > 5  # a picture, not a blank


def test_observation_height_and_width_size_the_images_and_must_agree_with_image_size():
    assert _config(cameras="front", observation_height=48, observation_width=64).features["pixels/front"].shape \
        == (48, 64, 3)
    assert _config(cameras="front").features["pixels/front"].shape == (224, 224, 3)
    with pytest.raises(DemoforgeError, match=r"--env.image_size=96 \(96x96\).*\(64x48\) disagree"):
        _config(cameras="front", image_size="96", observation_height=48, observation_width=64)
    with pytest.raises(DemoforgeError, match="give both"):
        _config(cameras="front", observation_height=48)
    with pytest.raises(DemoforgeError, match=r"--env.image_size=95: .*even"):
        _config(cameras="front", image_size="95")


def _act(tmp_path, size):
    from lerobot.configs import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig

    cfg = ACTConfig(device="cpu", input_features={
        "observation.state": PolicyFeature(type=FeatureType.STATE, shape=(8,)),
        "observation.images.front": PolicyFeature(type=FeatureType.VISUAL, shape=(3, *size))},
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(8,))})
    folder = tmp_path / f"act-{size[0]}x{size[1]}"
    cfg.save_pretrained(folder)
    return folder


def test_lerobot_evals_policy_with_another_image_size_is_refused_naming_both(tmp_path, monkeypatch):
    cfg = _config(cameras="front", image_size="96")
    wrong = _act(tmp_path, (224, 224))
    monkeypatch.setattr(sys, "argv", ["lerobot-eval", f"--policy.path={wrong}", "--env.type=demoforge"])
    with pytest.raises(DemoforgeError) as err:
        cfg.create_envs(n_envs=1)
    text = str(err.value)
    assert "observation.images.front: the policy expects 224x224 px (shape (3, 224, 224))" in text
    assert "the env renders 96x96 px" in text
    assert "--env.image_size=224x224" in text
    monkeypatch.setattr(sys, "argv", ["lerobot-eval", f"--policy.path={_act(tmp_path, (96, 96))}"])
    vec = cfg.create_envs(n_envs=1)["demoforge"][0]  # the same size: made
    vec.close()


def test_a_training_datasets_image_size_must_be_the_envs(family_run, tmp_path):
    from demoforge.convert import BakeConfig, bake
    from demoforge.render import RenderConfig, parse_look_arg, render_dataset
    from demoforge.render.look import sized_look

    request = parse_look_arg("plain")
    request = type(request)(**{**request.__dict__, "look": sized_look(request.look, (64, 48))})
    render_dataset(family_run / "success", tmp_path / "r", RenderConfig(looks=(request,), cameras=("front",),
                                                                      episodes=(0,)))
    baked = bake([tmp_path / "r"], tmp_path / "b", BakeConfig(control_freq=15))
    base = {**BASE, "split": "train", "problems": 2, "cameras": "front", "dataset": str(baked)}
    refused = r"(?s)--env.dataset=.*the dataset's video expects 64x48 px.*renders 224x224 px.*--env.image_size=64x48"
    with pytest.raises(DemoforgeError, match=refused):
        _config(**base)
    assert _config(**base, image_size="64x48").features["pixels/front"].shape == (48, 64, 3)


def test_images_of_the_same_env_config_repeat_with_the_seed():
    cfg = _config(cameras="front", image_size="64")
    vec = cfg.create_envs(n_envs=1)["demoforge"][0]
    a, _ = vec.reset(seed=[5])
    b, _ = vec.reset(seed=[5])
    vec.close()
    np.testing.assert_array_equal(a["pixels"]["front"], b["pixels"]["front"])


def test_lerobot_eval_itself_refuses_before_loading_the_policy(tmp_path):
    """The real console script: the env is made (and the check runs) before the policy's weights load,
    so a policy folder holding only its config.json is enough to see the refusal."""
    import os
    import subprocess
    from pathlib import Path

    from tests.timeouts import SUBPROCESS_S

    policy = _act(tmp_path, (224, 224))
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([str(Path(sys.executable).parent / "lerobot-eval"), f"--policy.path={policy}",
                           "--policy.device=cpu", "--env.type=demoforge", "--env.task=pnp", "--env.problems=1",
                           "--env.cameras=front", "--env.image_size=96", "--eval.n_episodes=1", "--eval.batch_size=1",
                           f"--output_dir={tmp_path / 'eval'}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=SUBPROCESS_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert "the policy expects 224x224 px" in out and "the env renders 96x96 px" in out, out[-2000:]


def test_task_package_loads_a_family_of_the_users_own(tmp_path, monkeypatch):
    """--env.task_package: the lerobot env of a family no installed package brings (the near example)
    is made and reset; a wrong path is refused naming the flag."""
    from pathlib import Path

    from demoforge.tasks import package as registry

    registry.packages()  # the registry as it was: the package loaded here leaks into no other test
    monkeypatch.setattr(registry, "_PACKAGES", dict(registry._PACKAGES))
    monkeypatch.setattr(registry, "_LOADED", [])
    monkeypatch.setenv(registry.ENV_VAR, "")
    near = Path(__file__).parents[2] / "examples" / "tasks" / "near" / "near_task.py"
    cfg = _config(task="near_pair", task_package=str(near))
    vec = cfg.create_envs(n_envs=1)["demoforge"][0]
    obs, _ = vec.reset(seed=[0])
    vec.close()
    assert obs["agent_pos"].shape == (1, 8) and obs["environment_state"].shape[1] == cfg.features[
        "environment_state"].shape[0] > 0
    with pytest.raises(DemoforgeError, match=r"--env.task_package=nowhere/near\.py: --task-package 'nowhere/near\.py': "
                                             "no such file"):
        _config(task="near_pair", task_package="nowhere/near.py")
