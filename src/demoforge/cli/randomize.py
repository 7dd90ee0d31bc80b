"""`demoforge randomize ...` commands: check a spec, print seeded draws."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import typer

from demoforge.cli.ranges import MAX_SEED
from demoforge.randomize import draw_targets, dumps_draw, load_spec, sample, spec_to_dict, spec_with_overrides
from demoforge.sim import build_scene, default_scene, resolve_robot

app = typer.Typer(no_args_is_help=True, add_completion=False)



@app.callback()
def _group() -> None:
    """Physics domain randomization."""


SET_HELP = "Override one field, VALUE in YAML syntax: --set mass_scale=[0.9,1.1] --set kp_scale=null. Repeatable."


@app.command("check")
def check(
    spec_path: Path = typer.Argument(..., metavar="SPEC.yaml", help="Randomization spec (YAML)."),
    overrides: list[str] = typer.Option([], "--set", metavar="FIELD=VALUE", help=SET_HELP),
) -> None:
    """Validate SPEC.yaml (with overrides) and print its enabled fields as JSON (exit 2 when invalid)."""

    spec = spec_with_overrides(load_spec(spec_path), overrides)
    typer.echo(dumps_draw(spec_to_dict(spec)), nl=False)  # same stable layout as draws


@app.command("sample")
def sample_cmd(
    spec_path: Path = typer.Argument(..., metavar="SPEC.yaml", help="Randomization spec (YAML)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Run seed; draw k uses SeedSequence(seed, spawn_key=(k,))."),
    n: int = typer.Option(1, "-n", "--count", min=1, max=100_000, help="Number of draws."),
    overrides: list[str] = typer.Option([], "--set", metavar="FIELD=VALUE", help=SET_HELP),
    robot: str | None = typer.Option(None, "--robot", help="Robot: a built-in card (panda, ur5e_2f85) or a card "
                                                            "YAML [default: panda]."),
    jsonl: bool = typer.Option(False, "--jsonl", help="One compact JSON draw per line instead of a pretty list."),
) -> None:
    """Print N draws of SPEC.yaml for the default scene (three cubes in front of the robot)."""

    spec = spec_with_overrides(load_spec(spec_path), overrides)
    scene = build_scene(default_scene(**({"robot": resolve_robot(robot)} if robot is not None else {})))
    targets = draw_targets(scene.model, scene.robot)
    draws = [sample(spec, np.random.SeedSequence(seed, spawn_key=(k,)), targets) for k in range(n)]
    if jsonl:
        for draw in draws:
            typer.echo(json.dumps(json.loads(dumps_draw(draw)), sort_keys=True, separators=(",", ":")))
    else:
        body = ",\n".join("  " + dumps_draw(d).rstrip("\n").replace("\n", "\n  ") for d in draws)
        typer.echo("[\n" + body + "\n]")
