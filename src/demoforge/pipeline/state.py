"""Resume markers: RUN/.pipeline_state/<stage>.done, written once a stage's outputs are final.

A marker holds the stage's outputs (paths relative to RUN) and a few counts; `--resume`
skips stages with a marker and restarts the first one without, after removing that
stage's partial outputs (`clean_outputs`), except outputs the stage continues itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from demoforge.dataset.layout import write_json_atomic

STATE_DIR = ".pipeline_state"


def marker_path(run_dir: Path, stage: str) -> Path:
    return Path(run_dir) / STATE_DIR / f"{stage}.done"


def is_done(run_dir: Path, stage: str) -> bool:
    return marker_path(run_dir, stage).is_file()


def read_marker(run_dir: Path, stage: str) -> dict[str, Any]:
    return json.loads(marker_path(run_dir, stage).read_text(encoding="utf-8"))


def mark_done(run_dir: Path, stage: str, record: dict[str, Any]) -> None:
    path = marker_path(run_dir, stage)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"stage": stage, **record})


def done_stages(run_dir: Path) -> list[str]:
    folder = Path(run_dir) / STATE_DIR
    return sorted(p.name.removesuffix(".done") for p in folder.glob("*.done")) if folder.is_dir() else []


def clean_outputs(run_dir: Path, paths: list[str]) -> list[str]:
    """Remove `paths` (relative to RUN) where they exist; returns the ones removed."""
    removed = []
    for rel in paths:
        p = Path(run_dir) / rel
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
        else:
            continue
        removed.append(rel)
    return removed
