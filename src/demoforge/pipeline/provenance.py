"""Provenance written into every dataset the pipeline produces: meta/demoforge/pipeline/.

    meta/demoforge/pipeline/provenance.json   version, git commit, resolved config, seeds,
                                              PDDL checksums, source datasets and their hashes,
                                              render looks (name, file, sha256)
    meta/demoforge/pipeline/pddl/<file>       copies of the domain and problem files

Paths are relative to the run folder and nothing depends on the clock, so an interrupted
and resumed run writes the same bytes as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import demoforge
from demoforge.dataset.layout import DEMOFORGE_META_DIR, write_json_atomic
from demoforge.pipeline.config import PipelineConfig

PROVENANCE_DIR = f"{DEMOFORGE_META_DIR}/pipeline"
SCHEMA = "demoforge.pipeline/1"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def dataset_hash(root: Path) -> str:
    """sha256 over a dataset's files (relative path and content, sorted), our own pipeline folder excluded."""
    root = Path(root)
    h = hashlib.sha256()
    for p in sorted(q for q in root.rglob("*") if q.is_file()):
        rel = p.relative_to(root).as_posix()
        if rel.startswith(PROVENANCE_DIR + "/"):
            continue
        h.update(rel.encode() + b"\0" + sha256_file(p).encode() + b"\n")
    return h.hexdigest()


def git_commit() -> str | None:
    """The commit of the demoforge source tree, or None outside a git checkout."""
    here = Path(demoforge.__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def provenance_record(config: PipelineConfig, run_dir: Path, pddl_files: list[Path], sources: list[Path],
                      looks: list[dict[str, Any]], stage: str) -> dict[str, Any]:
    run_dir = Path(run_dir)
    return {
        "schema": SCHEMA, "stage": stage, "demoforge_version": demoforge.__version__, "git_commit": git_commit(),
        "config": config.to_dict(),
        "seeds": {"task_seed": config.tasks.task_seed, "seed": config.seed},
        "pddl": [{"file": p.name, "sha256": sha256_file(p)} for p in pddl_files],
        "sources": [{"root": _rel(s, run_dir), "sha256": dataset_hash(s)} for s in sources],
        "looks": looks,
    }


def _rel(path: Path, run_dir: Path) -> str:
    try:
        return Path(path).resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:
        return str(path)


def write_provenance(root: Path, record: dict[str, Any], pddl_files: list[Path]) -> Path:
    """Write `record` and copies of `pddl_files` into the dataset at `root`."""
    folder = Path(root) / PROVENANCE_DIR
    (folder / "pddl").mkdir(parents=True, exist_ok=True)
    for p in pddl_files:
        shutil.copyfile(p, folder / "pddl" / p.name)
    write_json_atomic(folder / "provenance.json", record)
    return folder / "provenance.json"
