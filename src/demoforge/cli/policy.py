"""`demoforge rollout | eval | replay | relabel | viz | plot`: policies in the loop and looking at data.

Registered by cli/main.py as top-level commands: rollout, eval (function `eval_`), replay,
relabel, viz, plot.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from demoforge.cli.options import stage_command
from demoforge.cli.progress import StepProgress
from demoforge.dataset.guard import guard_output_dir, guard_output_file, write_file
from demoforge.policy import rollout as run_rollout
from demoforge.policy.config import EvalConfig, RelabelConfig, ReplayConfig, RolloutConfig
from demoforge.policy.evaluate import evaluate_from_dataset
from demoforge.policy.relabel import relabel as run_relabel
from demoforge.policy.replay import replay_dataset
from demoforge.sim import resolve_robot
from demoforge.viz import plot_episode, write_tiles
from demoforge.viz.config import PlotConfig, VizConfig


def _print_summary(summary: dict, out: Path) -> None:
    o = summary["overall"]
    typer.echo(f"{o['episodes']} episodes: success {o['success_rate']:.3f}, "
               f"partial success {o['partial_success']:.3f}, "
               f"mean completion {o['mean_completion']:.3f}, mean alive {o['mean_alive']:.3f} "
               f"(warm-up {summary['warmup_ticks']} ticks excluded, horizon {summary['reference_ticks']} ticks)")
    for name, t in summary["problems"].items():
        typer.echo(f"  {name}: success {t['success_rate']:.3f}, partial {t['partial_success']:.3f}, "
                   f"completion {t['mean_completion']:.3f} ({t['episodes']} episodes)")
    for label, t in summary.get("by_start", {}).items():
        typer.echo(f"  from {label} frames: success {t['success_rate']:.3f}, completion {t['mean_completion']:.3f} "
                   f"({t['episodes']} episodes)")
    typer.echo(f"dataset: {out / 'dataset'}; summary: {out / 'SUMMARY.md'}, {out / 'summary.json'}")


@stage_command(RolloutConfig)
def rollout(
    problems: list[Path] = typer.Option(..., "--problems", help="PDDL problem file or scene package; repeatable."),
    out: Path = typer.Option(..., "--out", help="OUT/dataset, OUT/SUMMARY.md, OUT/summary.json."),
    options: RolloutConfig = None,
) -> None:
    """Roll a policy out and record every episode (streamed to disk) with success, partial success and
    completion as episode columns; print and save a summary."""

    loop = options.loop
    card = resolve_robot(options.robot) if options.robot is not None else None
    with StepProgress("rollout", outcomes=True) as progress:
        summary = run_rollout(loop.policy, problems, out, episodes=options.episodes, envs=loop.envs, seed=options.seed,
                      settings=loop.settings(), domain=options.domain, randomization=options.randomization_spec(),
                      progress=progress, robot=card, look=options.eval_look(), workers=loop.workers,
                      policy_kwargs=loop.factory_kwargs(), like=loop.like, output_format=options.output_format)
    _print_summary(summary, out)
    if options.output_format == "hdf5":
        typer.echo(f"robomimic HDF5: {out / 'dataset.hdf5'}")


@stage_command(EvalConfig)
def eval_(
    from_dataset: Path = typer.Option(..., "--from-dataset", help="Dataset whose episodes' initial states to use."),
    out: Path = typer.Option(..., "--out", help="OUT/dataset, OUT/SUMMARY.md, OUT/summary.json."),
    options: EvalConfig = None,
) -> None:
    """Closed-loop evaluation from the exact recorded states (physics state and randomization draw) of
    the episodes of a dataset, at their first tick or later ones (--start)."""

    loop = options.loop
    cameras = options.eval_look(from_dataset)  # a bad --look recorded is refused before anything is written
    card = resolve_robot(options.robot) if options.robot is not None else None
    with StepProgress("eval", outcomes=True) as progress:
        summary = evaluate_from_dataset(loop.policy, from_dataset, out, episodes=_listed(options.episodes),
                                        progress=progress, envs=loop.envs, settings=loop.settings(), robot=card,
                                        starts=options.starts(), seed=options.seed, look=cameras,
                                        workers=loop.workers, policy_kwargs=loop.factory_kwargs(), like=loop.like)
    _print_summary(summary, out)


def _listed(episodes: tuple[int, ...] | None) -> list[int] | None:
    return None if episodes is None else list(episodes)


@stage_command(ReplayConfig)
def replay(
    dataset: Path = typer.Argument(..., help="A demoforge dataset (raw execute, roll-out, eval or relabel)."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the report as JSON here."),
    options: ReplayConfig = None,
) -> None:
    """Replay each episode's actions open-loop through its recorded control law from its recorded initial
    state and report robot and object divergence per episode. Exit 1 if any episode diverges."""

    if json_out is not None:
        guard_output_file(json_out, [dataset], what="--json")
    report = replay_dataset(dataset, _listed(options.episodes), kinematic=options.kinematic)
    for e in report.episodes:
        state = "exact" if e.exact else f"first differs at tick {e.first_diverging_tick}"
        typer.echo(f"episode {e.episode}: {e.ticks} ticks, robot {e.max_robot:.3g}, "
                   f"objects {e.max_object:.3g}; {state}")
    tol = options.tol
    bad = report.diverging(tol, tol)
    typer.echo(f"{len(report.episodes) - len(bad)}/{len(report.episodes)} episodes replay within {tol:g}"
               + (f"; diverging: {bad}" if bad else "") + ("; all bit-exact" if report.exact else ""))
    if json_out is not None:
        write_file(json_out, json.dumps(report.to_json(), indent=2))
    if bad:
        raise typer.Exit(1)


@stage_command(RelabelConfig)
def relabel(
    rollouts: Path = typer.Option(..., "--rollouts", help="A roll-out dataset (OUT/dataset of `demoforge rollout`)."),
    out: Path = typer.Option(..., "--out", help="OUT/dataset (new expert demonstrations), OUT/summary.json."),
    options: RelabelConfig = None,
) -> None:
    """For each failed roll-out, run the expert from the last state from which the planner still reaches
    the goal, and record the successes as expert demonstrations starting from that state."""

    with StepProgress("relabel", outcomes=True) as progress:
        summary = run_relabel(rollouts, out, envs=options.envs, workers=options.workers, progress=progress)
    typer.echo(f"{len(summary['failed'])} failed roll-outs: {summary['relabeled']} relabeled, "
               f"{len(summary['unreachable'])} with no reachable state, {len(summary['expert_failed'])} where the "
               f"expert failed too; dataset: {out / 'dataset'}")


@stage_command(VizConfig)
def viz(
    dataset: Path = typer.Argument(..., help="A dataset: rendered (camera videos) or raw (rendered here)."),
    out: Path = typer.Option(..., "--out", help="Folder for episode_XXXXXX.mp4."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
    options: VizConfig = None,
) -> None:
    """One MP4 per episode tiling modalities (rows: rgb, depth, segmentation) by cameras (columns), with the
    operator, phase and step overlaid."""

    guard_output_dir(out, [dataset], resumable=_only_tiles)
    with StepProgress("viz", "episodes", quiet=quiet) as progress:
        files = write_tiles(dataset, out, _listed(options.episodes), options.tiles, progress=progress)
    for f in files:
        typer.echo(str(f))


def _only_tiles(folder: Path) -> bool:
    """`folder` holds only episode videos of an earlier viz (a rerun rewrites them)."""
    return all(p.name.startswith("episode_") and p.name.endswith((".mp4", ".mp4.partial")) for p in folder.iterdir())


@stage_command(PlotConfig)
def plot(
    dataset: Path = typer.Argument(..., help="A demoforge dataset."),
    out: Path | None = typer.Option(None, "--out", help="PNG path (default episode_XXXXXX.png here)."),
    options: PlotConfig = None,
) -> None:
    """A PNG of every signal of an episode: state, action, gripper, labels, atoms, success."""

    episode = options.episode
    path = guard_output_file(out or Path(f"episode_{episode:06d}.png"), [dataset], what="--out", suffixes=(".png",))
    path = plot_episode(dataset, episode, path)
    typer.echo(str(path))
