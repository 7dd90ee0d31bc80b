"""The compiled (vectorized) abstraction agrees with the per-atom evaluators on every state
an expert episode of each family passes through, and on random tilted and stacked poses."""

import importlib

import mujoco
import numpy as np
import pytest

from demoforge.execute import EpisodeRecorder, generate, load_problems, start_episode
from demoforge.symbolic import abstract
from demoforge.symbolic import predicates as P
from demoforge.symbolic.abstract import BLOCKS_PREDICATES, abstract_per_atom, abstract_truth, truth_of_samples
from demoforge.tasks import generate_family, write_tasks
from demoforge.tasks.package_records import Predicate


def _problem_paths(tmp_path, family):
    return [p for p in write_tasks(generate_family(family, count=1, seed=3), tmp_path / family)
            if p.suffix == ".pddl" and p.name != "blocks.pddl"]


@pytest.mark.parametrize("family", ["stack_three", "unstack", "pnp", "flip", "rotate"])
def test_recorded_symbolic_state_matches_per_atom_evaluators_along_an_episode(tmp_path, monkeypatch, family):
    """The runner samples each tick and abstracts the episode in one batch: every row equals the
    per-atom evaluation of that tick's live state."""
    expected, seen = [], set()
    record, columns = EpisodeRecorder.record, EpisodeRecorder.columns

    def checked_record(self, atoms, *args):
        m, d = self.scene.model, self.scene.data
        truth = atoms if atoms is not None else abstract_per_atom(m, d, self.binding)
        expected.append((self, self.length, self._symbols(truth)))
        seen.add(truth)
        return record(self, atoms, *args)

    def checked_columns(self):
        out = columns(self)
        rows = {t: vec for rec, t, vec in expected if rec is self and t < self.length}
        assert len(rows) == self.length
        for t, vec in rows.items():
            assert np.array_equal(out["symbolic.state"][t], vec), t
        return out

    monkeypatch.setattr(EpisodeRecorder, "record", checked_record)
    monkeypatch.setattr(EpisodeRecorder, "columns", checked_columns)
    summary = generate(_problem_paths(tmp_path, family), tmp_path / "run", episodes_per_problem=1, seed=0)
    assert summary.episodes == 1
    assert len(seen) >= 4  # the episode went through several symbolic states
    if family == "flip":  # tipped over by the closed fingers, never held: tilted on the way, no face up
        assert any(not any(a[0] == "face_up" for a in s) for s in seen)
    else:
        assert any(any(a[0] == "holding" for a in s) for s in seen)


def test_compiled_abstraction_matches_on_random_poses(tmp_path):
    (problem,) = load_problems(_problem_paths(tmp_path, "stack_three"))
    start = start_episode(problem, 0, 0)
    m, d, b = start.scene.model, start.scene.data, start.binding
    rng = np.random.default_rng(0)
    kinds, samples, truths = set(), [], []
    for _ in range(300):
        below = None
        for k, body in enumerate(b.body):
            adr = m.jnt_qposadr[m.body_jntadr[body]]
            if below is not None and rng.random() < 0.6:  # stack on the previous block, maybe off-centre
                z = d.qpos[below + 2] + b.half[k - 1, 2] + b.half[k, 2]
                d.qpos[adr:adr + 3] = d.qpos[below:below + 2].tolist() + [z]
                d.qpos[adr:adr + 2] += rng.normal(0, 0.01, 2)
            else:
                d.qpos[adr:adr + 3] = [rng.uniform(0.3, 0.7), rng.uniform(-0.3, 0.3), b.table_top_z + b.half[k, 2]]
            r = rng.random()
            q = rng.normal(size=4) if r < 0.3 else np.eye(4)[rng.integers(4)] + rng.normal(0, 0.05, 4) if r < 0.6 \
                else np.eye(4)[0]
            d.qpos[adr + 3:adr + 7] = q / np.linalg.norm(q)
            dof = m.jnt_dofadr[m.body_jntadr[body]]
            d.qvel[dof:dof + 6] = rng.normal(0, 0.03 if rng.random() < 0.5 else 0.001, 6)
            below = adr
        mujoco.mj_forward(m, d)
        fast = abstract(m, d, b)
        assert fast == abstract_per_atom(m, d, b)
        truth = abstract_truth(m, d, b)
        assert {a for a, t in zip(b.candidates, truth) if t} == fast - b.static_atoms
        kinds.update(a[0] for a in fast)
        samples.append(P.sample(m, d, b))
        truths.append(truth)
    assert {"on", "on_table", "face_up", "yaw", "clear"} <= kinds
    # the same states abstracted in one batch
    assert np.array_equal(truth_of_samples(m, b, P.stack_samples(samples)), np.stack(truths))


def test_a_predicate_without_vectorized_form_is_asked_atom_by_atom(tmp_path, monkeypatch):
    (problem,) = load_problems(_problem_paths(tmp_path, "stack_three"))
    start = start_episode(problem, 0, 0)
    monkeypatch.setitem(BLOCKS_PREDICATES, "clear", Predicate(("block",), lambda geo, b, x: x == "never-a-block"))
    # the binding was compiled with the vectorized `clear` while the reset state was sampled
    importlib.import_module("demoforge.symbolic.abstract")._PROGRAMS.pop(start.binding)
    atoms = abstract(start.scene.model, start.scene.data, start.binding)
    assert not any(a[0] == "clear" for a in atoms)
    m, d, b = start.scene.model, start.scene.data, start.binding
    both = truth_of_samples(m, b, P.stack_samples([P.sample(m, d, b)] * 2))
    clear = [k for k, a in enumerate(b.candidates) if a[0] == "clear"]
    assert clear and not both[:, clear].any() and both.any()


def test_an_abstracted_binding_is_freed_with_its_scene():
    """The abstraction caches what it computes per binding, holding the binding weakly: once the
    episode drops its scene and binding, both (and the model, tens of MB for a meshed arm) go."""
    import gc
    import weakref

    from demoforge.symbolic.abstract import _PROGRAMS

    from .scenes import scene_for

    scene, binding = scene_for()
    abstract(scene.model, scene.data, binding)
    assert binding in _PROGRAMS
    gone = weakref.ref(binding)
    del scene, binding
    gc.collect()
    assert gone() is None
