"""Decode frames of one mp4 at given timestamps, and list its packet timestamps, with PyAV.

An episode's frames sit at `from_timestamp + k / fps` inside a file that may hold many
episodes; frames are matched to requested timestamps by presentation time within a
tolerance, as lerobot does, so a misaligned file is an error rather than a wrong frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import av
import numpy as np

from demoforge.errors import DatasetError

# lerobot checks decoded frame times against float32 timestamps with this tolerance [s].
TOLERANCE_S = 1e-4


@dataclass(frozen=True)
class VideoStreamInfo:
    """What the container says about its first video stream, read without decoding."""

    width: int  # [px]
    height: int  # [px]
    codec: str  # codec name as info.json's video.codec gives it, e.g. "h264", "av1"
    pix_fmt: str | None  # e.g. "yuv420p"
    pts_s: np.ndarray  # presentation time of every packet, sorted, float64 [s]


def _open(path: Path) -> av.container.InputContainer:
    if not path.is_file():
        raise DatasetError(f"{path}: video file not found")
    try:
        container = av.open(str(path))
    except av.error.FFmpegError as exc:
        raise DatasetError(f"{path}: cannot open video ({exc})") from exc
    if not container.streams.video:
        container.close()
        raise DatasetError(f"{path}: holds no video stream")
    return container


def probe_video(path: str | Path) -> VideoStreamInfo:
    """Stream size and every packet's presentation time, by demuxing only."""
    path = Path(path)
    with _open(path) as container:
        stream = container.streams.video[0]
        time_base = float(stream.time_base)
        pts = [p.pts for p in container.demux(stream) if p.pts is not None]
        ctx = stream.codec_context
        return VideoStreamInfo(
            width=int(ctx.width),
            height=int(ctx.height),
            codec=ctx.codec.canonical_name,
            pix_fmt=ctx.format.name if ctx.format is not None else None,
            pts_s=np.sort(np.asarray(pts, dtype=np.float64) * time_base),
        )


def decode_at(
    path: str | Path, timestamps_s: Sequence[float], *, tolerance_s: float = TOLERANCE_S, raw: bool = False
) -> np.ndarray:
    """RGB frames of `path` shown at `timestamps_s` (seconds within the file).

    Returns uint8 (N, H, W, 3) in the order asked (repeats allowed); with `raw`, the
    frames in their own pixel format (uint16 (N, H, W) codes for a gray12le depth map). Seeks to the key
    frame before the earliest timestamp and decodes forward only to the latest one.
    Raises DatasetError naming the file and timestamp when no frame lies within
    `tolerance_s` [s] of a requested time.
    """
    path = Path(path)
    wanted = np.asarray(timestamps_s, dtype=np.float64).reshape(-1)
    if wanted.size == 0:
        raise DatasetError(f"{path}: no timestamps requested")
    if not np.all(np.isfinite(wanted)):
        raise DatasetError(f"{path}: requested timestamps must be finite, got {wanted.tolist()}")
    targets = np.unique(wanted)
    with _open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        found, nearest, first_t = _decode_span(container, stream, targets, tolerance_s, seek_s=targets[0], raw=raw)
        if first_t is not None and first_t > targets[0] + tolerance_s:
            # The demuxer landed past the target (an index without that key frame): start over.
            found, nearest, _ = _decode_span(container, stream, targets, tolerance_s, seek_s=0.0, raw=raw)
    missing = [i for i in range(targets.size) if i not in found]
    if missing:
        shown = ", ".join(
            f"{targets[i]:.6f} s (nearest frame {nearest[i]:.6f} s away)" if np.isfinite(nearest[i])
            else f"{targets[i]:.6f} s (no frame decoded near it)"
            for i in missing[:5]
        )
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise DatasetError(
            f"{path}: no frame within {tolerance_s} s of {shown}{more}; the episode's video "
            "timestamps do not match the file (run `demoforge dataset check` on the root)"
        )
    stacked = np.stack([found[i] for i in range(targets.size)])
    return stacked[np.searchsorted(targets, wanted)]


def _decode_span(
    container: av.container.InputContainer,
    stream: av.video.stream.VideoStream,
    targets: np.ndarray,
    tolerance_s: float,
    *,
    seek_s: float,
    raw: bool = False,
) -> tuple[dict[int, np.ndarray], np.ndarray, float | None]:
    """Decode from the key frame before `seek_s` [s] until every sorted target is passed."""
    time_base = stream.time_base
    found: dict[int, np.ndarray] = {}
    nearest = np.full(targets.size, np.inf)
    first_t = None
    offset = int(max(seek_s - tolerance_s, 0.0) / float(time_base))
    container.seek(offset, stream=stream, backward=True, any_frame=False)
    for frame in container.decode(stream):
        if frame.pts is None:
            continue
        t = float(frame.pts * time_base)
        if first_t is None:
            first_t = t
        j = int(np.searchsorted(targets, t))
        for cand in (j - 1, j):
            if 0 <= cand < targets.size:
                d = abs(targets[cand] - t)
                nearest[cand] = min(nearest[cand], d)
                if d <= tolerance_s and cand not in found:
                    found[cand] = frame.to_ndarray() if raw else frame.to_ndarray(format="rgb24")
        if t > targets[-1] + tolerance_s or len(found) == targets.size:
            break
    return found, nearest, first_t
