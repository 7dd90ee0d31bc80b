"""The family env's image size: one size for every camera (`image_size`) replaces a look's sizes,
a look's per-camera sizes hold without it, 224 x 224 without either; bad sizes are refused."""

import pytest

from demoforge.errors import DemoforgeError
from demoforge.gym import FamilyEnv, FamilyEnvConfig


def _pixels(env: FamilyEnv) -> dict:
    obs, _ = env.reset(seed=0)
    env.close()
    return {cam: frame.shape for cam, frame in obs["pixels"].items()}


def test_image_size_replaces_the_looks_size_for_every_camera():
    env = FamilyEnv(FamilyEnvConfig(task="pnp", problems=1, cameras=("front", "wrist"), look="randomized",
                                    image_size=(64, 96)))
    assert env.shapes()["pixels/front"] == env.shapes()["pixels/wrist"] == (64, 96, 3)
    assert _pixels(env) == {"front": (64, 96, 3), "wrist": (64, 96, 3)}


def test_a_looks_own_camera_sizes_hold_without_image_size(tmp_path):
    look = tmp_path / "small.yaml"
    look.write_text("name: small\nimage: {width: 64, height: 48}\ncameras:\n  wrist: {width: 32, height: 32}\n")
    env = FamilyEnv(FamilyEnvConfig(task="pnp", problems=1, cameras=("front", "wrist"), look=str(look)))
    assert env.shapes()["pixels/front"] == (48, 64, 3) and env.shapes()["pixels/wrist"] == (32, 32, 3)
    assert _pixels(env) == {"front": (48, 64, 3), "wrist": (32, 32, 3)}
    resized = FamilyEnv(FamilyEnvConfig(task="pnp", problems=1, cameras=("front", "wrist"), look=str(look),
                                        image_size=(40, 40)))
    assert _pixels(resized) == {"front": (40, 40, 3), "wrist": (40, 40, 3)}


def test_without_look_or_size_the_images_are_224():
    env = FamilyEnv(FamilyEnvConfig(task="pnp", problems=1, cameras=("front",)))
    assert env.shapes()["pixels/front"] == (224, 224, 3)


@pytest.mark.parametrize("size", [(63, 64), (0, 64), (64,), "96"])
def test_odd_or_malformed_sizes_are_refused(size):
    with pytest.raises(DemoforgeError, match=r"image_size .* even numbers"):
        FamilyEnv(FamilyEnvConfig(task="pnp", problems=1, cameras=("front",), image_size=size))

