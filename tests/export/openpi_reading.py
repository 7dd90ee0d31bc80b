"""A faithful reading of the parts of openpi the exported config module uses, to run it without openpi.

openpi is not installable here (PyPI holds only a placeholder; it needs jax and a git lerobot).
This module stands in for the openpi modules that `meta/openpi/demoforge_config.py` imports,
reduced to their data semantics as read from Physical-Intelligence/openpi (commit 15a9616,
2026): `transforms.{Group, RepackTransform, DeltaActions, AbsoluteActions, make_bool_mask,
PromptFromLeRobotTask}`, `training.config.{AssetsConfig, DataConfig, DataConfigFactory,
ModelTransformFactory, TrainConfig}` (`create_base_config` loads the norm stats from
`<assets_dir>/<asset_id>/norm_stats.json`), `shared.normalize.load`, `models.model.ModelType`,
`models.pi0_config.Pi0Config` and `lerobot.common.constants.HF_LEROBOT_HOME` (the pinned
lerobot's module path). Model transforms (tokenizer, resize, padding) are left out: the
norm stats are taken before them. Standalone (numpy only): the lerobot v2.1 probe imports it
in lerobot's own venv.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import json
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def make_bool_mask(*dims: int) -> tuple[bool, ...]:
    out: list[bool] = []
    for dim in dims:
        out.extend([True] * dim if dim > 0 else [False] * (-dim))
    return tuple(out)


class DataTransformFn:
    def __call__(self, data: dict) -> dict:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Group:
    inputs: Sequence[Any] = ()
    outputs: Sequence[Any] = ()

    def push(self, *, inputs: Sequence[Any] = (), outputs: Sequence[Any] = ()) -> "Group":
        return Group(inputs=(*self.inputs, *inputs), outputs=(*outputs, *self.outputs))


def flatten_dict(tree: dict, prefix: str = "") -> dict:
    """flax.traverse_util.flatten_dict(tree, sep="/")."""
    out = {}
    for key, value in tree.items():
        path = f"{prefix}/{key}" if prefix else key
        if isinstance(value, dict) and value:
            out.update(flatten_dict(value, path))
        else:
            out[path] = value
    return out


def _tree_map(fn, structure):
    if isinstance(structure, dict):
        return {k: _tree_map(fn, v) for k, v in structure.items()}
    return fn(structure)


@dataclasses.dataclass(frozen=True)
class RepackTransform(DataTransformFn):
    structure: Any

    def __call__(self, data: dict) -> dict:
        flat = flatten_dict(data)
        return _tree_map(lambda k: flat[k], self.structure)


@dataclasses.dataclass(frozen=True)
class DeltaActions(DataTransformFn):
    mask: Sequence[bool] | None

    def __call__(self, data: dict) -> dict:
        if "actions" not in data or self.mask is None:
            return data
        state, actions = data["state"], data["actions"]
        mask = np.asarray(self.mask)
        dims = mask.shape[-1]
        actions[..., :dims] -= np.expand_dims(np.where(mask, state[..., :dims], 0), axis=-2)
        data["actions"] = actions
        return data


@dataclasses.dataclass(frozen=True)
class AbsoluteActions(DataTransformFn):
    mask: Sequence[bool] | None

    def __call__(self, data: dict) -> dict:
        if "actions" not in data or self.mask is None:
            return data
        state, actions = data["state"], data["actions"]
        mask = np.asarray(self.mask)
        dims = mask.shape[-1]
        actions[..., :dims] += np.expand_dims(np.where(mask, state[..., :dims], 0), axis=-2)
        data["actions"] = actions
        return data


@dataclasses.dataclass(frozen=True)
class PromptFromLeRobotTask(DataTransformFn):
    tasks: dict

    def __call__(self, data: dict) -> dict:
        task_index = int(data["task_index"])
        if (prompt := self.tasks.get(task_index)) is None:
            raise ValueError(f"{task_index=} not found in task mapping: {self.tasks}")
        return {**data, "prompt": prompt}


@dataclasses.dataclass
class NormStats:
    mean: np.ndarray
    std: np.ndarray
    q01: np.ndarray | None = None
    q99: np.ndarray | None = None


def load_norm_stats(directory: str | Path) -> dict[str, NormStats]:
    """openpi.shared.normalize.load: <directory>/norm_stats.json -> {key: NormStats}."""
    path = Path(directory) / "norm_stats.json"
    if not path.exists():
        raise FileNotFoundError(f"Norm stats file not found at: {path}")
    raw = json.loads(path.read_text())["norm_stats"]
    return {k: NormStats(**{f: None if v.get(f) is None else np.asarray(v[f]) for f in ("mean", "std", "q01", "q99")})
            for k, v in raw.items()}


class ModelType(enum.Enum):
    PI0 = "pi0"
    PI0_FAST = "pi0_fast"
    PI05 = "pi05"


@dataclasses.dataclass(frozen=True)
class Pi0Config:
    action_dim: int = 32
    action_horizon: int = 50
    pi05: bool = False

    @property
    def model_type(self) -> ModelType:
        return ModelType.PI05 if self.pi05 else ModelType.PI0


@dataclasses.dataclass(frozen=True)
class AssetsConfig:
    assets_dir: str | None = None
    asset_id: str | None = None


@dataclasses.dataclass(frozen=True)
class DataConfig:
    repo_id: str | None = None
    asset_id: str | None = None
    norm_stats: dict | None = None
    repack_transforms: Group = dataclasses.field(default_factory=Group)
    data_transforms: Group = dataclasses.field(default_factory=Group)
    model_transforms: Group = dataclasses.field(default_factory=Group)
    use_quantile_norm: bool = False
    action_sequence_keys: Sequence[str] = ("actions",)
    prompt_from_task: bool = False


@dataclasses.dataclass(frozen=True)
class DataConfigFactory:
    repo_id: str | None = None
    assets: AssetsConfig = dataclasses.field(default_factory=AssetsConfig)
    base_config: DataConfig | None = None

    def create_base_config(self, assets_dirs: Path, model_config: Any) -> DataConfig:
        asset_id = self.assets.asset_id or self.repo_id
        return dataclasses.replace(
            self.base_config or DataConfig(), repo_id=self.repo_id, asset_id=asset_id,
            norm_stats=self._load_norm_stats(Path(self.assets.assets_dir or assets_dirs), asset_id),
            use_quantile_norm=model_config.model_type != ModelType.PI0,
        )

    def _load_norm_stats(self, assets_dir: Path, asset_id: str | None) -> dict | None:
        if asset_id is None:
            return None
        try:
            return load_norm_stats(assets_dir / asset_id)
        except FileNotFoundError:
            return None


@dataclasses.dataclass(frozen=True)
class ModelTransformFactory:
    default_prompt: str | None = None

    def __call__(self, model_config: Any) -> Group:
        return Group()  # tokenizer, resize and padding: after normalization, not read here


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    name: str
    model: Any = dataclasses.field(default_factory=Pi0Config)
    data: Any = None
    weight_loader: Any = None
    num_train_steps: int = 30_000
    assets_base_dir: str = "./assets"

    @property
    def assets_dirs(self) -> Path:
        return (Path(self.assets_base_dir) / self.name).resolve()


@dataclasses.dataclass(frozen=True)
class CheckpointWeightLoader:
    params_path: str


def _module(name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


def install(hf_lerobot_home: str | Path) -> list[str]:
    """Put the stand-ins under their openpi (and pinned-lerobot) module names into sys.modules;
    returns the names added."""
    before = set(sys.modules)
    for name in ("openpi", "openpi.models", "openpi.training", "openpi.shared"):
        _module(name)
    _module("openpi.transforms", DataTransformFn=DataTransformFn, Group=Group, RepackTransform=RepackTransform,
            DeltaActions=DeltaActions, AbsoluteActions=AbsoluteActions, make_bool_mask=make_bool_mask,
            PromptFromLeRobotTask=PromptFromLeRobotTask, flatten_dict=flatten_dict)
    _module("openpi.models.model", ModelType=ModelType, BaseModelConfig=object)
    _module("openpi.models.pi0_config", Pi0Config=Pi0Config)
    _module("openpi.shared.normalize", NormStats=NormStats, load=load_norm_stats)
    _module("openpi.training.config", AssetsConfig=AssetsConfig, DataConfig=DataConfig,
            DataConfigFactory=DataConfigFactory, ModelTransformFactory=ModelTransformFactory, TrainConfig=TrainConfig)
    _module("openpi.training.weight_loaders", CheckpointWeightLoader=CheckpointWeightLoader)
    if importlib.util.find_spec("lerobot") is None:
        _module("lerobot")
    _module("lerobot.common")
    _module("lerobot.common.constants", HF_LEROBOT_HOME=Path(hf_lerobot_home).expanduser())
    return sorted(set(sys.modules) - before)


def load_config_module(path: str | Path, hf_lerobot_home: str | Path) -> types.ModuleType:
    """Execute the exported config module against the stand-ins; returns it (its CONFIGS, masks, classes).
    The stand-ins leave sys.modules afterwards (the module keeps what it imported)."""
    added = install(hf_lerobot_home)
    try:
        spec = importlib.util.spec_from_file_location("demoforge_config", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name in added:
            sys.modules.pop(name, None)
    return module


def training_sample(data_config: DataConfig, item: dict) -> dict:
    """One dataset item through the transforms compute_norm_stats applies: repack, then the data inputs."""
    for transform in (*data_config.repack_transforms.inputs, *data_config.data_transforms.inputs):
        item = transform(item)
    return item
