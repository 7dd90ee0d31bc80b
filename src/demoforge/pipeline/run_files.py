"""What the pipeline's stages read and record of a run: its problem and domain files, the looks
it renders under, the provenance of each dataset a stage writes, and the stages' meta files
carried from a source dataset to the one made from it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from demoforge.dataset.layout import DEMOFORGE_META_DIR
from demoforge.pipeline.config import PipelineError
from demoforge.pipeline.provenance import provenance_record, sha256_file, write_provenance
from demoforge.render import resolve_looks
from demoforge.tasks import DOMAINS

if TYPE_CHECKING:
    from demoforge.pipeline.stages import RunContext


def problem_files(ctx: RunContext) -> list[Path]:
    """The run's problem PDDL files (sidecars beside them), sorted by name."""
    folder = ctx.path("tasks")
    if folder.is_dir():
        domains = set(DOMAINS.values())
        return sorted(p for p in folder.glob("*.pddl") if p.name not in domains)
    if ctx.config.tasks.problem_files:
        return sorted(Path(p) for p in ctx.config.tasks.problem_files)
    raise PipelineError(f"{folder}: no task folder; run the tasks stage (do not --skip tasks) or give problem_files")


def pddl_files(ctx: RunContext) -> list[Path]:
    """Problem files and the domain file (for provenance)."""
    probs = problem_files(ctx)
    domains = sorted(p for p in {probs[0].parent / d for d in DOMAINS.values()} if p.is_file()) if probs else []
    return domains + probs


def looks_used(ctx: RunContext) -> list[dict]:
    """The looks the run renders under, as provenance records them (with each look file's sha256)."""
    out = []
    for text, req in zip(ctx.config.render.looks, resolve_looks(ctx.config.render).looks, strict=True):
        path = Path(req.file)
        entry = {"pass": text, "look": req.look.name, "copies": req.copies}
        if path.is_file():
            entry["sha256"] = sha256_file(path)
        out.append(entry)
    return out


def write_stage_provenance(ctx: RunContext, root: Path, sources: list[Path], stage: str) -> None:
    """The provenance of the dataset `stage` wrote at `root` from `sources` (`demoforge.pipeline.provenance`)."""
    files = pddl_files(ctx)
    looks = looks_used(ctx) if ctx.config.runs("render") else []
    write_provenance(root, provenance_record(ctx.config, ctx.run_dir, files, sources, looks, stage), files)


def copy_source_meta(source: Path, root: Path, *, keep: bool = False) -> None:
    """merge_datasets writes only its own merge.json under meta/demoforge; the stages' records
    (controller law, vocabulary, scenes, render looks) are the same for every source of a
    run, so the first source's are carried over for bake, replay and annotate to find (the
    shards' merge record and the pipeline's provenance are not). `keep`: a file `root` already
    holds is left as it is."""
    src, dst = source / DEMOFORGE_META_DIR, root / DEMOFORGE_META_DIR
    if not src.is_dir():
        return
    for entry in sorted(src.iterdir()):
        if entry.name in ("merge.json", "pipeline") or keep and (dst / entry.name).exists() and not entry.is_dir():
            continue
        if entry.is_dir():
            shutil.copytree(entry, dst / entry.name, dirs_exist_ok=True)
        else:
            dst.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(entry, dst / entry.name)
