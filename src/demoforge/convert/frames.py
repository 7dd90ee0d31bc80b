"""Camera streams of a bake: copy packets when nothing changes, else decode-decimate-encode.

Frames are decoded from the source mp4 in order, the ones at kept ticks are encoded as
they come (nothing is staged as images, memory stays one frame per stream), and the
fresh segment is handed to the writer as an EncodedVideo, whose packets it copies.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np

from demoforge.convert.episode import BakeError, CameraRef
from demoforge.dataset.decode import TOLERANCE_S
from demoforge.dataset.stats import pixel_histogram
from demoforge.dataset.video import EncodedVideo, SegmentEncoder, VideoSettings

# Encoder settings that must agree between source stream and bake for packets to be copied.
STREAM_KEYS = ("video.codec", "video.pix_fmt", "video.g", "video.crf", "video.preset")


def can_copy(cam: CameraRef, settings: VideoSettings, fps: int) -> bool:
    """True when the source stream already is what `settings` would encode at `fps`."""
    have = cam.feature.info or {}
    want = settings.info_block(fps=fps, height=cam.feature.shape[0], width=cam.feature.shape[1])
    return int(have.get("video.fps", fps)) == fps and all(have.get(k) == want[k] for k in STREAM_KEYS)


def copied(cam: CameraRef) -> EncodedVideo:
    """The episode's packets as they are in the source."""
    return EncodedVideo(path=cam.path, from_timestamp=cam.from_timestamp, to_timestamp=cam.to_timestamp,
                        histogram=cam.histogram)


def reencode(cam: CameraRef, ticks: np.ndarray, *, source_fps: int, out: Path, settings: VideoSettings,
             fps: int) -> EncodedVideo:
    """Encode the frames at native `ticks` (sorted) of `cam` into `out` at `fps`, streaming."""
    h, w = cam.feature.shape[0], cam.feature.shape[1]
    hist = np.zeros((3, 256), np.int64)
    enc = SegmentEncoder(out, settings=settings, fps=fps, height=h, width=w)
    want = iter(ticks.tolist())
    nxt = next(want, None)
    try:
        with av.open(str(cam.path)) as src:
            stream = src.streams.video[0]
            stream.thread_type = "AUTO"
            src.seek(max(0, int(cam.from_timestamp / stream.time_base) - 1), stream=stream, backward=True)
            for frame in src.decode(stream):
                if nxt is None:
                    break
                if frame.pts is None:
                    continue
                t = float(frame.pts * stream.time_base)
                if t < cam.from_timestamp - TOLERANCE_S:
                    continue
                k = round((t - cam.from_timestamp) * source_fps)
                if k < nxt:
                    continue
                if k > nxt:
                    raise BakeError(f"{cam.path}: {cam.key} has no frame for tick {nxt} (next frame is tick {k})")
                rgb = frame.to_ndarray(format="rgb24")
                enc.add(rgb)
                hist += pixel_histogram(rgb[None])
                nxt = next(want, None)
        if nxt is not None:
            raise BakeError(f"{cam.path}: {cam.key} ends before tick {nxt} of the episode at "
                            f"{cam.from_timestamp:.4f} s; the video is shorter than the data")
        enc.close()
    except BaseException:
        enc.abort()
        raise
    return EncodedVideo(path=out, from_timestamp=0.0, to_timestamp=enc.count / fps, histogram=hist)
