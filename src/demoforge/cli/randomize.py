"""`demoforge randomize ...` commands: check a spec, print seeded draws."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import typer

from demoforge.cli.options import stage_command
from demoforge.randomize import draw_targets, dumps_draw, load_spec, sample, spec_to_dict, spec_with_overrides
from demoforge.randomize.commands import SampleConfig, SpecCheckConfig
from demoforge.sim import build_scene, default_scene, resolve_robot

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.callback()
def _group() -> None:
    """Physics domain randomization."""


@app.command("check")
@stage_command(SpecCheckConfig)
def check(
    spec_path: Path = typer.Argument(..., metavar="SPEC.yaml", help="Randomization spec (YAML)."),
    options: SpecCheckConfig = None,
) -> None:
    """Validate SPEC.yaml (with overrides) and print its enabled fields as JSON (exit 2 when invalid)."""
    spec = spec_with_overrides(load_spec(spec_path), options.overrides)
    typer.echo(dumps_draw(spec_to_dict(spec)), nl=False)  # same stable layout as draws


@app.command("sample")
@stage_command(SampleConfig)
def sample_cmd(
    spec_path: Path = typer.Argument(..., metavar="SPEC.yaml", help="Randomization spec (YAML)."),
    options: SampleConfig = None,
) -> None:
    """Print N draws of SPEC.yaml for the default scene (three cubes in front of the robot)."""
    spec = spec_with_overrides(load_spec(spec_path), options.overrides)
    robot = options.robot
    scene = build_scene(default_scene(**({"robot": resolve_robot(robot)} if robot is not None else {})))
    targets = draw_targets(scene.model, scene.robot)
    draws = [sample(spec, np.random.SeedSequence(options.seed, spawn_key=(k,)), targets) for k in range(options.count)]
    if options.jsonl:
        for draw in draws:
            typer.echo(json.dumps(json.loads(dumps_draw(draw)), sort_keys=True, separators=(",", ":")))
    else:
        body = ",\n".join("  " + dumps_draw(d).rstrip("\n").replace("\n", "\n  ") for d in draws)
        typer.echo("[\n" + body + "\n]")
