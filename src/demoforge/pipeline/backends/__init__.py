"""Execution backends: where the execute stage's work items (problems) run.

A backend is `execute(config, inputs, out, progress) -> GenerateSummary`; `BACKENDS` maps
`--backend` names to them. Every backend must give the bytes the local one gives.
"""

from __future__ import annotations

from collections.abc import Callable

from demoforge.pipeline.backends.local import execute_local
from demoforge.pipeline.config import PipelineError


def _ray(*args, **kwargs):
    from demoforge.pipeline.backends.ray import execute_ray  # Ray is optional: imported when asked for

    return execute_ray(*args, **kwargs)


BACKENDS: dict[str, Callable] = {"local": execute_local, "ray": _ray}


def get_backend(name: str) -> Callable:
    if name not in BACKENDS:
        raise PipelineError(f"unknown backend {name!r}; backends: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[name]
