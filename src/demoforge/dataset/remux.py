"""Episode video moved between mp4 files by remuxing packets, never by re-encoding.

`concat_segments` joins an episode's segments into a dataset's mp4 file (the writer's
finish), `extract_segment` copies one episode out of such a file into a segment of its own
(merge, bake's copy path, the v2.1 layout); both retime packets to whole frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from demoforge.dataset.depth import code_histogram
from demoforge.dataset.stats import pixel_histogram
from demoforge.dataset.tables import fsync_file
from demoforge.errors import DatasetError


def _round_ratio(a: int, b: int) -> int:
    """round(a / b) for integers, b > 0, exactly as round(Fraction(a, b)) (halves to even),
    without building a Fraction per packet (those were most of the remux's CPU)."""
    q, r = divmod(a, b)
    return q + (2 * r > b or (2 * r == b and q % 2 == 1))


def concat_segments(segments: list[Path], out: Path, *, fps: int) -> list[tuple[float, float]]:
    """Join mp4 segments into `out` by remuxing packets (no re-encoding).

    Returns each segment's [from, to) timestamp span in `out` [s]. Segments must share
    codec parameters (they do when written with one VideoSettings)."""
    spans: list[tuple[float, float]] = []
    tmp = out.with_name(out.name + ".tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(tmp), mode="w", format="mp4") as dst:
        ostream = None
        offset = 0  # frames already in `out`
        frame_tb = Fraction(1, fps)
        for segment in segments:
            with av.open(str(segment)) as src:
                istream = src.streams.video[0]
                if ostream is None:
                    ostream = dst.add_stream_from_template(istream, opaque=True)
                    ostream.time_base = frame_tb
                # rescale from the segment's time base to frames, then shift by offset
                num, den = istream.time_base.numerator * fps, istream.time_base.denominator
                n = 0
                for packet in src.demux(istream):
                    if packet.dts is None:
                        continue
                    packet.pts = _round_ratio(packet.pts * num, den) + offset
                    packet.dts = _round_ratio(packet.dts * num, den) + offset
                    packet.duration = 1  # one frame; left in the old time base it would read as hundreds
                    packet.time_base = frame_tb
                    packet.stream = ostream
                    dst.mux(packet)
                    n += 1
            spans.append((offset / fps, (offset + n) / fps))
            offset += n
    fsync_file(tmp)  # on disk before it takes the name: a crash leaves the old file or the whole new one
    tmp.replace(out)
    return spans


@dataclass(frozen=True)
class EncodedVideo:
    """An episode's frames already encoded in an mp4: copied by remuxing, never re-encoded."""

    path: Path  # source mp4
    from_timestamp: float  # episode start within the file [s]
    to_timestamp: float  # episode end (exclusive) [s]
    histogram: np.ndarray | None = None  # (3, 256) pixel counts when known; decoded otherwise


def extract_segment(video: EncodedVideo, out: Path, *, fps: int, depth: bool = False) -> tuple[int, np.ndarray]:
    """Copy one episode's packets into a standalone segment starting at t = 0.

    Returns the frame count and the episode's histogram: (3, 256) pixel counts, or
    (1, 4096) depth-code counts for a depth map."""
    hist = None if video.histogram is None else np.asarray(video.histogram, dtype=np.int64)
    if hist is None:
        hist = np.zeros((1, 4096) if depth else (3, 256), np.int64)
    tol = 1e-4
    count = 0
    with av.open(str(video.path)) as src, av.open(str(out), mode="w", format="mp4") as dst:
        istream = src.streams.video[0]
        ostream = dst.add_stream_from_template(istream, opaque=True)
        frame_tb = Fraction(1, fps)
        ostream.time_base = frame_tb
        src.seek(max(0, int(video.from_timestamp / istream.time_base) - 1), stream=istream, backward=True)
        # int / int is correctly rounded: the same floats as float(ts * time_base), without Fractions
        num, den = istream.time_base.numerator, istream.time_base.denominator
        first = None
        for packet in src.demux(istream):
            if packet.pts is None:
                continue
            t = packet.pts * num / den
            if t < video.from_timestamp - tol:
                continue
            if t >= video.to_timestamp - tol:
                break
            if first is None:
                first = t
                if not packet.is_keyframe:
                    raise DatasetError(
                        f"{video.path}: the episode at {video.from_timestamp:.4f} s does not start on a keyframe, "
                        "so it cannot be copied without re-encoding"
                    )
            frame_no = round((t - video.from_timestamp) * fps)
            packet.pts = frame_no
            packet.dts = frame_no if packet.dts is None else round(
                (packet.dts * num / den - video.from_timestamp) * fps)
            packet.duration = 1
            packet.time_base = frame_tb
            packet.stream = ostream
            dst.mux(packet)
            count += 1
    if video.histogram is None:
        with av.open(str(out)) as written:
            for frame in written.decode(video=0):
                hist += code_histogram(frame.to_ndarray()) if depth else pixel_histogram(
                    frame.to_ndarray(format="rgb24")[None])
    return count, hist
