"""Checks on feature declarations and on the data handed to the writer.

Every problem of an input is reported in one DatasetError, naming the feature, the
episode (and frame where it applies), the value and the fix, before anything of that
episode is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from demoforge.dataset.depth import is_depth
from demoforge.dataset.layout import INDEX_FEATURE_NAMES, NUMERIC_DTYPES, Feature
from demoforge.errors import DatasetError, listing


def check_features(features: Mapping[str, Feature]) -> None:
    """Validate user feature declarations given to DatasetWriter.create."""
    problems = []
    if not features:
        problems.append("no features given; declare at least one, e.g. 'observation.state'")
    for key, ft in features.items():
        if not isinstance(ft, Feature):
            problems.append(f"feature {key!r}: expected a Feature record, got {type(ft).__name__}")
            continue
        if key in INDEX_FEATURE_NAMES:
            problems.append(f"feature {key!r}: is an index feature the writer adds itself; remove it")
        elif ft.dtype == "video":
            channels = 1 if is_depth(ft.info) else 3
            if len(ft.shape) != 3 or ft.shape[2] != channels:
                kind = "a depth map" if channels == 1 else "an RGB video"
                problems.append(f"feature {key!r}: shape {ft.shape} must be (height, width, {channels}) for {kind}")
            elif ft.shape[0] % 2 or ft.shape[1] % 2:
                problems.append(f"feature {key!r}: video shape {ft.shape} needs an even height and width (yuv420p)")
        elif ft.dtype == "string":
            if tuple(ft.shape) != (1,):
                problems.append(f"feature {key!r}: a string feature holds one text per frame; shape {ft.shape} "
                                "must be (1,)")
        elif ft.dtype not in NUMERIC_DTYPES:
            problems.append(
                f"feature {key!r}: dtype {ft.dtype!r} is not supported; use one of "
                f"{list(NUMERIC_DTYPES)}, 'string' or 'video'"
            )
        elif len(ft.shape) != 1:
            problems.append(
                f"feature {key!r}: shape {ft.shape} is not supported; flatten it to ({int(np.prod(ft.shape))},) "
                "and list the element names in `names`"
            )
        if isinstance(ft.names, list) and ft.dtype != "video" and len(ft.shape) == 1 and len(ft.names) != ft.shape[0]:
            problems.append(f"feature {key!r}: {len(ft.names)} names for shape {ft.shape}")
    if problems:
        raise DatasetError("invalid features:" + listing(problems))


def check_task(task: object, *, episode: int) -> str:
    if not isinstance(task, str) or not task:
        raise DatasetError(
            f"episode {episode}: task {task!r} ({type(task).__name__}) must be a non-empty string "
            "(the instruction, e.g. 'stack the red block on the green block')"
        )
    return task


def _first_bad_frame(mask: np.ndarray) -> int:
    return int(np.argmax(mask.reshape(mask.shape[0], -1).any(axis=1)))


def check_columns(
    columns: Mapping[str, np.ndarray], features: Mapping[str, Feature], *, episode: int, frame: int | None = None
) -> tuple[dict[str, np.ndarray], int]:
    """Validate one episode (columns with a leading time axis) or, with `frame`, one frame.

    Returns the columns cast to their feature dtypes (numeric as (T, n), video as
    (T, H, W, 3) uint8) and the episode length T."""
    where = f"episode {episode}" + (f", frame {frame}" if frame is not None else "")
    problems = []
    missing = sorted(set(features) - set(columns))
    extra = sorted(set(columns) - set(features))
    if missing:
        problems.append(f"missing features {missing}")
    if extra:
        hint = " (index features are added by the writer)" if set(extra) & set(INDEX_FEATURE_NAMES) else ""
        problems.append(f"unknown features {extra}; declared are {sorted(features)}{hint}")
    out: dict[str, np.ndarray] = {}
    lengths: dict[str, int] = {}
    for key in [k for k in features if k in columns]:
        ft = features[key]
        arr = np.asarray(columns[key])
        if frame is not None:
            arr = arr[None, ...]
        arr = _cast_column(key, ft, arr, frame, problems)
        if arr is None:
            continue
        out[key] = arr
        lengths[key] = arr.shape[0]
    if len(set(lengths.values())) > 1:
        problems.append(f"features differ in length: {lengths}")
    length = next(iter(lengths.values()), 0)
    if not problems and length == 0:
        problems.append("has length 0; an episode needs at least one frame")
    if problems:
        raise DatasetError(f"{where}: " + "; ".join(problems))
    return out, length


def _cast_column(key: str, ft: Feature, arr: np.ndarray, frame: int | None,
                 problems: list[str]) -> np.ndarray | None:
    """Feature `key`'s column (a leading time axis) cast to its feature's dtype and shape, or None
    with what is wrong with it appended to `problems`."""
    # One function: one branch per feature kind (depth map, text, camera, numeric), each a short run of
    # checks that stops at the column's first problem; side by side they show what each kind accepts.
    if ft.dtype == "video" and is_depth(ft.info):
        want = (ft.shape[0], ft.shape[1])
        if arr.ndim == 4 and arr.shape[-1] == 1:
            arr = arr[..., 0]
        if arr.ndim != 3 or arr.shape[1:] != want:
            problems.append(f"feature {key!r}: depth frames of shape {arr.shape[1:]}, expected {want} [m]")
            return None
        if not np.issubdtype(arr.dtype, np.floating):
            problems.append(f"feature {key!r}: depth dtype {arr.dtype}, expected float metres")
            return None
        bad = ~np.isfinite(arr) | (arr < 0)
        if bad.any():
            t = _first_bad_frame(bad)
            problems.append(f"feature {key!r}: depth value {arr[t][bad[t]][0]} at frame "
                            f"{frame if frame is not None else t}; depths must be finite and >= 0 [m]")
            return None
        arr = arr.astype(np.float32, copy=False)
    elif ft.dtype == "string":
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != 1:
            problems.append(f"feature {key!r}: shape {arr.shape[1:]} per frame, expected one text")
            return None
        arr = arr.astype(object)
        bad = [t for t, v in enumerate(arr) if not isinstance(v, str)]
        if bad:
            at = frame if frame is not None else bad[0]
            problems.append(f"feature {key!r}: {arr[bad[0]]!r} ({type(arr[bad[0]]).__name__}) at frame {at} is "
                            f"not a string ({len(bad)} frame(s) affected); give every frame a str")
            return None
    elif ft.dtype == "video":
        want = (ft.shape[0], ft.shape[1], 3)
        if arr.ndim != 4 or arr.shape[1:] != want:
            got = arr.shape[1:] if frame is None else arr.shape[1:]
            problems.append(f"feature {key!r}: frames of shape {got}, expected {want} (H, W, 3) RGB")
            return None
        if arr.dtype != np.uint8:
            problems.append(f"feature {key!r}: dtype {arr.dtype}, expected uint8 RGB in 0..255")
            return None
    else:
        n = ft.shape[0]
        if arr.ndim == 1 and n == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[1] != n:
            problems.append(f"feature {key!r}: shape {arr.shape[1:] if arr.ndim else ()} per frame, expected ({n},)")
            return None
        target = np.dtype(ft.dtype)
        if arr.dtype != target:
            same_kind = np.can_cast(arr.dtype, target, casting="same_kind")
            if target == np.bool_ or arr.dtype == np.bool_ or not same_kind:
                problems.append(f"feature {key!r}: dtype {arr.dtype} cannot be stored as {ft.dtype}; convert it")
                return None
        if np.issubdtype(arr.dtype, np.floating):
            bad = ~np.isfinite(arr)
            if bad.any():
                t = _first_bad_frame(bad)
                at = frame if frame is not None else t
                problems.append(
                    f"feature {key!r}: non-finite value {arr[t][bad[t]][0]} at frame {at} "
                    f"({int(bad.any(axis=1).sum())} frame(s) affected); fix the source instead of recording it"
                )
                return None
        arr = arr.astype(target, copy=False)
    return arr


def check_extra(extra: Mapping[str, Any] | None, episode: int) -> dict[str, Any]:
    """An episode's `extra` record as a plain dict: string keys without '/', plain JSON values."""
    if extra is None:
        return {}
    out = {}
    for key, value in extra.items():
        if not isinstance(key, str) or not key or "/" in key:
            raise DatasetError(f"episode {episode}: extra key {key!r} must be a non-empty string without '/'")
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise DatasetError(f"episode {episode}: extra {key!r} is not plain JSON ({exc}); convert it") from exc
        out[key] = value
    return out
