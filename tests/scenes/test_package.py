"""Scene packages: build, load, verify, determinism, lint refusal, errors."""

import dataclasses
import json
import shutil

import mujoco
import numpy as np
import pytest

from demoforge.scenes import (
    ScenePackageError,
    build_scene_package,
    load_scene_package,
    open_profile,
    restore_reset,
)
from demoforge.scenes import package as package_module
from demoforge.sim.lint_classify import Finding
from demoforge.symbolic import abstract, sample_reset_state
from demoforge.tasks import generate_family, write_tasks


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    folder = tmp_path_factory.mktemp("problems")
    tasks = generate_family("stack_three", count=1, seed=1) + generate_family("pnp", count=1, seed=1, n=2)
    written = write_tasks(tasks, folder)
    return [p for p in written if p.name.endswith(".pddl") and p.name != "blocks.pddl"]


@pytest.fixture(scope="module")
def package(problems, tmp_path_factory):
    out = tmp_path_factory.mktemp("pkg") / "scenes"
    lines = []
    manifest = build_scene_package(problems, reset_states=2, profiles=2, seed=3, out=out, progress=lines.append)
    return out, manifest, lines


def test_package_layout_and_manifest(package, problems):
    out, manifest, lines = package
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "pnp-all-0000", "stack_three-all-0000"]
    assert len(lines) == 4 and all("lint finding" in line for line in lines)
    data = json.loads((out / "manifest.json").read_text())
    assert data["schema"] == "demoforge.scenepkg/1" and data["seed"] == 3 and data["reset_states"] == 2
    entry = data["problems"][0]
    assert set(entry["sha256"]) >= {"problem.pddl", "domain.pddl", "scene.json", "profile-000/draw.json",
                                    "profile-000/reset_states.npz", "profile-001/reset_states.json"}
    assert (out / entry["name"] / "problem.pddl").read_bytes() == problems[1].read_bytes()
    assert [p["index"] for p in entry["profiles"]] == [0, 1]
    assert entry["profiles"][0]["draw"] != entry["profiles"][1]["draw"]
    assert entry["profiles"][0]["findings"] == [] and entry["profiles"][0]["reset_states"] == 2
    assert not [p for p in out.parent.iterdir() if "partial" in p.name]


def test_loaded_reset_states_abstract_to_the_init(package):
    out, manifest, _ = package
    pkg = load_scene_package(out)
    assert pkg.manifest == manifest
    for problem in pkg.problems:
        for k, profile in enumerate(problem.profiles):
            assert profile.states.shape == (2, profile.entry.state_size)
            scene, binding = open_profile(problem, k)
            for i in range(len(profile.states)):
                restore_reset(scene, profile, i)
                assert abstract(scene.model, scene.data, binding) == frozenset(problem.task.init)
            assert profile.samples[0]["poses"][0]["block"] == binding.blocks[0]
            # The recorded seed reproduces the stored snapshot.
            sample = profile.samples[1]
            rng = np.random.default_rng(np.random.SeedSequence(sample["entropy"], spawn_key=sample["spawn_key"]))
            again = sample_reset_state(scene, binding, problem.params, profile.entry.draw, rng)
            assert again.state.tobytes() == profile.states[1].tobytes()
    with pytest.raises(ScenePackageError, match="no problem 'nope'"):
        pkg.problem("nope")
    with pytest.raises(ScenePackageError, match="profiles 0..1, not 5"):
        open_profile(pkg.problem("pnp-all-0000"), 5)


def test_same_inputs_give_byte_identical_packages(problems, package, tmp_path):
    out, _, _ = package
    again = tmp_path / "again"
    build_scene_package(problems, reset_states=2, profiles=2, seed=3, out=again)
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert all((out / f).read_bytes() == (again / f).read_bytes() for f in files)


def test_a_changed_file_is_refused(package, tmp_path):
    import shutil

    out, _, _ = package
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    with np.load(copy / "pnp-all-0000/profile-000/reset_states.npz") as npz:
        states = npz["states"].copy()
    states[0, 5] += 1e-9
    np.savez(copy / "pnp-all-0000/profile-000/reset_states.npz", states=states)
    (copy / "stack_three-all-0000/scene.json").unlink()
    with pytest.raises(ScenePackageError) as err:
        load_scene_package(copy)
    text = str(err.value)
    assert "reset_states.npz: sha256 differs" in text and "scene.json: listed in the manifest but missing" in text


def test_a_model_that_rebuilds_differently_is_refused(package, tmp_path):
    import shutil

    out, _, _ = package
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    data = json.loads((copy / "manifest.json").read_text())
    data["problems"][0]["profiles"][0]["model_fingerprint"] = "0" * 64
    (copy / "manifest.json").write_text(json.dumps(data))
    pkg = load_scene_package(copy)
    with pytest.raises(ScenePackageError, match="rebuilds to a different model"):
        open_profile(pkg.problems[0], 0)


def _finding(code, severity):
    return Finding(code, severity, f"{code} happened", ("a", "b"), ("a", "b"), 2.0, 1.0, "J", f"fix {code} like so")


class _Report:
    def __init__(self, findings):
        self.findings = tuple(findings)


def test_explosion_refuses_the_profile_with_the_linters_fix(problems, tmp_path, monkeypatch):
    monkeypatch.setattr(package_module, "lint_contact_stability", lambda m, **kw: _Report([_finding("C001", "error")]))
    out = tmp_path / "boom"
    with pytest.raises(ScenePackageError) as err:
        build_scene_package(problems[:1], reset_states=1, profiles=1, seed=0, out=out)
    assert "C001" in str(err.value) and "fix C001 like so" in str(err.value) and "profile 0" in str(err.value)
    assert not out.exists() and not list(tmp_path.iterdir())  # nothing half-written stays behind


def test_other_findings_are_written_to_the_manifest(problems, tmp_path, monkeypatch):
    monkeypatch.setattr(package_module, "lint_contact_stability", lambda m, **kw: _Report([_finding("C003", "warning")]))
    manifest = build_scene_package(problems[:1], reset_states=1, profiles=1, seed=0, out=tmp_path / "pkg")
    (finding,) = manifest.problems[0].profiles[0].findings
    assert finding["code"] == "C003" and finding["fix"] == "fix C003 like so"
    data = json.loads((tmp_path / "pkg" / "manifest.json").read_text())
    assert data["problems"][0]["profiles"][0]["findings"][0]["geoms"] == ["a", "b"]


def test_the_real_linter_runs_from_the_first_reset_state(problems, tmp_path, monkeypatch):
    seen = []
    real = package_module.lint_contact_stability

    def spy(model, **kw):
        seen.append(model.key_qpos[0].copy())
        return real(model, **kw)

    monkeypatch.setattr(package_module, "lint_contact_stability", spy)
    build_scene_package(problems[:1], reset_states=1, profiles=1, seed=0, out=tmp_path / "pkg")
    pkg = load_scene_package(tmp_path / "pkg")
    scene, _ = open_profile(pkg.problems[0], 0)
    restore_reset(scene, pkg.problems[0].profiles[0], 0)
    assert len(seen) == 1 and np.array_equal(seen[0], scene.data.qpos)
    assert scene.model.key_qpos[0].tolist() != seen[0].tolist()  # the scene's own keyframe is untouched


def test_bad_inputs_are_all_reported(problems, tmp_path):
    (tmp_path / "exists").mkdir()
    with pytest.raises(ScenePackageError) as err:
        build_scene_package([tmp_path / "missing.pddl"], reset_states=0, profiles=0, seed=0, out=tmp_path / "exists")
    text = str(err.value)
    for part in ("reset_states: 0", "profiles: 0", "missing.pddl' does not exist", "exists; packages are never"):
        assert part in text


def test_a_problem_without_its_sidecar_is_refused(problems, tmp_path):
    lone = tmp_path / "lone.pddl"
    lone.write_bytes(problems[0].read_bytes())
    with pytest.raises(ScenePackageError, match="no scene sidecar .*lone.scene.json"):
        build_scene_package([lone], reset_states=1, profiles=1, seed=0, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_not_a_package(tmp_path):
    with pytest.raises(ScenePackageError, match="no manifest.json"):
        load_scene_package(tmp_path)
    (tmp_path / "manifest.json").write_text('{"schema": "other/1"}')
    with pytest.raises(ScenePackageError, match="schema 'other/1'; this demoforge reads 'demoforge.scenepkg/1', "
                                                "'demoforge.envpkg/1'"):
        load_scene_package(tmp_path)


def test_a_package_written_under_the_old_schema_name_is_read(package, tmp_path):
    """Packages built when they were called environment packages (schema demoforge.envpkg/1) load as they are."""
    out, manifest, _ = package
    old = tmp_path / "old"
    shutil.copytree(out, old)
    data = json.loads((old / "manifest.json").read_text())
    (old / "manifest.json").write_text(json.dumps({**data, "schema": "demoforge.envpkg/1"}, indent=1, sort_keys=True))
    pkg = load_scene_package(old)
    assert pkg.manifest.schema == "demoforge.envpkg/1"
    assert dataclasses.replace(pkg.manifest, schema=manifest.schema) == manifest
    new = load_scene_package(out)
    assert all((a.states == b.states).all() for p, q in zip(pkg.problems, new.problems, strict=True)
               for a, b in zip(p.profiles, q.profiles, strict=True))


def test_snapshot_continues_like_the_sampled_state(package):
    out, _, _ = package
    problem = load_scene_package(out).problems[0]
    scene, _ = open_profile(problem, 1)
    restore_reset(scene, problem.profiles[1], 1)
    mujoco.mj_step(scene.model, scene.data, 60)
    first = scene.data.qpos.copy()
    restore_reset(scene, problem.profiles[1], 1)
    mujoco.mj_step(scene.model, scene.data, 60)
    assert np.array_equal(first, scene.data.qpos)
