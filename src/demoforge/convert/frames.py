"""Camera streams of a bake: copy packets when nothing changes, else decode-decimate-encode.

Frames are decoded from the source mp4 in order, the ones at kept ticks are encoded as
they come (nothing is staged as images, memory stays one frame per stream), and the
fresh segment is handed to the writer as an EncodedVideo, whose packets it copies.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

import av
from av.video.frame import PictureType
import numpy as np

from demoforge.convert.episode import BakeError, CameraRef
from demoforge.dataset.decode import TOLERANCE_S
from demoforge.dataset.stats import pixel_histogram
from demoforge.dataset.video import EncodedVideo, VideoSettings

# Encoder settings that must agree between source stream and bake for packets to be copied.
STREAM_KEYS = ("video.codec", "video.pix_fmt", "video.g", "video.crf")


def can_copy(cam: CameraRef, settings: VideoSettings, fps: int) -> bool:
    """True when the source stream already is what `settings` would encode at `fps`.

    The speed preset counts only when one is asked for: it changes how hard the encoder
    worked, not what a decoder gets (e.g. the render stage encodes with "veryfast")."""
    have = cam.feature.info or {}
    want = settings.info_block(fps=fps, height=cam.feature.shape[0], width=cam.feature.shape[1])
    keys = STREAM_KEYS + (("video.preset",) if settings.preset is not None else ())
    return int(have.get("video.fps", fps)) == fps and all(have.get(k) == want[k] for k in keys)


def copied(cam: CameraRef) -> EncodedVideo:
    """The episode's packets as they are in the source."""
    return EncodedVideo(path=cam.path, from_timestamp=cam.from_timestamp, to_timestamp=cam.to_timestamp,
                        histogram=cam.histogram)


def _open_encoder(out: Path, settings: VideoSettings, fps: int, height: int, width: int):
    container = av.open(str(out), mode="w", format="mp4")
    stream = container.add_stream(settings.encoder, rate=fps, options=settings.codec_options(fps))
    stream.width, stream.height, stream.pix_fmt = width, height, settings.pix_fmt
    stream.time_base = stream.codec_context.time_base = Fraction(1, fps)
    return container, stream


def reencode(cam: CameraRef, ticks: np.ndarray, *, source_fps: int, out: Path, settings: VideoSettings,
             fps: int) -> EncodedVideo:
    """Encode the frames at native `ticks` (sorted) of `cam` into `out` at `fps`, streaming.

    Decoded frames go to the encoder as they are (no RGB round trip); the exact pixel
    histogram is taken from an RGB view of each kept frame on a side thread."""
    h, w = cam.feature.shape[0], cam.feature.shape[1]
    container, stream = _open_encoder(out, settings, fps, h, w)
    hist = np.zeros((3, 256), np.int64)
    count = 0
    want = iter(ticks.tolist())
    nxt = next(want, None)
    lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bake-hist")
    pending: list = []
    try:
        with av.open(str(cam.path)) as src:
            istream = src.streams.video[0]
            istream.thread_type = "AUTO"
            src.seek(max(0, int(cam.from_timestamp / istream.time_base) - 1), stream=istream, backward=True)
            for frame in src.decode(istream):
                if nxt is None:
                    break
                if frame.pts is None:
                    continue
                t = float(frame.pts * istream.time_base)
                if t < cam.from_timestamp - TOLERANCE_S:
                    continue
                k = round((t - cam.from_timestamp) * source_fps)
                if k < nxt:
                    continue
                if k > nxt:
                    raise BakeError(f"{cam.path}: {cam.key} has no frame for tick {nxt} (next frame is tick {k})")
                if (frame.width, frame.height) != (w, h):
                    raise BakeError(f"{cam.path}: {cam.key} frames are {frame.width}x{frame.height}, "
                                    f"info.json says {w}x{h}")
                pending.append(lane.submit(_histogram, frame))
                if len(pending) > 8:  # bounded: at most a few decoded frames wait for the histogram
                    hist += pending.pop(0).result()
                if frame.format.name != settings.pix_fmt:
                    frame = frame.reformat(format=settings.pix_fmt)
                frame.pts, frame.time_base = count, stream.codec_context.time_base
                frame.pict_type = PictureType.NONE  # let the encoder place keyframes, not the source's GOP
                container.mux(stream.encode(frame))
                count += 1
                nxt = next(want, None)
        if nxt is not None:
            raise BakeError(f"{cam.path}: {cam.key} ends before tick {nxt} of the episode at "
                            f"{cam.from_timestamp:.4f} s; the video is shorter than the data")
        container.mux(stream.encode(None))
        container.close()
        for job in pending:
            hist += job.result()
    except BaseException:
        for job in pending:
            job.cancel()
        try:
            container.close()
        except Exception:  # noqa: BLE001 - the partial segment is deleted anyway
            pass
        out.unlink(missing_ok=True)
        raise
    finally:
        lane.shutdown(wait=True)
    return EncodedVideo(path=out, from_timestamp=0.0, to_timestamp=count / fps, histogram=hist)


def _histogram(frame: av.VideoFrame) -> np.ndarray:
    return pixel_histogram(frame.to_ndarray(format="rgb24")[None])
