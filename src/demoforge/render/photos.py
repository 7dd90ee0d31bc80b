"""Photographs as look textures: image sources, decoding, and the sky box and surface images made
from them.

A look's surface may name `images` per split (`{train: [...], test: [...]}`); each entry is an
image file, a folder (its `*.png`, `*.jpg`, `*.jpeg`, sorted by name) or `skimage:NAME`, one of
the photographs shipped inside scikit-image's wheel (`pip install 'demoforge[looks]'`; nothing is
downloaded at run time). Images are decoded with PyAV (already a dependency), so a look naming
its own files needs no extra.

The shipped set (scikit-image's `skimage/data`, licences as its `skimage.data` docstrings give
them; only images free of copyright restrictions are listed):

- brick: CC0 (CC0Textures "Bricks25"), grey
- gravel: CC0 (CC0Textures "Gravel04"), grey
- grass: CC0 (DeviantArt linolafett "Grass-01"), grey
- camera: CC0 (photographer Lav Varshney), grey
- chelsea: CC0 (photographer Stefan van der Walt)
- coffee: CC0 (photographer Rachel Michetti)
- clock_motion: public domain (photographer Stefan van der Walt), grey
- astronaut: public domain (NASA)
- rocket: public domain (SpaceX)
- hubble_deep_field: public domain (NASA)

Both CC0 and public domain impose nothing on a GPL-3.0-or-later project.

A grey image is tinted by the draw's colour (so brick can be red or white); a colour photograph
keeps its colours. Surfaces tile a photograph mirrored (image, flipped copy side by side and
below), so a repeated texture has no seams. The sky box either maps an equirectangular (HDRI
style, 360 x 180 deg) image onto its six faces (`projection: equirect`) or shows the image on
every wall (`projection: walls`, the floor side darker, as the procedural walls).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

import numpy as np

PREFIX = "skimage:"
SUFFIXES = (".png", ".jpg", ".jpeg")
INSTALL = "pip install 'demoforge[looks]'"
# name -> (file in skimage/data, licence)
SKIMAGE: dict[str, tuple[str, str]] = {
    "brick": ("brick.png", "CC0"),
    "gravel": ("gravel.png", "CC0"),
    "grass": ("grass.png", "CC0"),
    "camera": ("camera.png", "CC0"),
    "chelsea": ("chelsea.png", "CC0"),
    "coffee": ("coffee.png", "CC0"),
    "clock_motion": ("clock_motion.png", "public domain"),
    "astronaut": ("astronaut.png", "public domain"),
    "rocket": ("rocket.jpg", "public domain"),
    "hubble_deep_field": ("hubble_deep_field.jpg", "public domain"),
}
MAX_SIDE = 512  # surface textures are resampled to at most this side [px] (a 224 px image shows less)
SKY_SIDE = 256  # sky box face side [px]


class PhotoError(ValueError):
    """An image source cannot be used; the message says why and the fix (the look wraps it)."""


def skimage_data_dir() -> Path:
    """The folder of scikit-image's shipped images, found without importing scikit-image."""
    spec = importlib.util.find_spec("skimage")
    if spec is None or not spec.submodule_search_locations:
        raise PhotoError(f"the photographic set needs scikit-image: {INSTALL}")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def resolve(entry: str, base: Path | None) -> list[str]:
    """The image references one look entry names (see the module docstring): `skimage:NAME`, or
    absolute file paths (a relative entry is taken from `base`, the look file's folder)."""
    if entry.startswith(PREFIX):
        name = entry[len(PREFIX):]
        if name not in SKIMAGE:
            raise PhotoError(f"unknown shipped image {name!r}; shipped: {', '.join(PREFIX + n for n in SKIMAGE)}")
        path = skimage_data_dir() / SKIMAGE[name][0]
        if not path.is_file():
            raise PhotoError(f"{path} is missing from the installed scikit-image; reinstall it: {INSTALL}")
        return [entry]
    path = Path(entry).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)
        if not files:
            raise PhotoError(f"folder {path} holds no {'/'.join(SUFFIXES)} images; add some or name files")
        return [str(p.resolve()) for p in files]
    if not path.is_file():
        raise PhotoError(f"no such image file or folder {path}; give an existing path (relative to the look "
                         f"file's folder) or a shipped image ({PREFIX}NAME)")
    return [str(path.resolve())]


def ref_path(ref: str) -> Path:
    """The file an image reference names."""
    return skimage_data_dir() / SKIMAGE[ref[len(PREFIX):]][0] if ref.startswith(PREFIX) else Path(ref)


@functools.lru_cache(maxsize=32)
def _decode(path: str, stamp: tuple[int, int]) -> np.ndarray:
    import av

    try:
        with av.open(path) as container:
            frame = next(container.decode(video=0))
            image = frame.to_ndarray(format="rgb24")
    except (av.FFmpegError, OSError, StopIteration, ValueError) as exc:
        raise PhotoError(f"cannot read image {path}: {exc}; give a PNG or JPEG file") from None
    image.setflags(write=False)
    return image


def load_image(ref: str) -> np.ndarray:
    """(H, W, 3) uint8 RGB of an image reference (read-only, cached while the file is unchanged)."""
    path = ref_path(ref)
    try:
        st = path.stat()
    except OSError as exc:
        raise PhotoError(f"cannot read image {path}: {exc.strerror}") from None
    return _decode(str(path), (st.st_mtime_ns, st.st_size))


def digest(ref: str) -> str:
    """A short hash of the decoded pixels, recorded with a draw so a changed file is noticed."""
    return hashlib.sha256(load_image(ref).tobytes()).hexdigest()[:16]


def is_grey(image: np.ndarray) -> bool:
    return bool(np.array_equal(image[..., 0], image[..., 1]) and np.array_equal(image[..., 1], image[..., 2]))


def _bilinear(image: np.ndarray, u: np.ndarray, v: np.ndarray, *, wrap_u: bool) -> np.ndarray:
    """`image` sampled at continuous pixel coordinates (u across, v down), float RGB."""
    h, w = image.shape[:2]
    img = image.astype(np.float64)
    u = np.mod(u, w) if wrap_u else np.clip(u, 0, w - 1)
    v = np.clip(v, 0, h - 1)
    u0, v0 = np.floor(u).astype(int), np.floor(v).astype(int)
    fu, fv = (u - u0)[..., None], (v - v0)[..., None]
    u1 = (u0 + 1) % w if wrap_u else np.minimum(u0 + 1, w - 1)
    v1 = np.minimum(v0 + 1, h - 1)
    u0 = u0 % w
    top = img[v0, u0] * (1 - fu) + img[v0, u1] * fu
    bottom = img[v1, u0] * (1 - fu) + img[v1, u1] * fu
    return top * (1 - fv) + bottom * fv


def _fit(image: np.ndarray, side: int) -> np.ndarray:
    """`image` resampled so its longer side is at most `side` [px] (float RGB)."""
    h, w = image.shape[:2]
    scale = min(1.0, side / max(h, w))
    if scale == 1.0:
        return image.astype(np.float64)
    nh, nw = max(2, round(h * scale)), max(2, round(w * scale))
    v = (np.arange(nh) + 0.5) / scale - 0.5
    u = (np.arange(nw) + 0.5) / scale - 0.5
    return _bilinear(image, u[None, :].repeat(nh, 0), v[:, None].repeat(nw, 1), wrap_u=False)


def _tint(image: np.ndarray, rgb) -> np.ndarray:
    return image * np.asarray(rgb, float) if is_grey(image) else image


def _uint8(image: np.ndarray) -> np.ndarray:
    return np.round(np.clip(image, 0, 255)).astype(np.uint8)


def surface_image(ref: str, rgb) -> np.ndarray:
    """(H, W, 3) uint8: the photograph for a floor or table, tinted if grey, tiled mirrored so
    it repeats without seams."""
    image = _tint(_fit(load_image(ref), MAX_SIDE // 2), rgb)
    row = np.concatenate([image, image[:, ::-1]], axis=1)
    return _uint8(np.concatenate([row, row[::-1]], axis=0))


# MuJoCo's sky box faces, in the order its texture data stacks them: for each, the world
# direction of the face centre, and of +u (along a row) and +v (down the rows) across it, as
# measured by rendering a sky whose texels encode (face, u, v) (tests/render/test_photos.py
# checks the mapping). Seen from inside, +u runs to the viewer's left on the walls.
SKY_FACES = (
    ((1, 0, 0), (0, 1, 0), (0, 0, -1)),
    ((-1, 0, 0), (0, -1, 0), (0, 0, -1)),
    ((0, 0, 1), (1, 0, 0), (0, -1, 0)),
    ((0, 0, -1), (1, 0, 0), (0, 1, 0)),
    ((0, -1, 0), (1, 0, 0), (0, 0, -1)),
    ((0, 1, 0), (-1, 0, 0), (0, 0, -1)),
)
FLOOR_FACE = 3  # the face below the horizon


def sky_directions(side: int) -> np.ndarray:
    """(6, side, side, 3) unit world directions of every sky box texel, faces in MuJoCo's order."""
    t = (np.arange(side) + 0.5) / side * 2 - 1
    out = []
    for centre, right, down in SKY_FACES:
        d = (np.asarray(centre, float) + t[None, :, None] * np.asarray(right, float)
             + t[:, None, None] * np.asarray(down, float))
        out.append(d / np.linalg.norm(d, axis=-1, keepdims=True))
    return np.stack(out)


def equirect_lookup(image: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Float RGB of an equirectangular `image` (azimuth 0 at the centre column, +z up at the top
    row) seen along world `directions` (..., 3)."""
    h, w = image.shape[:2]
    azimuth = np.arctan2(directions[..., 1], directions[..., 0])  # [-pi, pi], 0 along +x
    elevation = np.arcsin(np.clip(directions[..., 2], -1, 1))
    u = (0.5 - azimuth / (2 * np.pi)) * w - 0.5  # +y (left of +x, seen from above) to the left
    v = (0.5 - elevation / np.pi) * h - 0.5
    return _bilinear(image, u, v, wrap_u=True)


def sky_image(ref: str, rgb, projection: str, side: int = SKY_SIDE) -> np.ndarray:
    """(6 * side, side, 3) uint8 sky box data of a photograph: `equirect` maps it around the
    scene, `walls` shows it on every face (the floor side darker)."""
    image = _tint(load_image(ref).astype(np.float64), rgb)
    if projection == "equirect":
        return _uint8(equirect_lookup(image, sky_directions(side)).reshape(6 * side, side, 3))
    t = (np.arange(side) + 0.5) / side
    h, w = image.shape[:2]
    # +u runs to the viewer's left on a wall: sample the photo right to left, so it reads unmirrored
    face = _bilinear(image, ((1 - t) * w - 0.5)[None, :].repeat(side, 0), (t * h - 0.5)[:, None].repeat(side, 1),
                     wrap_u=False)
    faces = [face] * 6
    faces[FLOOR_FACE] = face * 0.6
    return _uint8(np.concatenate(faces))
