"""RGB frames to the yuv420p planes the encoder takes, and their exact pixel histograms.

Integer arithmetic on numpy buffers kept between batches, so the bytes handed to the encoder
are the same on every run and machine (see `Yuv420Converter`); `dataset.video` feeds its
planes to the encoder.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

_RGB_TO_YUV = ((66, 129, 25), (-38, -74, 112), (112, -94, -18))
_BATCH_PIXELS = 2**20  # pixels per conversion batch: larger batches gain nothing, and cost memory
_MAX_BATCH = 16  # frames per conversion batch (more only saves Python calls on tiny frames)


class Yuv420Converter:
    """RGB -> yuv420p planes, and the exact RGB pixel histogram of the same frames, for
    batches of up to `capacity` frames of one size.

    Done here rather than by swscale: swscale's SIMD reads past the end of a row-aligned
    numpy frame, and the encoder then saw uninitialized bytes (different output bytes on
    about one run in ten, measured). Several frames per call is cheaper, and every
    intermediate lives in buffers kept between batches: fresh temporaries of this size are
    new memory mappings whose pages the kernel zeroes on first touch, which cost about as
    much as the arithmetic (measured on a 2-core Xeon). Both results come from one planar
    copy of the frames (the channel transposition was the largest single cost). Not
    thread-safe: one converter per encoding thread."""

    def __init__(self, height: int, width: int, capacity: int | None = None):
        if capacity is None:
            capacity = max(1, min(_MAX_BATCH, _BATCH_PIXELS // max(1, height * width)))
        n, h, w = capacity, height, width
        self.capacity, self.height, self.width = n, h, w
        self._planes = np.empty((3, n, h, w), np.uint8)  # R, G, B planes of the batch
        self._y16 = np.empty((n, h, w), np.uint16)
        self._t16 = np.empty((n, h, w), np.uint16)
        self._y = np.empty((n, h, w), np.uint8)
        self._rows = np.empty((3, n, h // 2, w), np.uint16)  # sums of row pairs
        self._sums = np.empty((3, n, h // 2, w // 2), np.int32)  # sums of 2x2 blocks
        self._p32 = np.empty((n, h // 2, w // 2), np.int32)
        self._t32 = np.empty((n, h // 2, w // 2), np.int32)
        self._uv = np.empty((2, n, h // 2, w // 2), np.uint8)
        self._count = 0

    def convert(self, rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(T, H, W, 3) uint8 RGB, T <= capacity -> Y (T, H, W), Cb and Cr (T, H/2, W/2) uint8.

        The planes are views into the converter's buffers, valid until the next call."""
        n = len(rgb)
        if n > self.capacity or rgb.shape[1:] != (self.height, self.width, 3):
            raise ValueError(f"{rgb.shape} frames do not fit a converter of {self.capacity} x "
                             f"{self.height} x {self.width}")
        # Integer arithmetic only (a float matmul goes through BLAS, whose kernels round
        # differently depending on how it splits the work across threads), on contiguous
        # uint8 channel planes widened inside each ufunc (a widening copy of the strided
        # channels is ~3x slower). uint16 holds the luma sums (at most 60324) and the 2x2
        # chroma sums (at most 1020); results lie in [16, 240] by construction: no clipping.
        x = self._planes[:, :n]
        np.copyto(x, np.moveaxis(rgb, -1, 0))
        self._count = n
        cy, cu, cv = _RGB_TO_YUV
        y, term = self._y16[:n], self._t16[:n]
        np.multiply(x[0], cy[0], out=y, dtype=np.uint16)
        np.multiply(x[1], cy[1], out=term, dtype=np.uint16)
        y += term
        np.multiply(x[2], cy[2], out=term, dtype=np.uint16)
        y += term
        y += 128 + (16 << 8)
        np.right_shift(y, 8, out=self._y[:n], casting="unsafe")
        # 2x2 sums (chroma of the mean colour): row pairs, then column pairs
        rows, s = self._rows[:, :n], self._sums[:, :n]
        np.add(x[:, :, 0::2], x[:, :, 1::2], out=rows, dtype=np.uint16)
        np.add(rows[..., 0::2], rows[..., 1::2], out=s, dtype=np.int32)
        p, term = self._p32[:n], self._t32[:n]
        for plane, c in zip(self._uv[:, :n], (cu, cv)):
            np.multiply(s[0], c[0], out=p)
            np.multiply(s[1], c[1], out=term)
            p += term
            np.multiply(s[2], c[2], out=term)
            p += term
            p += 512 + (128 << 10)
            p >>= 10
            np.copyto(plane, p, casting="unsafe")
        return self._y[:n], self._uv[0, :n], self._uv[1, :n]

    def histogram(self) -> np.ndarray:
        """(3, 256) int64 counts per channel of the frames of the last `convert`."""
        m = self._count * self.height * self.width
        return planar_histogram(self._planes[:, :self._count].reshape(3, m))


def planar_histogram(planes: np.ndarray) -> np.ndarray:
    """(3, M) uint8 channel planes -> (3, 256) int64 counts per channel.

    Pillow counts each plane where it lies (an "L" image over the plane's bytes, no copy for
    a contiguous row): exact and in C, about 3x numpy's bincount, which
    first casts every byte to intp (measured: 0.06 against 0.19 ms per 224 x 224 frame)."""
    out = np.zeros((3, 256), np.int64)
    for c in range(3):
        out[c] = plane_histogram(planes[c])
    return out


def plane_histogram(plane, width: int | None = None, height: int = 1, stride: int = 0) -> list[int]:
    """The 256 counts of a uint8 plane: a 1-D array (`width` None), or `height` rows of `width`
    bytes, `stride` apart (0: packed), in any buffer (a PyAV frame plane with its line size)."""
    if width is None:
        plane = np.ascontiguousarray(plane)
        width = plane.size
    if width * height == 0:
        return [0] * 256
    return Image.frombuffer("L", (width, height), plane, "raw", "L", stride, 1).histogram()


def rgb_to_yuv420p(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(..., H, W, 3) uint8 RGB -> Y (..., H, W), Cb and Cr (..., H/2, W/2) uint8 planes
    (see Yuv420Converter; this one allocates a converter for the call)."""
    rgb = np.asarray(rgb)
    lead, (h, w) = rgb.shape[:-3], rgb.shape[-3:-1]
    frames = rgb.reshape(-1, h, w, 3)
    y, u, v = Yuv420Converter(h, w, capacity=len(frames)).convert(frames)
    return y.reshape(*lead, h, w), u.reshape(*lead, h // 2, w // 2), v.reshape(*lead, h // 2, w // 2)
