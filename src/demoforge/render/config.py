"""What decides a render stage's output: the looks (each `--look FILE[:N]` a LookRequest),
cameras, depth and segmentation streams, seed, episodes, encoder settings and the reference
video template, as one RenderConfig checked whole (`check_config`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from demoforge.dataset import VideoSettings
from demoforge.render.look import Look, LookError
from demoforge.render.look_file import load_look
from demoforge.render.recorder import DEPTH_RANGE_M

# x264 with its own threads gives different bytes for the same frames when the machine is busy
# (measured here); one thread per stream keeps the output a function of the frames, and the
# streams still encode in parallel, each on its own writer thread. Preset veryfast: at 224x224
# the default preset costs about as much CPU as drawing the frame, which a CPU renderer needs.
DETERMINISTIC_VIDEO = VideoSettings(preset="veryfast", extra_options={"threads": "1"})
REFERENCE_FIELDS = ("episode_index", "source_episode")  # what a --reference-video template may name


@dataclass(frozen=True)
class LookRequest:
    """One `--look FILE[:N]`: a look and how many copies of each episode to render with it."""

    look: Look
    copies: int = 1  # copies per source episode, each with its own draw
    file: str = ""  # where the look came from (recorded in render.json)


@dataclass(frozen=True)
class RenderConfig:
    """Everything that decides a render stage's output (the worker count does not)."""

    looks: tuple[LookRequest, ...]  # in output order
    cameras: tuple[str, ...] = ("front", "wrist")  # scene camera names; "wrist" is the robot card's
    depth: bool = False  # also write observation.images.<camera>_depth (metres, 12-bit lossless codes)
    depth_range_m: tuple[float, float] = DEPTH_RANGE_M  # depth code range [m]
    segmentation: bool = False  # also write observation.images.<camera>_segmentation (body colours)
    seed: int = 0  # root of every look draw
    episodes: tuple[int, ...] | None = None  # source episode indices to render, in source order; None: all
    video: VideoSettings = field(default_factory=lambda: DETERMINISTIC_VIDEO)  # encoder settings of every stream
    # path of each episode's reference video (e.g. a real or egocentric recording of the same demo),
    # recorded as given, never opened: a str.format template over REFERENCE_FIELDS, e.g.
    # "refs/episode_{source_episode:06d}.mp4"; None: no reference videos
    reference_video: str | None = None


def reference_video_path(template: str, episode_index: int, source_episode: int) -> str:
    """The reference video path of output episode `episode_index` (rendered from source episode
    `source_episode`) under `template`; LookError naming the template and the fields when it has others."""
    try:
        return template.format(episode_index=int(episode_index), source_episode=int(source_episode))
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        fields = ", ".join("{" + f + "}" for f in REFERENCE_FIELDS)
        raise LookError(f"--reference-video {template!r}: {type(exc).__name__} {exc}; a template may name only "
                        f"{fields} (format specs allowed), e.g. refs/episode_{{source_episode:06d}}.mp4; "
                        "write a literal brace as {{ or }}") from None


MAX_COPIES = 1000  # copies of each episode under one look (each is a full render of it)


def parse_look_arg(text: str) -> LookRequest:
    """`FILE.yaml`, `FILE.yaml:N`, `plain` or `randomized:N` as a LookRequest."""
    path, copies = text, 1
    head, sep, tail = text.rpartition(":")
    if sep and tail.isdigit():
        path, copies = head, int(tail)
    if copies < 1:
        raise LookError(f"--look {text!r}: the number of copies must be >= 1")
    if copies > MAX_COPIES:
        raise LookError(f"--look {text!r}: the number of copies must be in [1, {MAX_COPIES}]")
    return LookRequest(load_look(path), copies, path)


def check_config(config: RenderConfig) -> None:
    """Every problem of `config` at once, as one LookError."""
    problems = []
    if not config.looks:
        problems.append("no looks given; pass --look plain (or a look file)")
    names = [r.look.name for r in config.looks]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"look {dup!r} is given twice; give it once with :N copies")
    for camera in config.cameras:
        sizes = sorted({r.look.image_size(camera) for r in config.looks})
        if len(sizes) > 1:
            problems.append(f"looks give camera {camera!r} different image sizes {sizes}; one dataset has one "
                            "size per camera")
    if not config.cameras or len(set(config.cameras)) != len(config.cameras):
        problems.append(f"cameras {list(config.cameras)} must be distinct names, at least one")
    if not (isinstance(config.seed, int) and config.seed >= 0):
        problems.append(f"seed {config.seed!r} must be a non-negative integer")
    if config.reference_video is not None:
        if not config.reference_video.strip():
            problems.append("--reference-video is empty; give a path or a template such as "
                            "refs/episode_{source_episode:06d}.mp4")
        else:
            try:
                reference_video_path(config.reference_video, 0, 0)
            except LookError as exc:
                problems.append(str(exc))
    if problems:
        raise LookError("render: " + "; ".join(problems))
