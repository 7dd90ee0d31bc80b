"""`demoforge dataset ...` commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from demoforge.cli.progress import StepProgress
from demoforge.cli.options import stage_command
from demoforge.convert.readers import registered
from demoforge.dataset.check import check_dataset, v21_info
from demoforge.dataset.problem import Problem
from demoforge.dataset.hdf5 import DATA, OBS, demo_names, require_h5py
from demoforge.dataset.reader import open_dataset, summarize
from demoforge.errors import DemoforgeError
from demoforge.dataset.guard import holds_files
from demoforge.stage import run_stage
from demoforge.stage.merge import MergeConfig, MergeStage

app = typer.Typer(no_args_is_help=True, add_completion=False)

ROOT_ARG = typer.Argument(..., help="Dataset root (the folder holding meta/info.json); `check` also takes a "
                                     "robomimic-layout HDF5 file.")
MAX_TASKS_SHOWN = 20
JSON_OPT = typer.Option(False, "--json", help="Print machine-readable JSON instead of text.")


@app.command("check")
def check(root: Path = ROOT_ARG, as_json: bool = JSON_OPT,
          quick: bool = typer.Option(False, "--quick", help="Skip decoding every data page (a file damaged "
                                     "mid-way then passes); read only the metadata and the index columns.")) -> None:
    """Verify files, data pages, counts, indices, timestamps and video spans; exit 1 listing every problem."""
    problems = check_dataset(root, quick=quick)
    summary = None
    v21 = None if problems or root.is_file() else v21_info(root)
    if not problems and root.is_file():  # check_dataset took it as a robomimic-layout HDF5 file
        summary = _hdf5_summary(root)
    elif v21 is not None:  # the v3.0 reader does not read v2.1: its checked info.json says the counts
        videos = [k for k, f in v21.get("features", {}).items() if isinstance(f, dict) and f.get("dtype") == "video"]
        summary = f"LeRobot v2.1, {v21['total_episodes']} episodes, {v21['total_frames']} frames, " \
                  f"{v21['total_tasks']} tasks, {len(videos)} video features"
    elif not problems:
        try:
            ds = open_dataset(root)
            summary = f"{ds.num_episodes} episodes, {ds.num_frames} frames, {len(ds.tasks)} tasks, " \
                      f"{len(ds.info.video_keys)} video features"
        except DemoforgeError as exc:  # check passed but the reader disagrees: still a failure
            problems = [_reader_problem(exc)]
    if as_json:
        typer.echo(json.dumps({
            "root": str(root),
            "ok": not problems,
            "problems": [{"code": p.code, "file": p.file, "message": p.message} for p in problems],
        }, indent=2))
    elif problems:
        typer.echo(f"FAILED {root}: {len(problems)} problem{'s' if len(problems) != 1 else ''}")
        for p in problems:
            typer.echo(f"  {p}")
    else:
        typer.echo(f"OK {root}: {summary}")
    raise typer.Exit(1 if problems else 0)


@app.command("readers")
def readers(as_json: bool = JSON_OPT) -> None:
    """List the source formats bake reads: built-in readers and those registered or installed
    (entry points in the `demoforge.readers` group), in the order they are tried."""
    found = registered()
    if as_json:
        typer.echo(json.dumps([{"name": r.name, "describe": r.describe, "lerobot_v3": r.lerobot_v3}
                               for r in found.values()], indent=2))
        return
    for r in found.values():
        typer.echo(f"{r.name}: {r.describe}")


@app.command("info")
def info(root: Path = ROOT_ARG, as_json: bool = JSON_OPT) -> None:
    """Summarize a dataset: fps, episodes, frames, tasks, features, video settings, size."""
    summary = summarize(open_dataset(root))
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    elif sys.stdout.isatty():
        _print_rich(summary)
    else:
        _print_plain(summary)


@app.command("merge")
@stage_command(MergeConfig)
def merge(
    sources: list[Path] = typer.Argument(..., help="Dataset roots to merge, in order."),
    out: Path = typer.Option(..., "--out", help="New dataset root for the merged dataset."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
    options: MergeConfig = None,
) -> None:
    """Merge datasets into a new root: re-indexed, videos copied without re-encoding, stats exact, verified."""
    with StepProgress("merge", "episodes", quiet=quiet) as progress:
        # the stage runner's shape (OUT guarded, fingerprint of the sources, one run at a time, rerun to finish)
        stage = MergeStage(tuple(sources), options.video_file_duration_s, progress=progress)
        complete = holds_files(out)  # run_stage refuses a non-empty OUT unless it is this merge, finished
        run_stage(stage, out)
    if complete:
        typer.echo(f"merge: {out} is already complete with these inputs; nothing to do")
        return
    info = open_dataset(out).info
    typer.echo(f"merged {len(sources)} datasets into {out}: {info.total_episodes} episodes, "
               f"{info.total_frames} frames, {info.total_tasks} tasks (checked)")


def _hdf5_summary(path: Path) -> str:
    with require_h5py(path).File(path, "r") as f:
        names = demo_names(f[DATA])
        keys = sorted(f[DATA][names[0]][OBS].keys())
        return f"robomimic HDF5, {len(names)} demos, {int(f[DATA].attrs['total'])} samples, obs {keys}"


def _reader_problem(exc: DemoforgeError) -> Problem:
    return Problem("reader", ".", str(exc))


def _headline(s: dict) -> list[tuple[str, str]]:
    lengths = s["episode_length"]
    return [
        ("root", s["root"]),
        ("robot_type", str(s["robot_type"])),
        ("fps", str(s["fps"])),
        ("episodes", str(s["episodes"])),
        ("frames", str(s["frames"])),
        ("duration", f"{s['duration_s']:.1f} s"),
        ("episode length", f"min {lengths['min']}, mean {lengths['mean']:.1f}, max {lengths['max']} frames"),
        ("tasks", str(len(s["tasks"]))),
        ("size on disk", _size(s["size_bytes"])),
    ]


def _video_line(settings: dict) -> str:
    keys = ("codec", "pix_fmt", "crf", "g", "preset", "fps", "files")
    return ", ".join(f"{k}={settings[k]}" for k in keys if k in settings)


def _print_plain(s: dict) -> None:
    for name, value in _headline(s):
        typer.echo(f"{name}: {value}")
    typer.echo("features:")
    for key, f in s["features"].items():
        typer.echo(f"  {key}: {f['dtype']} {f['shape']}")
    for key, settings in s["videos"].items():
        typer.echo(f"video {key}: {_video_line(settings)}")
    for i, task in enumerate(s["tasks"][:MAX_TASKS_SHOWN]):
        typer.echo(f"task {i}: {task}")
    if len(s["tasks"]) > MAX_TASKS_SHOWN:
        typer.echo(f"... and {len(s['tasks']) - MAX_TASKS_SHOWN} more tasks (all with --json)")


def _print_rich(s: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    head = Table(show_header=False, box=None)
    for name, value in _headline(s):
        head.add_row(f"[bold]{name}[/bold]", value)
    console.print(head)
    feats = Table(title="features")
    for col in ("key", "dtype", "shape", "video settings"):
        feats.add_column(col)
    for key, f in s["features"].items():
        feats.add_row(key, f["dtype"], str(f["shape"]), _video_line(s["videos"].get(key, {})))
    console.print(feats)
    tasks = Table(title="tasks")
    tasks.add_column("index", justify="right")
    tasks.add_column("task")
    for i, task in enumerate(s["tasks"][:MAX_TASKS_SHOWN]):
        tasks.add_row(str(i), task)
    if len(s["tasks"]) > MAX_TASKS_SHOWN:
        tasks.add_row("...", f"{len(s['tasks']) - MAX_TASKS_SHOWN} more (all with --json)")
    console.print(tasks)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
