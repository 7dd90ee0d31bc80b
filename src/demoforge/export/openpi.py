"""openpi's side of an export: norm_stats.json and a training config module.

What openpi does with a LeRobot dataset (read from Physical-Intelligence/openpi, not run:
openpi is not installable from PyPI; its pinned lerobot is, see scripts/lerobot-v21-venv.sh):

- `training/data_loader.create_torch_dataset` opens `LeRobotDataset(repo_id, delta_timestamps=
  {key: [t / fps for t in range(action_horizon)]})` for the config's `action_sequence_keys`,
  from `$HF_LEROBOT_HOME/<repo_id>`; lerobot clamps the chunk at the episode's end (the last
  action repeats).
- `scripts/compute_norm_stats.py` runs the repack and data transforms (our Inputs, then
  `DeltaActions(mask)`: actions[..., :len(mask)] -= where(mask, state, 0) for every step of
  the chunk) and accumulates `RunningStats` of the keys "state" and "actions" over every
  sample; `shared/normalize.save` writes `{"norm_stats": {key: {mean, std, q01, q99}}}`.
  Its quantiles come from 5000-bin histograms; ours are exact (demoforge.dataset.quantiles),
  std is the population one in both, and we use every frame where its loader drops the
  last partial batch.
- `DataConfigFactory._load_norm_stats` loads `<assets_dir>/<asset_id>/norm_stats.json`;
  pi0 normalizes with mean/std, pi0-FAST and pi05 with q01/q99.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.dataset.keys import camera_of
from demoforge.dataset.layout import write_json_atomic
from demoforge.dataset.quantiles import streaming_stats
from demoforge.export.source import BakedSource, ExportError, depth_stamp, maps_note

DEFAULT_HORIZON = 50  # openpi's Pi0Config.action_horizon
OPENPI_DIR = "meta/openpi"  # the AssetsConfig folder: assets_dir = <root>/meta, asset_id = "openpi"
ASSET_ID = "openpi"
NORM_STATS = f"{OPENPI_DIR}/norm_stats.json"
CONFIG_MODULE = f"{OPENPI_DIR}/demoforge_config.py"
NORM_KEYS = ("mean", "std", "q01", "q99")  # the fields of openpi.shared.normalize.NormStats
# pi0's image slots, in the order cameras fill them (training/config.py, policies/*_policy.py)
IMAGE_SLOTS = ("base_0_rgb", "left_wrist_0_rgb", "right_wrist_0_rgb")
# Depth and segmentation maps are carried but fill no slot: pi0's slots are photographs. Depth is
# carried packed into RGB (R = code >> 4, G = code & 15; convert.v21), since openpi's pinned lerobot
# decodes every video as 8-bit RGB; segmentation maps are lossless RGB already. Map one in by hand
# in the config module's IMAGES (and unpack depth in the Inputs transform) to train on it.


def action_chunks(state: np.ndarray, action: np.ndarray, horizon: int, mask: tuple[bool, ...]) -> np.ndarray:
    """Every frame's action chunk as openpi trains on it, (T * horizon, n) float32: actions t..t+H-1,
    clamped at the episode's last frame as lerobot pads, minus the frame's state where `mask`."""
    t = np.arange(len(action))
    chunk = action[np.minimum(t[:, None] + np.arange(horizon)[None, :], len(action) - 1)]  # (T, H, n)
    m = np.asarray(mask, bool)
    chunk[..., m] -= state[:, None, m]
    return chunk.reshape(-1, action.shape[1])


def norm_stats(src: BakedSource, horizon: int) -> dict[str, Any]:
    """openpi's norm_stats.json object for `src` under its delta mask and `horizon`."""
    mask = src.delta_mask
    state = streaming_stats(lambda: (s for s, _ in src.episodes()), len(src.state_names))
    actions = streaming_stats(lambda: (action_chunks(s, a, horizon, mask) for s, a in src.episodes()),
                              len(src.action_names))
    return {"norm_stats": {"state": {k: state[k] for k in NORM_KEYS}, "actions": {k: actions[k] for k in NORM_KEYS}}}


def check(src: BakedSource, horizon: int) -> dict[str, str]:
    """The image slots (ExportError when there is no RGB camera to fill one)."""
    return image_slots(src.rgb_keys)


def image_slots(camera_keys: tuple[str, ...]) -> dict[str, str]:
    """pi0 image slot -> video key of an RGB camera (`BakedSource.rgb_keys`): the first camera not named
    *wrist* is the base view, wrist cameras fill the wrist slots, the rest fill what is left; slots
    without a camera are zero images."""
    if not camera_keys:
        raise ExportError("openpi's pi0 models take at least one camera image and this dataset has no RGB video "
                          "feature; render the raw dataset (demoforge render ... --cameras front,wrist) and bake "
                          "the rendered one")
    wrist = [k for k in camera_keys if "wrist" in camera_of(k)]
    other = [k for k in camera_keys if k not in wrist]
    ordered = (other[:1] + wrist + other[1:]) if other else wrist
    return dict(zip(IMAGE_SLOTS, ordered))


def bool_mask_args(mask: tuple[bool, ...]) -> str:
    """The arguments of openpi's `make_bool_mask` for `mask`: runs, positive for True, negative for False."""
    runs: list[int] = []
    for value in mask:
        step = 1 if value else -1
        if runs and (runs[-1] > 0) == value:
            runs[-1] += step
        else:
            runs.append(step)
    return ", ".join(str(r) for r in runs)


def config_name(repo_id: str) -> str:
    return "pi0_" + re.sub(r"[^0-9A-Za-z_]+", "_", repo_id.rsplit("/", 1)[-1]).strip("_").lower()


def config_module(src: BakedSource, *, repo_id: str, horizon: int) -> str:
    """Python source of the openpi training config for this export (see its docstring)."""
    # One function: it is one f-string, the template of the generated file; cut into pieces, the
    # file's text would be spread over fragments that only read right together.
    slots = image_slots(src.rgb_keys)
    mask = src.delta_mask
    delta = f"_transforms.make_bool_mask({bool_mask_args(mask)})" if any(mask) else "None"
    name = config_name(repo_id)
    images = "".join(f'            "{slot}": "{key}",\n' for slot, key in slots.items())
    return f'''"""openpi training config for the demoforge export {repo_id!r} (written by `demoforge export openpi`).

Install: copy this file to openpi's src/openpi/training/demoforge_config.py and add, in
src/openpi/training/config.py right after the `_CONFIGS = [...]` list,

    from openpi.training import demoforge_config as _demoforge  # noqa: E402
    _CONFIGS.extend(_demoforge.CONFIGS)

then, with HF_LEROBOT_HOME set to the folder that holds the export as {repo_id!r},
`uv run scripts/train.py {name} --exp-name=run0`. The normalization statistics are the
export's meta/openpi/norm_stats.json (AssetsConfig below); no compute_norm_stats run is needed.

Convention {src.convention!r}; state {list(src.state_names)};
action {list(src.action_names)}.
Delta actions: {"the arm joints (DeltaActions mask below), the gripper absolute" if any(mask) else
                "none: the actions are not joint positions of the state's joints"}.
{maps_note(src, "IMAGES")}"""

import dataclasses

from lerobot.common.constants import HF_LEROBOT_HOME
import numpy as np
from typing_extensions import override

import openpi.models.model as _model
import openpi.models.pi0_config as pi0_config
import openpi.training.config as _config
import openpi.training.weight_loaders as weight_loaders
import openpi.transforms as _transforms

REPO_ID = {repo_id!r}
STATE_DIM = {len(src.state_names)}
ACTION_DIM = {len(src.action_names)}
ACTION_HORIZON = {horizon}  # the horizon norm_stats.json was computed for
# True: action - state on that dimension before normalization (openpi's DeltaActions)
DELTA_ACTION_MASK = {delta}
# pi0 image slot -> LeRobot video key; slots not listed get zero images, masked out for pi0
IMAGES = {{
{images}}}


def _parse_image(image) -> np.ndarray:
    image = np.asarray(image)
    if np.issubdtype(image.dtype, np.floating):
        image = (255 * image).astype(np.uint8)
    if image.shape[0] == 3:
        image = np.transpose(image, (1, 2, 0))
    return image


@dataclasses.dataclass(frozen=True)
class DemoforgeInputs(_transforms.DataTransformFn):
    """Dataset (after the repack) -> the model's inputs: state, three image slots, actions, prompt."""

    model_type: _model.ModelType

    def __call__(self, data: dict) -> dict:
        present = {{slot: _parse_image(data[f"observation/{{slot}}"]) for slot in IMAGES}}
        blank = np.zeros_like(next(iter(present.values())))
        images, masks = {{}}, {{}}
        for slot in ("base_0_rgb", "left_wrist_0_rgb", "right_wrist_0_rgb"):
            images[slot] = present.get(slot, blank)
            masks[slot] = np.True_ if slot in present or self.model_type == _model.ModelType.PI0_FAST else np.False_
        inputs = {{"state": np.asarray(data["observation/state"]), "image": images, "image_mask": masks}}
        if "actions" in data:
            inputs["actions"] = np.asarray(data["actions"])
        if "prompt" in data:
            inputs["prompt"] = data["prompt"]
        return inputs


@dataclasses.dataclass(frozen=True)
class DemoforgeOutputs(_transforms.DataTransformFn):
    """Model output -> this dataset's action vector (the model pads to its action_dim)."""

    def __call__(self, data: dict) -> dict:
        return {{"actions": np.asarray(data["actions"][..., :ACTION_DIM])}}


@dataclasses.dataclass(frozen=True)
class LeRobotDemoforgeDataConfig(_config.DataConfigFactory):
    @override
    def create(self, assets_dirs, model_config: _model.BaseModelConfig) -> _config.DataConfig:
        repack = {{f"observation/{{slot}}": key for slot, key in IMAGES.items()}}
        repack.update({{"observation/state": "observation.state", "actions": "action", "prompt": "prompt"}})
        data_transforms = _transforms.Group(
            inputs=[DemoforgeInputs(model_type=model_config.model_type)], outputs=[DemoforgeOutputs()]
        )
        if DELTA_ACTION_MASK is not None:
            data_transforms = data_transforms.push(
                inputs=[_transforms.DeltaActions(DELTA_ACTION_MASK)],
                outputs=[_transforms.AbsoluteActions(DELTA_ACTION_MASK)],
            )
        return dataclasses.replace(
            self.create_base_config(assets_dirs, model_config),
            repack_transforms=_transforms.Group(inputs=[_transforms.RepackTransform(repack)]),
            data_transforms=data_transforms,
            model_transforms=_config.ModelTransformFactory()(model_config),
            action_sequence_keys=("action",),
        )


CONFIGS = [
    _config.TrainConfig(
        name={name!r},
        model=pi0_config.Pi0Config(action_horizon=ACTION_HORIZON),
        data=LeRobotDemoforgeDataConfig(
            repo_id=REPO_ID,
            assets=_config.AssetsConfig(assets_dir=str(HF_LEROBOT_HOME / REPO_ID / "meta"), asset_id={ASSET_ID!r}),
            base_config=_config.DataConfig(prompt_from_task=True),
        ),
        weight_loader=weight_loaders.CheckpointWeightLoader("gs://openpi-assets/checkpoints/pi0_base/params"),
        num_train_steps=30_000,
    ),
]
'''


def write_openpi(root: Path, src: BakedSource, *, repo_id: str, horizon: int) -> dict[str, Any]:
    """Write norm_stats.json and the config module under `root` (the v2.1 dataset); returns the stamp."""
    write_json_atomic(root / NORM_STATS, norm_stats(src, horizon), indent=2)
    module = root / CONFIG_MODULE
    module.write_text(config_module(src, repo_id=repo_id, horizon=horizon), encoding="utf-8")
    return {
        "repo_id": repo_id,
        "config_name": config_name(repo_id),
        "norm_stats": NORM_STATS,
        "config_module": CONFIG_MODULE,
        "delta_action_mask": list(src.delta_mask),
        "make_bool_mask": bool_mask_args(src.delta_mask) if any(src.delta_mask) else None,
        "images": image_slots(src.rgb_keys),
        "segmentation_maps": list(src.segmentation_keys),  # carried in the dataset, in no pi0 slot
        "depth_maps": depth_stamp(src),  # carried packed into RGB, in no pi0 slot
    }
