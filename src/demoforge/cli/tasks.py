"""`demoforge tasks ...` commands: list and generate task families, check and plan problems."""

from pathlib import Path

import typer

from demoforge.cli.options import stage_command
from demoforge.errors import DemoforgeError
from demoforge.pipeline.tasks_config import TasksConfig
from demoforge.tasks.commands import PlanConfig, TasksCheckConfig, TasksListConfig
from demoforge.tasks.families import FAMILIES, generate_family, write_tasks
from demoforge.tasks.parse import load_task, name_problem
from demoforge.tasks.planning import plan as plan_task

app = typer.Typer(no_args_is_help=True, add_completion=False)



@app.command("families")
def families() -> None:
    """List the task families and their block counts."""
    for name, fam in sorted(FAMILIES.items()):
        typer.echo(f"{name:12s} n={fam.default_n} (min {fam.min_n})")


@app.command("list")
@stage_command(TasksListConfig)
def list_installed(options: TasksListConfig = None) -> None:
    """What is installed to run tasks with: each task package (and where it came from: built-in, entry
    point or path), its domain's operators (and whether a skill acts each out) and predicates (evaluated
    by the simulator, static, or with no evaluator), and its families."""
    import json

    from demoforge.skills import SKILLS
    from demoforge.symbolic.predicates import EVALUATORS
    from demoforge.tasks import parse_domain
    from demoforge.tasks.check import changed_atoms
    from demoforge.tasks.package import packages

    _load(options.task_packages)
    as_json = options.as_json
    out = {"packages": {}, "domains": {}, "families": {}, "object_types": {}}
    for pkg in packages():
        domain = parse_domain(pkg.domain_text(), file=pkg.domain_file())
        changed = {str(p.name) for a in domain.actions for p in changed_atoms(a.effect)}
        out["packages"][pkg.name] = {"origin": pkg.origin, "families": sorted(pkg.families),
                                     "object_types": sorted(pkg.object_types)}
        out["domains"][pkg.name] = {
            "file": str(pkg.domain) if pkg.domain_is_file else "(text)",
            "operators": {a.name: a.name in SKILLS for a in sorted(domain.actions, key=lambda a: a.name)},
            "predicates": {p.name: ("static" if p.name not in changed else "evaluated" if p.name in EVALUATORS
                                    else "no evaluator") for p in sorted(domain.predicates, key=lambda p: p.name)},
        }
        out["object_types"].update({n: {"built_as": t.built_as, "package": pkg.name}
                                    for n, t in sorted(pkg.object_types.items())})
        out["families"].update({n: {"n": f.default_n, "min_n": f.min_n, "package": pkg.name, "types": list(f.types)}
                                for n, f in sorted(pkg.families.items())})
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    for name, d in out["domains"].items():
        pkg = out["packages"][name]
        typer.echo(f"package {name} ({pkg['origin']})")
        typer.echo(f"  domain: {d['file']}")
        typer.echo("  operators: " + ", ".join(f"{o}" + ("" if ok else " (NO SKILL)") for o, ok in d["operators"].items()))
        typer.echo("  predicates: " + ", ".join(f"{p} ({how})" for p, how in d["predicates"].items()))
        typer.echo("  families: " + (", ".join(f"{n} (n={out['families'][n]['n']})" for n in pkg["families"]) or "none"))
        for t in pkg["object_types"]:
            typer.echo(f"  object type {t}: {out['object_types'][t]['built_as']}")


def _load(specs: list[str] | None) -> None:
    """Register the task packages named on the command line before anything looks a name up."""
    from demoforge.tasks.package import load_package

    for spec in specs or ():
        load_package(spec)


@app.command("gen")
@stage_command(TasksConfig, exclude=("family",))
def gen(
    family: str = typer.Argument(..., help="Task family (`demoforge tasks list` shows every package's)."),
    out: Path = typer.Option(..., "--out", help="Output folder (domain, NAME.pddl, NAME.scene.json)."),
    options: TasksConfig = None,
) -> None:
    """Generate --problems problems of FAMILY with their scene sidecars. Every option is
    also a key of `demoforge run` (its tasks stage) under the same name."""
    tasks = generate_family(family, count=options.problems, seed=options.task_seed, **options.family_options())
    written = write_tasks(tasks, out)
    typer.echo(f"wrote {len(tasks)} {family} problem(s) and {len(written) - len(tasks) * 2} domain file to {out}")


@app.command("check")
@stage_command(TasksCheckConfig)
def check(
    problems: list[Path] = typer.Argument(..., help="Problem PDDL files."),
    options: TasksCheckConfig = None,
) -> None:
    """Parse and check problems against the domain; exit 1 listing every bad file."""
    _load(options.task_packages)
    domain = options.domain
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
@stage_command(PlanConfig)
def plan(
    problem: Path = typer.Argument(..., help="Problem PDDL file."),
    options: PlanConfig = None,
) -> None:
    """Plan a problem (pymimir, then Fast Downward) and print the checked plan."""
    _load(options.task_packages)
    result = plan_task(load_task(problem, options.domain), time_budget_s=options.budget)
    typer.echo(f"{result.status.value} by {result.planner} in {result.time_s * 1000:.1f} ms ({result.detail})")
    for step in result.plan or ():
        typer.echo(str(step))
    raise typer.Exit(0 if result.solved else 1)
