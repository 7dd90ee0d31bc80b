"""Convex decomposition of mesh props, cached on disk, and the pieces as MjSpec mesh geoms.

MuJoCo collides a mesh geom as its convex hull, so a cup is a solid cylinder to it. A
concave prop therefore becomes several convex pieces, each its own geom. `method="coacd"`
runs CoACD (Wei et al. 2022, the `coacd` package from the `coacd` extra); `method="none"`
keeps the mesh whole (MuJoCo then uses its hull). CoACD takes seconds, so results are
cached by a hash of the mesh bytes, the method and its parameters.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np

from demoforge.errors import SimError

Piece = tuple[np.ndarray, np.ndarray]  # (V, 3) float64 vertices [m], (F, 3) int32 triangle indices
CACHE_FORMAT = 1  # bump when the cache file layout or the piece post-processing changes


def _identity(vertices: np.ndarray, faces: np.ndarray, *, threshold: float, seed: int) -> list[Piece]:
    return [(vertices, faces)]


def _coacd(vertices: np.ndarray, faces: np.ndarray, *, threshold: float, seed: int) -> list[Piece]:
    try:
        import coacd
    except ImportError:
        raise SimError("convex decomposition method 'coacd' needs the coacd package: "
                       "pip install 'demoforge[coacd]' (or use method='none')") from None
    coacd.set_log_level("error")  # CoACD logs every MCTS round at info level
    # CoACD's preprocessing remeshes the input into a manifold (most of its run time on small
    # meshes); a closed, consistently oriented mesh already is one, and "auto" does not skip it.
    preprocess = "off" if is_closed_manifold(faces) else "on"
    parts = coacd.run_coacd(coacd.Mesh(vertices, faces), threshold=threshold, seed=seed, preprocess_mode=preprocess)
    return [(np.asarray(v, np.float64), np.asarray(f, np.int32)) for v, f in parts]


# Each decomposer takes (vertices, faces, threshold=, seed=); "none" ignores both.
DECOMPOSERS: dict[str, Callable[..., list[Piece]]] = {"coacd": _coacd, "none": _identity}


def convex_pieces(
    vertices: np.ndarray,
    faces: np.ndarray,
    *,
    method: str = "coacd",
    threshold: float = 0.05,
    cache_dir: Path | None = None,
    seed: int = 0,
) -> list[Piece]:
    """Split a triangle mesh into convex pieces.

    vertices: (V, 3) [m]; faces: (F, 3) vertex indices, counter-clockwise seen from outside.
    threshold: CoACD's concavity limit in (0, 1] (smaller: more, tighter pieces).
    cache_dir: where results are kept; default `default_cache_dir()`. "none" is never cached.
    """
    if method not in DECOMPOSERS:
        raise SimError(f"unknown convex decomposition method {method!r}. Available methods: {sorted(DECOMPOSERS)}")
    v, f = _checked_mesh(vertices, faces)
    if method == "none":
        return DECOMPOSERS[method](v, f, threshold=threshold, seed=seed)
    if not 0 < threshold <= 1:
        raise SimError(f"convex decomposition threshold={threshold!r} must be in (0, 1]; 0.05 is CoACD's default")
    path = Path(cache_dir if cache_dir is not None else default_cache_dir()) / f"{mesh_key(v, f, method, threshold, seed)}.npz"
    cached = _read_pieces(path)
    if cached is not None:
        return cached
    pieces = DECOMPOSERS[method](v, f, threshold=threshold, seed=seed)
    _write_pieces(path, pieces)
    return pieces


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/demoforge/coacd`, with XDG's fallback `~/.cache`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "demoforge" / "coacd"


def mesh_key(vertices: np.ndarray, faces: np.ndarray, method: str, threshold: float, seed: int) -> str:
    """A hex digest of everything that decides the pieces, the decomposer's version included."""
    h = hashlib.sha256()
    for part in (f"demoforge-convex-{CACHE_FORMAT}", method, _version(method), repr(float(threshold)), str(int(seed))):
        h.update(part.encode() + b"\0")
    for array, dtype in ((vertices, "<f8"), (faces, "<i8")):
        a = np.ascontiguousarray(array, dtype=dtype)
        h.update(str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


def add_convex_pieces(
    spec: mujoco.MjSpec, body: mujoco.MjsBody, pieces: list[Piece], *, name: str, **geom_attributes
) -> list[mujoco.MjsGeom]:
    """Add each piece to `body` as a mesh geom named `{name}_{i}` (mesh `{name}_piece{i}`).

    geom_attributes are set on every geom (rgba, friction, density, solref, ...).
    """
    geoms = []
    for i, (v, f) in enumerate(pieces):
        mesh = spec.add_mesh(name=f"{name}_piece{i}", uservert=np.asarray(v, np.float64).ravel().tolist(),
                             userface=np.asarray(f, np.int32).ravel().tolist())
        geoms.append(body.add_geom(name=f"{name}_{i}", type=mujoco.mjtGeom.mjGEOM_MESH, meshname=mesh.name,
                                   **geom_attributes))
    return geoms


def cup_mesh(radius: float, height: float, wall: float, segments: int) -> Piece:
    """A closed, outward-facing cup: open at the top, its base on z = 0, its floor at z = wall [m]."""
    problems = []
    if not 0 < wall < radius:
        problems.append(f"wall={wall!r} must be in (0, radius={radius!r})")
    if not wall < height:
        problems.append(f"height={height!r} must exceed wall={wall!r}")
    if int(segments) != segments or segments < 3:
        problems.append(f"segments={segments!r} must be an integer >= 3")
    if problems:
        raise SimError("cup_mesh: " + "; ".join(problems))
    n = int(segments)
    angle = 2 * np.pi * np.arange(n) / n
    circle = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    inner = radius - wall
    rings = [(radius, 0.0), (radius, height), (inner, height), (inner, wall)]  # outer base, rim out, rim in, floor edge
    vertices = np.concatenate(
        [np.column_stack([r * circle, np.full(n, z)]) for r, z in rings] + [np.array([[0, 0, 0], [0, 0, wall]])]
    )
    base_centre, floor_centre = 4 * n, 4 * n + 1
    i = np.arange(n)
    j = (i + 1) % n
    faces = []
    for ring in range(3):  # outer wall, rim annulus, inner wall: quads between consecutive rings
        lo, hi = ring * n, (ring + 1) * n
        faces += [np.column_stack([lo + i, lo + j, hi + j]), np.column_stack([lo + i, hi + j, hi + i])]
    faces.append(np.column_stack([3 * n + i, 3 * n + j, np.full(n, floor_centre)]))
    faces.append(np.column_stack([j, i, np.full(n, base_centre)]))
    return vertices.astype(np.float64), np.concatenate(faces).astype(np.int32)


def is_closed_manifold(faces: np.ndarray) -> bool:
    """Whether every directed edge occurs once and its reverse once: closed, consistently oriented."""
    f = np.asarray(faces, np.int64)
    edges = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    directed = np.unique(edges, axis=0)
    if len(directed) != len(edges) or np.any(edges[:, 0] == edges[:, 1]):
        return False
    reverse = np.unique(edges[:, ::-1], axis=0)
    return bool(np.array_equal(directed, reverse))


def _checked_mesh(vertices: np.ndarray, faces: np.ndarray) -> Piece:
    v, f = np.asarray(vertices), np.asarray(faces)
    problems = []
    if v.ndim != 2 or v.shape[1] != 3 or len(v) < 4:
        problems.append(f"vertices must be (V >= 4, 3), got shape {v.shape}")
    elif not np.issubdtype(v.dtype, np.number) or not np.all(np.isfinite(v)):
        problems.append("vertices must be finite numbers")
    if f.ndim != 2 or f.shape[1] != 3 or len(f) < 4:
        problems.append(f"faces must be (F >= 4, 3), got shape {f.shape}")
    elif not np.issubdtype(f.dtype, np.integer):
        problems.append(f"faces must be integers, got dtype {f.dtype}")
    elif v.ndim == 2 and (f.min() < 0 or f.max() >= len(v)):
        problems.append(f"face indices must be in [0, {len(v)}), got [{f.min()}, {f.max()}]")
    if problems:
        raise SimError("convex_pieces: " + "; ".join(problems))
    return v.astype(np.float64), f.astype(np.int32)


def _version(method: str) -> str:
    try:
        return importlib.metadata.version(method)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _read_pieces(path: Path) -> list[Piece] | None:
    if not path.is_file():
        return None
    try:
        with np.load(path) as data:
            count = int(data["count"])
            return [(data[f"v{i}"], data[f"f{i}"]) for i in range(count)]
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile):  # a torn or foreign file: derived data, recompute it
        return None


def _write_pieces(path: Path, pieces: list[Piece]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {"count": np.array(len(pieces))}
    for i, (v, f) in enumerate(pieces):
        arrays[f"v{i}"], arrays[f"f{i}"] = v, f
    # Write beside the target and rename, so a concurrent reader never sees half a file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(out, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
