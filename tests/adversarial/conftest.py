"""Tiny inputs for the adversarial catalogue, built once per session: a task folder, a raw
dataset (two pick-and-place episodes cut to 16 ticks), a rendered one, a baked one, an
scene package and a randomization spec. Every case hashes them all before and after:
no command may change an input."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from demoforge.execute import generate
from demoforge.tasks import generate_family, write_tasks
from tests.render.conftest import shorten


def tree_hash(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under `root` (and the names of empty folders)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            p = Path(dirpath) / name
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
        if not dirnames and not filenames:
            out[Path(dirpath).relative_to(root).as_posix() + "/"] = ""
    return out


@pytest.fixture(scope="session")
def world(tmp_path_factory) -> dict[str, Path]:
    """Every shared input, by name (see the module docstring)."""
    from demoforge.convert import BakeConfig, bake
    from demoforge.render import RenderConfig, parse_look_arg, render_dataset
    from demoforge.scenes import build_scene_package

    base = tmp_path_factory.mktemp("world")
    tasks = base / "tasks"
    write_tasks(generate_family("pnp", count=1, seed=11), tasks)
    problem = tasks / "pnp-all-0000.pddl"
    full = generate([problem], base / "gen", episodes_per_problem=2, envs=1, seed=4).roots["success"]
    raw = shorten(full, base / "raw", 16)
    for path in (full / "meta" / "demoforge").iterdir():  # the raw contract: control law, vocabulary
        if path.is_file() and not (raw / "meta" / "demoforge" / path.name).exists():
            shutil.copy2(path, raw / "meta" / "demoforge" / path.name)
    rendered = base / "rendered"
    render_dataset(raw, rendered, RenderConfig(looks=(parse_look_arg("plain"),), cameras=("front",)))
    baked = base / "baked"
    bake([rendered], baked, BakeConfig())
    scenepkg = base / "scenepkg"
    build_scene_package([problem], reset_states=1, profiles=1, seed=0, out=scenepkg)
    spec = base / "physics.yaml"
    spec.write_text("mass_scale: [0.9, 1.1]\n", encoding="utf-8")
    return {"base": base, "tasks": tasks, "problem": problem, "full": full, "raw": raw, "rendered": rendered,
            "baked": baked, "scenepkg": scenepkg, "spec": spec}


@pytest.fixture(scope="session")
def world_hashes(world) -> dict[str, str]:
    return tree_hash(world["base"])
