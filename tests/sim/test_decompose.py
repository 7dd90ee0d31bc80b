"""Convex decomposition: a cube dropped into a concave cup, the cache, the identity option."""

import mujoco
import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim import decompose
from demoforge.sim.decompose import (
    add_convex_pieces,
    convex_pieces,
    cup_mesh,
    default_cache_dir,
    is_closed_manifold,
    mesh_key,
)

RADIUS, HEIGHT, WALL, SEGMENTS = 0.05, 0.06, 0.006, 12
CUBE_HALF = 0.015
THRESHOLD = 0.2  # coarse: a handful of pieces in a few seconds


@pytest.fixture(scope="module")
def cup():
    return cup_mesh(RADIUS, HEIGHT, WALL, SEGMENTS)


@pytest.fixture(scope="module")
def coacd_cache(tmp_path_factory, cup):
    """One real CoACD run for the whole module; the tests below read its cache."""
    cache = tmp_path_factory.mktemp("coacd")
    convex_pieces(*cup, method="coacd", threshold=THRESHOLD, cache_dir=cache, seed=0)
    return cache


def signed_volume(vertices, faces):
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6)


def test_cup_mesh_is_closed_outward_and_has_the_cup_volume(cup):
    vertices, faces = cup
    assert vertices.dtype == np.float64 and faces.dtype == np.int32
    assert is_closed_manifold(faces)
    polygon = SEGMENTS / 2 * np.sin(2 * np.pi / SEGMENTS)  # area of the unit-radius polygon
    expected = polygon * (RADIUS**2 * HEIGHT - (RADIUS - WALL) ** 2 * (HEIGHT - WALL))
    assert signed_volume(vertices, faces) == pytest.approx(expected, rel=1e-9)
    assert vertices[:, 2].min() == 0 and vertices[:, 2].max() == HEIGHT


def test_cup_mesh_reports_every_bad_dimension():
    with pytest.raises(SimError, match=r"wall=0.2.*height=0.1.*segments=2"):
        cup_mesh(0.1, 0.1, 0.2, 2)


def test_is_closed_manifold_rejects_holes_and_flipped_faces(cup):
    _, faces = cup
    assert not is_closed_manifold(faces[1:])
    flipped = faces.copy()
    flipped[0] = flipped[0, ::-1]
    assert not is_closed_manifold(flipped)


def cup_and_cube(pieces) -> mujoco.MjModel:
    spec = mujoco.MjSpec()
    spec.option.timestep = 0.002
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[1, 1, 0.1])
    add_convex_pieces(spec, spec.worldbody.add_body(name="cup"), pieces, name="cup", rgba=[0.8, 0.3, 0.2, 1])
    cube = spec.worldbody.add_body(name="cube", pos=[0, 0, HEIGHT + 0.03])
    cube.add_freejoint()
    cube.add_geom(name="cube", type=mujoco.mjtGeom.mjGEOM_BOX, size=[CUBE_HALF] * 3, mass=0.05)
    return spec.compile()


def settled_cube_z(model: mujoco.MjModel) -> float:
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, 750)  # 1.5 s
    assert np.abs(data.qvel).max() < 1e-2  # at rest
    return float(data.body("cube").xpos[2])


def test_cube_rests_inside_the_decomposed_cup_and_on_the_hull_without(cup, coacd_cache):
    pieces = convex_pieces(*cup, method="coacd", threshold=THRESHOLD, cache_dir=coacd_cache)
    assert len(pieces) > 1
    inside = settled_cube_z(cup_and_cube(pieces))
    on_hull = settled_cube_z(cup_and_cube(convex_pieces(*cup, method="none")))
    assert inside + CUBE_HALF < HEIGHT  # the whole cube is below the rim
    assert inside < WALL + CUBE_HALF + 0.01  # on (about) the cup's floor
    assert on_hull == pytest.approx(HEIGHT + CUBE_HALF, abs=1e-3)  # on the hull's lid


def test_pieces_become_named_mesh_geoms_with_the_given_attributes(cup, coacd_cache):
    pieces = convex_pieces(*cup, method="coacd", threshold=THRESHOLD, cache_dir=coacd_cache)
    model = cup_and_cube(pieces)
    names = [model.geom(i).name for i in range(model.ngeom) if model.geom_type[i] == mujoco.mjtGeom.mjGEOM_MESH]
    assert names == [f"cup_{i}" for i in range(len(pieces))]
    assert np.allclose(model.geom("cup_0").rgba, [0.8, 0.3, 0.2, 1])
    assert model.nmesh == len(pieces)


def test_second_call_reads_the_cache_and_does_not_run_coacd(cup, coacd_cache, monkeypatch):
    first = convex_pieces(*cup, method="coacd", threshold=THRESHOLD, cache_dir=coacd_cache)

    def must_not_run(*args, **kwargs):
        raise AssertionError("CoACD ran although its result is cached")

    monkeypatch.setitem(decompose.DECOMPOSERS, "coacd", must_not_run)
    second = convex_pieces(*cup, method="coacd", threshold=THRESHOLD, cache_dir=coacd_cache)
    assert len(second) == len(first)
    for (v1, f1), (v2, f2) in zip(first, second):
        np.testing.assert_array_equal(v1, v2)
        np.testing.assert_array_equal(f1, f2)
    with pytest.raises(AssertionError, match="CoACD ran"):  # other parameters are another cache entry
        convex_pieces(*cup, method="coacd", threshold=THRESHOLD, cache_dir=coacd_cache, seed=1)


def fake_decomposer(calls):
    def run(vertices, faces, *, threshold, seed):
        calls.append((threshold, seed))
        half = len(faces) // 2
        return [(vertices, faces[:half]), (vertices, faces[half:])]

    return run


def test_cache_keys_on_mesh_and_parameters(cup, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setitem(decompose.DECOMPOSERS, "coacd", fake_decomposer(calls))
    vertices, faces = cup
    for _ in range(2):
        convex_pieces(vertices, faces, cache_dir=tmp_path)
        convex_pieces(vertices, faces, cache_dir=tmp_path, threshold=0.1)
        convex_pieces(vertices, faces, cache_dir=tmp_path, seed=3)
        convex_pieces(vertices * 2, faces, cache_dir=tmp_path)
    assert calls == [(0.05, 0), (0.1, 0), (0.05, 3), (0.05, 0)]
    assert len(list(tmp_path.glob("*.npz"))) == 4 and not list(tmp_path.glob("*.tmp"))


def test_a_torn_cache_file_is_recomputed(cup, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setitem(decompose.DECOMPOSERS, "coacd", fake_decomposer(calls))
    vertices, faces = cup
    (tmp_path / f"{mesh_key(vertices, faces, 'coacd', 0.05, 0)}.npz").write_bytes(b"PK\x03\x04 torn")
    assert len(convex_pieces(vertices, faces, cache_dir=tmp_path)) == 2
    assert len(calls) == 1


def test_mesh_key_is_stable_and_sensitive(cup):
    vertices, faces = cup
    key = mesh_key(vertices, faces, "coacd", 0.05, 0)
    assert key == mesh_key(vertices.copy(), faces.astype(np.int64), "coacd", 0.05, 0)
    moved = vertices.copy()
    moved[0, 0] += 1e-12
    others = {mesh_key(moved, faces, "coacd", 0.05, 0), mesh_key(vertices, faces, "coacd", 0.06, 0),
              mesh_key(vertices, faces, "coacd", 0.05, 1), mesh_key(vertices, faces, "none", 0.05, 0)}
    assert key not in others and len(others) == 4


def test_identity_option_returns_the_mesh_and_writes_no_cache(cup, tmp_path):
    vertices, faces = cup
    [(v, f)] = convex_pieces(vertices, faces, method="none", cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(v, vertices)
    np.testing.assert_array_equal(f, faces)
    assert not (tmp_path / "cache").exists()


def test_unknown_method_lists_the_methods(cup):
    with pytest.raises(SimError, match=r"'vhacd'.*\['coacd', 'none'\]"):
        convex_pieces(*cup, method="vhacd")


def test_bad_meshes_and_thresholds_are_rejected(cup):
    vertices, faces = cup
    with pytest.raises(SimError, match=r"vertices must be \(V >= 4, 3\).*faces must be integers"):
        convex_pieces(vertices[:, :2], faces.astype(float))
    with pytest.raises(SimError, match=r"face indices must be in \[0, 50\)"):
        convex_pieces(vertices, faces + 1)
    with pytest.raises(SimError, match="threshold=1.5"):
        convex_pieces(vertices, faces, threshold=1.5)


def test_default_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "demoforge" / "coacd"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "demoforge" / "coacd"


def test_default_cache_dir_is_used_when_none_is_given(cup, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(decompose.DECOMPOSERS, "coacd", fake_decomposer([]))
    convex_pieces(*cup)
    assert len(list((tmp_path / "demoforge" / "coacd").glob("*.npz"))) == 1

