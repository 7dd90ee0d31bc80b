"""Execution backends: where the execute stage's work items (problems) run.

A backend is `execute(config, inputs, out, progress) -> GenerateSummary`; `BACKENDS` maps
`--backend` names to them. Every backend must give the bytes the local one gives.
"""

from __future__ import annotations

from collections.abc import Callable

from demoforge.pipeline.backends.local import execute_local
from demoforge.pipeline.config import PipelineError


def _ray_not_available(*args, **kwargs):
    raise PipelineError("backend 'ray' is not implemented yet; use --backend local")


BACKENDS: dict[str, Callable] = {"local": execute_local, "ray": _ray_not_available}


def get_backend(name: str) -> Callable:
    if name not in BACKENDS:
        raise PipelineError(f"unknown backend {name!r}; backends: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[name]
