"""`demoforge rollout | eval | replay | relabel | viz | plot`: policies in the loop and looking at data.

Registered by cli/main.py as top-level commands: rollout, eval (function `eval_`), replay,
relabel, viz, plot.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from demoforge.cli.progress import StepProgress
from demoforge.cli.ranges import MAX_ENVS, MAX_EPISODE_INDEX, MAX_EPISODES, MAX_SEED, finite
from demoforge.dataset.guard import guard_output_dir, guard_output_file, write_file

POLICY_HELP = ("Policy spec: expert | PATH.onnx | onnx:PATH | replay:DATASET | module:factory | file.py:factory "
               "(the factory returns an object with spaces, reset(slot, start), act(observations)).")


def parse_episodes(text: str | None) -> list[int] | None:
    """'0,2,5-7' -> [0, 2, 5, 6, 7]; None -> None (all)."""
    from demoforge.errors import DemoforgeError
    from demoforge.render.config import episodes_value

    try:
        chosen = None if text is None else episodes_value(text)
    except DemoforgeError as exc:
        raise typer.BadParameter(str(exc), param_hint="--episodes") from None
    return None if chosen is None else list(chosen)


def policy_kwargs(pairs: list[str]) -> dict:
    """--policy-arg KEY=VALUE (VALUE as YAML) -> {KEY: value}."""
    import yaml

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise typer.BadParameter(f"--policy-arg {pair!r}: expected KEY=VALUE with KEY a Python identifier")
        out[key] = yaml.safe_load(value)
    return out


_LIKE = typer.Option(None, "--like", help="A baked dataset: the policy acts under its convention and rate "
                                          "(meta/bake.json), executed on the 60 Hz controller as the lerobot env does.")
_POLICY_ARG = typer.Option([], "--policy-arg", help="KEY=VALUE (VALUE read as YAML) passed to the policy's factory "
                                                   "(module:factory, expert); repeatable.")


def _settings(max_ticks: int, warmup: int, reference: int | None, assist_floor: float | None, assist_steps: int):
    # lazy: the simulator (mujoco), kept off `demoforge --help`
    from demoforge.policy import Assist, RolloutSettings

    horizon = max_ticks if reference is None else reference
    excluded = max(warmup, assist_steps if assist_floor is not None else 0)
    if excluded >= horizon:  # alive_ratio would divide by nothing; found here, before anything is written
        flag = "--warmup" if warmup >= horizon else "--assist-steps"  # with --assist-floor, the warm-up is >= it
        ends = "--reference-ticks" if reference is not None else "--max-ticks"
        raise typer.BadParameter(f"{excluded} ticks excluded as warm-up leave nothing of the {horizon}-tick horizon "
                                 f"({ends}); lower {flag} or raise {ends}", param_hint=flag)
    assist = None if assist_floor is None else Assist(floor=assist_floor, steps=assist_steps)
    return RolloutSettings(max_ticks=max_ticks, warmup_ticks=warmup, reference_ticks=reference, assist=assist)


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


_MAX_TICKS = typer.Option(1200, "--max-ticks", min=1, max=10_000_000, help="Ticks before an episode is truncated.")
_WARMUP = typer.Option(0, "--warmup", min=0, max=10_000_000,
                       help="Ticks excluded from alive_ratio (at least --assist-steps); below the horizon.")
_REFERENCE = typer.Option(None, "--reference-ticks", min=1, max=10_000_000,
                          help="alive_ratio horizon [ticks]; default --max-ticks.")
_FLOOR = typer.Option(None, "--assist-floor", min=0.0, max=1.0, callback=finite(0.0, 1.0),
                      help="Enable the object assist (an upward force of a fraction of each object's weight): it "
                           "holds at 1.0 for --assist-steps ticks, then DROPS TO this floor for the rest of the "
                           "episode. The floor is the value it ends at, not the start. Recorded per episode.")
_STEPS = typer.Option(0, "--assist-steps", min=0, max=10_000_000,
                      help="Ticks the assist holds at 1.0 before dropping to the floor.")
_WORKERS = typer.Option(1, "--workers", min=1, max=256, help="Processes, each loading the policy and running "
                        "its share of the episodes on --envs envs; the output does not depend on it.")
_IMAGE_SIZE = typer.Option(None, "--image-size", help="Camera images WIDTHxHEIGHT [px] (or one number) under "
                           "--look; default the look's size. A policy that asks for another size is refused.")


def _look(spec: str | None, image_size: str | None, seed: int, source: Path | None = None):
    # lazy: the simulator (mujoco), kept off `demoforge --help`
    from demoforge.policy.looks import eval_look
    from demoforge.render.look import parse_image_size

    return eval_look(spec, seed=seed, source=source,
                     image_size=None if image_size is None else parse_image_size(image_size))


def rollout(
    policy: str = typer.Option(..., "--policy", help=POLICY_HELP),
    policy_arg: list[str] = _POLICY_ARG,
    problems: list[Path] = typer.Option(..., "--problems", help="PDDL problem file or scene package; repeatable."),
    episodes: int = typer.Option(1, "--episodes", min=1, max=MAX_EPISODES, help="Episodes per problem."),
    envs: int = typer.Option(1, "--envs", min=1, max=MAX_ENVS, help="Environments stepped together."),
    out: Path = typer.Option(..., "--out", help="OUT/dataset, OUT/SUMMARY.md, OUT/summary.json."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED),
    domain: str = typer.Option("blocks", "--domain"),
    randomization: Path | None = typer.Option(None, "--randomization", help="Physics randomization spec (YAML), "
                                                                               "drawn per episode as in generate."),
    max_ticks: int = _MAX_TICKS, warmup: int = _WARMUP, reference_ticks: int | None = _REFERENCE,
    assist_floor: float | None = _FLOOR, assist_steps: int = _STEPS, like: Path | None = _LIKE,
    robot: str | None = typer.Option(None, "--robot", help="Arm of the PDDL problems' scenes: a built-in robot card "
                                     "(panda, ur5e_2f85) or a card YAML [default: panda]; a scene package has its "
                                     "own."),
    look: str | None = typer.Option(None, "--look", help="What the policy's cameras see: plain, randomized, "
                                    "randomized:train|test or a look YAML, one draw per episode [default: the "
                                    "scene's own appearance at the size the policy asks for]."),
    image_size: str | None = _IMAGE_SIZE,
    workers: int = _WORKERS,
    output_format: str = typer.Option("lerobot", "--output-format", help="lerobot: OUT/dataset (LeRobot v3.0); "
                                      "hdf5: OUT/dataset.hdf5 in robomimic's layout too (needs demoforge[hdf5])."),
) -> None:
    """Roll a policy out and record every episode (streamed to disk) with success, partial success and
    completion as episode columns; print and save a summary."""
    # lazy: the simulator (mujoco), kept off `demoforge --help`
    from demoforge.policy import rollout as run
    from demoforge.randomize import load_spec
    from demoforge.sim import resolve_robot

    settings = _settings(max_ticks, warmup, reference_ticks, assist_floor, assist_steps)
    spec = load_spec(randomization) if randomization is not None else None
    card = resolve_robot(robot) if robot is not None else None
    cameras = _look(look, image_size, seed)
    with StepProgress("rollout", outcomes=True) as progress:
        summary = run(policy, problems, out, episodes=episodes, envs=envs, seed=seed, settings=settings,
                      domain=domain, randomization=spec, progress=progress, robot=card, look=cameras,
                      workers=workers, policy_kwargs=policy_kwargs(policy_arg), like=like,
                      output_format=output_format)
    _print_summary(summary, out)
    if output_format == "hdf5":
        typer.echo(f"robomimic HDF5: {out / 'dataset.hdf5'}")


def eval_(
    policy: str = typer.Option(..., "--policy", help=POLICY_HELP),
    policy_arg: list[str] = _POLICY_ARG,
    from_dataset: Path = typer.Option(..., "--from-dataset", help="Dataset whose episodes' initial states to use."),
    out: Path = typer.Option(..., "--out", help="OUT/dataset, OUT/SUMMARY.md, OUT/summary.json."),
    episodes: str | None = typer.Option(None, "--episodes", help="Episodes to start from, e.g. 0,2,5-7 (all)."),
    envs: int = typer.Option(1, "--envs", min=1, max=MAX_ENVS),
    max_ticks: int = _MAX_TICKS, warmup: int = _WARMUP, reference_ticks: int | None = _REFERENCE,
    assist_floor: float | None = _FLOOR, assist_steps: int = _STEPS, like: Path | None = _LIKE,
    robot: str | None = typer.Option(None, "--robot", help="Arm the episodes ran with: a built-in robot card or a "
                                     "card YAML; it must be the one the dataset records [default: the recorded one]."),
    start: str = typer.Option("first", "--start", help="Where episodes start in each recorded episode: first (tick "
                              "0), random (a seeded tick before the goal first holds), every:K (every K-th such "
                              "tick), or several, e.g. first,random: the summary gives each side by side."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Seed of the random start ticks and look draws."),
    look: str | None = typer.Option(None, "--look", help="What the policy's cameras see: recorded (each source "
                                    "episode's own look draw, as rendered), plain, randomized, randomized:train|test "
                                    "or a look YAML [default: the scene's own appearance]."),
    image_size: str | None = _IMAGE_SIZE,
    workers: int = _WORKERS,
) -> None:
    """Closed-loop evaluation from the exact recorded states (physics state and randomization draw) of
    the episodes of a dataset, at their first tick or later ones (--start)."""
    # lazy: the simulator (mujoco), kept off `demoforge --help`
    from demoforge.policy.evaluate import evaluate_from_dataset
    from demoforge.policy.starts import parse_starts
    from demoforge.sim import resolve_robot

    starts = parse_starts(start)  # a bad --start or --look is refused before anything is written
    cameras = _look(look, image_size, seed, source=from_dataset)
    settings = _settings(max_ticks, warmup, reference_ticks, assist_floor, assist_steps)
    card = resolve_robot(robot) if robot is not None else None
    with StepProgress("eval", outcomes=True) as progress:
        summary = evaluate_from_dataset(policy, from_dataset, out, episodes=parse_episodes(episodes),
                                        progress=progress, envs=envs, settings=settings, robot=card, starts=starts,
                                        seed=seed, look=cameras, workers=workers,
                                        policy_kwargs=policy_kwargs(policy_arg), like=like)
    _print_summary(summary, out)


def replay(
    dataset: Path = typer.Argument(..., help="A demoforge dataset (raw execute, roll-out, eval or relabel)."),
    episodes: str | None = typer.Option(None, "--episodes", help="e.g. 0,2,5-7 (all)."),
    kinematic: bool = typer.Option(False, "--kinematic", help="Teleport along the recorded states instead of "
                                                              "stepping the actions (no policy, no physics)."),
    tol: float = typer.Option(1e-6, "--tol", callback=finite(0.0, None),
                              help="Divergence above this (finite, >= 0) is reported as diverging [rad, m]."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the report as JSON here."),
) -> None:
    """Replay each episode's actions open-loop through its recorded control law from its recorded initial
    state and report robot and object divergence per episode. Exit 1 if any episode diverges."""
    from demoforge.policy.replay import replay_dataset  # lazy: the simulator, kept off `demoforge --help`

    if json_out is not None:
        guard_output_file(json_out, [dataset], what="--json")
    report = replay_dataset(dataset, parse_episodes(episodes), kinematic=kinematic)
    for e in report.episodes:
        state = "exact" if e.exact else f"first differs at tick {e.first_diverging_tick}"
        typer.echo(f"episode {e.episode}: {e.ticks} ticks, robot {e.max_robot:.3g}, "
                   f"objects {e.max_object:.3g}; {state}")
    bad = report.diverging(tol, tol)
    typer.echo(f"{len(report.episodes) - len(bad)}/{len(report.episodes)} episodes replay within {tol:g}"
               + (f"; diverging: {bad}" if bad else "") + ("; all bit-exact" if report.exact else ""))
    if json_out is not None:
        write_file(json_out, json.dumps(report.to_json(), indent=2))
    if bad:
        raise typer.Exit(1)


def relabel(
    rollouts: Path = typer.Option(..., "--rollouts", help="A roll-out dataset (OUT/dataset of `demoforge rollout`)."),
    out: Path = typer.Option(..., "--out", help="OUT/dataset (new expert demonstrations), OUT/summary.json."),
    envs: int = typer.Option(1, "--envs", min=1, max=MAX_ENVS),
    workers: int = typer.Option(1, "--workers", min=1, max=256, help="Processes; the output does not depend on it."),
) -> None:
    """For each failed roll-out, run the expert from the last state from which the planner still reaches
    the goal, and record the successes as expert demonstrations starting from that state."""
    from demoforge.policy.relabel import relabel as run  # lazy: the simulator, kept off `demoforge --help`

    with StepProgress("relabel", outcomes=True) as progress:
        summary = run(rollouts, out, envs=envs, workers=workers, progress=progress)
    typer.echo(f"{len(summary['failed'])} failed roll-outs: {summary['relabeled']} relabeled, "
               f"{len(summary['unreachable'])} with no reachable state, {len(summary['expert_failed'])} where the "
               f"expert failed too; dataset: {out / 'dataset'}")


def viz(
    dataset: Path = typer.Argument(..., help="A dataset: rendered (camera videos) or raw (rendered here)."),
    out: Path = typer.Option(..., "--out", help="Folder for episode_XXXXXX.mp4."),
    episodes: str | None = typer.Option(None, "--episodes", help="e.g. 0,2,5-7 (all)."),
    cameras: str | None = typer.Option(None, "--cameras", help="Comma-separated cameras (all)."),
    kinds: str = typer.Option("rgb,depth,segmentation", "--kinds", help="Rows, in order."),
    width: int = typer.Option(160, "--width", min=2, max=4096, help="Tile width when rendering a raw dataset [px]."),
    height: int = typer.Option(120, "--height", min=2, max=4096, help="Tile height when rendering a raw dataset "
                                                                       "[px]."),
    stride: int = typer.Option(1, "--stride", min=1, max=100_000, help="Show every N-th tick."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
) -> None:
    """One MP4 per episode tiling modalities (rows: rgb, depth, segmentation) by cameras (columns), with the
    operator, phase and step overlaid."""
    from demoforge.viz import TileSettings, write_tiles  # lazy: the simulator, kept off `demoforge --help`

    guard_output_dir(out, [dataset], resumable=_only_tiles)
    settings = TileSettings(width=width, height=height, stride=stride,
                            cameras=tuple(c for c in (cameras or "").split(",") if c),
                            kinds=tuple(k for k in kinds.split(",") if k))
    with StepProgress("viz", "episodes", quiet=quiet) as progress:
        files = write_tiles(dataset, out, parse_episodes(episodes), settings, progress=progress)
    for f in files:
        typer.echo(str(f))


def _only_tiles(folder: Path) -> bool:
    """`folder` holds only episode videos of an earlier viz (a rerun rewrites them)."""
    return all(p.name.startswith("episode_") and p.name.endswith((".mp4", ".mp4.partial")) for p in folder.iterdir())


def plot(
    dataset: Path = typer.Argument(..., help="A demoforge dataset."),
    episode: int = typer.Option(..., "--episode", min=0, max=MAX_EPISODE_INDEX, help="Episode index."),
    out: Path | None = typer.Option(None, "--out", help="PNG path (default episode_XXXXXX.png here)."),
) -> None:
    """A PNG of every signal of an episode: state, action, gripper, labels, atoms, success."""
    from demoforge.viz import plot_episode  # lazy: the simulator, kept off `demoforge --help`

    path = guard_output_file(out or Path(f"episode_{episode:06d}.png"), [dataset], what="--out", suffixes=(".png",))
    path = plot_episode(dataset, episode, path)
    typer.echo(str(path))
