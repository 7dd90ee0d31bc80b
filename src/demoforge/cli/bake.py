"""`demoforge bake`: raw episodes -> a training dataset under one convention at one rate."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from demoforge.errors import DemoforgeError
from demoforge.cli.failures import fail
from demoforge.cli.ranges import MAX_WORKERS, finite

CONTROL_SPACES = ("joint_target (default), joint_pos, joint_vel, raw_cmd, or as_recorded (the source's own action "
                  "column, kept as recorded)")


def bake(
    sources: list[Path] = typer.Argument(..., help="Source dataset root(s); one control law across all."),
    out: Path = typer.Option(..., "--out", help="New dataset root for the baked dataset."),
    control_space: str = typer.Option("joint_target", "--control-space", help=f"Action convention: {CONTROL_SPACES}."),
    control_freq: int = typer.Option(None, "--control-freq", min=1, max=10_000, help="Output rate [Hz]; must divide the native rate "
                                                                  "(default: native)."),
    cams: list[str] = typer.Option(None, "--cams", help="Camera views to keep: --cams front --cams wrist, or --cams front,wrist; default all."),
    task: str = typer.Option(None, "--task", help="Task string for every episode (default: each episode's own)."),
    include_failures: bool = typer.Option(False, "--include-failures", help="Bake failed episodes too."),
    filter_idle: bool = typer.Option(False, "--filter-idle", help="Drop dead ticks (robot and objects static, "
                                                                  "no command intent); keeps each run's first."),
    workers: str = typer.Option("1", "--workers", help="Processes: a number or 'auto'; the output is identical."),
    vcodec: str = typer.Option("h264", "--vcodec", help="Video codec: h264, hevc or av1."),
    crf: int = typer.Option(23, "--crf", min=0, max=63, help="Constant rate factor of the encoder (h264 and hevc "
                                                             "take 0-51, av1 0-63)."),
    gop_seconds: float = typer.Option(0.25, "--gop-seconds", callback=finite(0.0, 60.0, low_open=True),
                                      help="Keyframe interval, in (0, 60] [s]."),
    pix_fmt: str = typer.Option("yuv420p", "--pix-fmt", help="Pixel format of the output videos."),
    max_video_file_seconds: float = typer.Option(800.0, "--max-video-file-seconds",
                                                 callback=finite(0.0, 1000.0, low_open=True),
                                                 help="Start a new mp4 before this length, in (0, 1000] [s]."),
    lerobot_format: str = typer.Option("v3.0", "--lerobot-format", help="Output layout: v3.0 or v2.1."),
    environment_state: bool = typer.Option(False, "--environment-state",
                                           help="Add observation.environment_state: the task's object poses, as the "
                                                "demoforge lerobot env observes them (raw demoforge sources)."),
    keep: str = typer.Option("", "--keep", help="Source per-tick columns to carry through, comma-separated (e.g. "
                                                "next.reward,goal.position), or 'all': every one the bake does not "
                                                "write itself. Columns left behind are named in a note."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
) -> None:
    """Project raw episodes to a training convention at a control rate; stamps meta/bake.json and modality.json."""
    from demoforge.cli.progress import StepProgress
    from demoforge.convert import BAKE_PATH, BakeConfig, bake as run_bake
    from demoforge.convert.bake import auto_workers
    from demoforge.dataset.video import VideoSettings

    try:
        views = _split_cams(cams)
        n_workers = auto_workers() if workers == "auto" else _int(workers)
        config = BakeConfig(
            convention=control_space, control_freq=control_freq, cams=views, task=task,
            include_failures=include_failures, filter_idle=filter_idle, workers=n_workers,
            video=VideoSettings(codec=vcodec, crf=crf, gop_s=gop_seconds, pix_fmt=pix_fmt),
            max_video_file_s=max_video_file_seconds, lerobot_format=lerobot_format,
            environment_state=environment_state, keep=tuple(k for k in keep.split(",") if k.strip()),
        )
        with StepProgress("bake", "episodes", quiet=quiet) as progress:
            root = run_bake(sources, out, config, progress=progress.event)
    except DemoforgeError as exc:
        raise fail(exc) from None
    rate = f"{control_freq} Hz" if control_freq else "native rate"
    typer.echo(f"baked {len(sources)} source(s) into {root}: {control_space} at {rate} "
               f"({lerobot_format}; meta/bake.json, meta/modality.json)")
    for note in json.loads((root / BAKE_PATH).read_text()).get("notes", []):
        typer.echo(f"note: {note}")


def _int(text: str) -> int:
    from demoforge.convert import BakeError

    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_WORKERS:
        raise BakeError(f"--workers {text!r} must be an integer in [1, {MAX_WORKERS}] or 'auto'")
    return n


def _split_cams(cams: list[str] | None) -> tuple[str, ...] | None:
    """`--cams front --cams wrist` or `--cams front,wrist` (typer options take one value per flag)."""
    if not cams:
        return None
    out = []
    for cam in cams:
        out += [c for c in cam.replace(",", " ").split() if c]
    return tuple(out)
