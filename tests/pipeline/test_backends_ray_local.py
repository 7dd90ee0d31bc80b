"""The Ray backend without --ray-address: a Ray of its own on this machine (its workers
inherit this environment), the same bytes as the local backend, and shut down afterwards."""

from __future__ import annotations

import pytest

from demoforge.pipeline import config_from_dict
from demoforge.pipeline.backends import get_backend
from demoforge.pipeline.provenance import dataset_hash
from demoforge.tasks import generate_family, write_tasks

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


def test_a_ray_of_its_own_matches_local(tmp_path):
    paths = write_tasks(generate_family("pnp", count=3, seed=2), tmp_path / "tasks")
    pddl = [str(p) for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    outs = {}
    for backend in ("local", "ray"):
        config = config_from_dict({"experiment_id": backend, "out_dir": str(tmp_path / "runs"), "workers": 2,
                                   "episodes_per_problem": 2, "envs": 1, "backend": backend, "progress": False})
        config.run_dir.mkdir(parents=True)
        summary = get_backend(backend)(config, pddl, config.run_dir / "execute")
        assert summary.episodes == 6
        outs[backend] = {split: dataset_hash(root) for split, root in summary.roots.items() if root is not None}
    assert outs["ray"] == outs["local"] and "success" in outs["local"]
    assert not ray.is_initialized()
