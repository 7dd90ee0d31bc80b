"""The `demoforge` command: thin typer commands that call the library and print."""

import typer

from demoforge.cli import bake as bake_cli
from demoforge.cli import batch as batch_cli
from demoforge.cli import dataset as dataset_cli
from demoforge.cli import demo as demo_cli
from demoforge.cli import doctor as doctor_cli
from demoforge.cli import export as export_cli
from demoforge.cli import generate as generate_cli
from demoforge.cli import look as look_cli
from demoforge.cli import policy as policy_cli
from demoforge.cli import randomize as randomize_cli
from demoforge.cli import render as render_cli
from demoforge.cli import run as run_cli
from demoforge.cli import scenes as scenes_cli
from demoforge.cli import sim as sim_cli
from demoforge.cli import tasks as tasks_cli
from demoforge.cli.failures import DemoforgeGroup, set_debug

# rich_markup_mode=None: plain help, so "[default: runs]" and units like "[s]" are printed, not read as markup
app = typer.Typer(cls=DemoforgeGroup, no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  pretty_exceptions_enable=False)


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Print the Python traceback of an error (also DEMOFORGE_DEBUG=1)."),
) -> None:
    """The `demoforge` command: thin typer commands that call the library and print.

    Exit status: 0 done, 1 findings, 2 bad input or an environment fault (disk full, permissions),
    3 internal error (rerun with --debug and report it)."""
    set_debug(debug)


app.add_typer(dataset_cli.app, name="dataset", help="Inspect, check and merge LeRobot v3 datasets.")
app.add_typer(sim_cli.app, name="sim", help="Simulation tools: scene linting.")
app.add_typer(tasks_cli.app, name="tasks", help="PDDL task families.")
app.add_typer(scenes_cli.app, name="scenes", help="Scene packages: scene profiles and reset states of each problem.")
app.add_typer(scenes_cli.legacy_app, name="env", hidden=True, help="Deprecated name of `scenes`.")
app.add_typer(randomize_cli.app, name="randomize", help="Physics domain randomization: sample and inspect draws.")
app.command("demo")(demo_cli.demo)
app.command("run")(run_cli.run)
app.command("generate")(generate_cli.generate)
app.command("bake")(bake_cli.bake)
app.command("export")(export_cli.export)
app.command("render")(render_cli.render)
app.command("look-sheet")(look_cli.look_sheet)
app.command("doctor")(doctor_cli.doctor)
app.command("coverage")(doctor_cli.coverage)
app.command("rollout")(policy_cli.rollout)
app.command("eval")(policy_cli.eval_)
app.command("eval-batch")(batch_cli.eval_batch)
app.command("replay")(policy_cli.replay)
app.command("relabel")(policy_cli.relabel)
app.command("viz")(policy_cli.viz)
app.command("plot")(policy_cli.plot)


if __name__ == "__main__":
    app()
