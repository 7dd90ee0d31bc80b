"""`demoforge tasks ...` commands: list and generate task families, check and plan problems."""

import math
from pathlib import Path

import typer

from demoforge.errors import DemoforgeError
from demoforge.cli.ranges import MAX_PROBLEMS, MAX_SEED, finite
from demoforge.tasks.families import FAMILIES, SPLIT_BY, SPLITS, generate_family, write_tasks
from demoforge.tasks.parse import load_task, name_problem
from demoforge.tasks.planning import plan as plan_task

app = typer.Typer(no_args_is_help=True, add_completion=False)

DOMAIN_OPT = typer.Option("blocks", "--domain", help="Library domain name or a domain PDDL file.")


def _pair(text: str | None, option: str) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not LO,HI (two numbers)", param_hint=option) from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise typer.BadParameter(f"{text!r}: LO and HI must be finite numbers", param_hint=option)
    return lo, hi


def _windows(text: str | None, option: str) -> tuple[tuple[float, float], ...] | None:
    if text is None:
        return None
    return tuple(_pair(part, option) for part in text.split(";"))  # type: ignore[misc]


@app.command("families")
def families() -> None:
    """List the task families and their block counts."""
    for name, (default_n, min_n, _) in sorted(FAMILIES.items()):
        typer.echo(f"{name:12s} n={default_n} (min {min_n})")


@app.command("gen")
def gen(
    family: str = typer.Argument(..., help=f"Task family: {', '.join(sorted(FAMILIES))}."),
    count: int = typer.Option(..., "--count", min=1, max=MAX_PROBLEMS, help="Number of problems."),
    seed: int = typer.Option(..., "--seed", min=0, max=MAX_SEED,
                             help="Seed; same seed and options give byte-identical files."),
    out: Path = typer.Option(..., "--out", help="Output folder (domain, NAME.pddl, NAME.scene.json)."),
    n: int | None = typer.Option(None, "--n", help="Task blocks (tower height for stack_n/unstack)."),
    distractors: int = typer.Option(0, "--distractors", min=0, max=20,
                                    help="Extra blocks on the table, not in the goal."),
    split: str = typer.Option("all", "--split", help=f"Look split: {', '.join(SPLITS)}."),
    split_by: str = typer.Option("colour", "--split-by", help=f"Look kept disjoint: {', '.join(SPLIT_BY)}."),
    block_size: str | None = typer.Option(None, "--block-size", help="Cube edge range LO,HI in m."),
    table_height_offset: str | None = typer.Option(None, "--table-height-offset", help="Table top height offset range LO,HI in m."),
    friction: str | None = typer.Option(None, "--friction", help="Sliding friction range LO,HI."),
    placement_x: str | None = typer.Option(None, "--placement-x", help="Start windows 'LO,HI[;LO,HI...]' in m."),
    placement_y: str | None = typer.Option(None, "--placement-y", help="Start windows 'LO,HI[;LO,HI...]' in m."),
) -> None:
    """Generate COUNT problems of FAMILY with their scene sidecars."""
    options = {
        "n": n, "distractors": distractors, "split": split, "split_by": split_by,
        "block_size_m": _pair(block_size, "--block-size"),
        "table_height_offset_m": _pair(table_height_offset, "--table-height-offset"),
        "friction": _pair(friction, "--friction"),
        "placement_x_m": _windows(placement_x, "--placement-x"),
        "placement_y_m": _windows(placement_y, "--placement-y"),
    }
    tasks = generate_family(family, count=count, seed=seed, **options)
    written = write_tasks(tasks, out)
    typer.echo(f"wrote {len(tasks)} {family} problem(s) and {len(written) - len(tasks) * 2} domain file to {out}")


@app.command("check")
def check(
    problems: list[Path] = typer.Argument(..., help="Problem PDDL files."),
    domain: str = DOMAIN_OPT,
) -> None:
    """Parse and check problems against the domain; exit 1 listing every bad file."""
    failed = 0
    for path in problems:
        try:
            task = load_task(path, domain)
        except DemoforgeError as exc:
            failed += 1
            typer.echo(f"FAILED {exc}")
            continue
        if (bad := name_problem(task.name, str(path))) is not None:  # valid PDDL, but generate refuses it
            failed += 1
            typer.echo(f"FAILED {bad}")
            continue
        typer.echo(f"OK {path}: {len(task.objects)} objects, {len(task.init)} init atoms")
    raise typer.Exit(1 if failed else 0)


@app.command("plan")
def plan(
    problem: Path = typer.Argument(..., help="Problem PDDL file."),
    domain: str = DOMAIN_OPT,
    budget: float = typer.Option(1.0, "--budget", callback=finite(0.0, 3600.0, low_open=True),
                                 help="pymimir time budget in (0, 3600] s before Fast Downward."),
) -> None:
    """Plan a problem (pymimir, then Fast Downward) and print the checked plan."""
    result = plan_task(load_task(problem, domain), time_budget_s=budget)
    typer.echo(f"{result.status.value} by {result.planner} in {result.time_s * 1000:.1f} ms ({result.detail})")
    for step in result.plan or ():
        typer.echo(str(step))
    raise typer.Exit(0 if result.solved else 1)
