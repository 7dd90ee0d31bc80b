"""The compiled (vectorized) abstraction agrees with the per-atom evaluators on every state
an expert episode of each family passes through, and on random tilted and stacked poses."""

import mujoco
import numpy as np
import pytest

import demoforge.execute.vecenv as vecenv
from demoforge.execute import generate, load_problems, start_episode
from demoforge.symbolic import abstract
from demoforge.symbolic import predicates as P
from demoforge.symbolic.abstract import abstract_per_atom, abstract_truth
from demoforge.tasks import generate_family, write_tasks


def _problem_paths(tmp_path, family):
    return [p for p in write_tasks(generate_family(family, count=1, seed=3), tmp_path / family)
            if p.suffix == ".pddl" and p.name != "blocks.pddl"]


@pytest.mark.parametrize("family", ["stack_three", "unstack", "pnp", "flip", "rotate"])
def test_compiled_abstraction_matches_per_atom_evaluators_along_an_episode(tmp_path, monkeypatch, family):
    seen = set()

    def checked(model, data, binding):
        fast = abstract(model, data, binding)
        assert fast == abstract_per_atom(model, data, binding), data.time
        seen.add(fast)
        return fast

    monkeypatch.setattr(vecenv, "abstract", checked)
    summary = generate(_problem_paths(tmp_path, family), tmp_path / "run", episodes_per_problem=1, seed=0)
    assert summary.episodes == 1
    assert len(seen) >= 4  # the episode went through several symbolic states
    assert any(any(a[0] == "holding" for a in s) for s in seen)


def test_compiled_abstraction_matches_on_random_poses(tmp_path):
    (problem,) = load_problems(_problem_paths(tmp_path, "stack_three"))
    start = start_episode(problem, 0, 0)
    m, d, b = start.scene.model, start.scene.data, start.binding
    rng = np.random.default_rng(0)
    kinds = set()
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
    assert {"on", "on_table", "face_up", "yaw", "clear"} <= kinds


def test_a_user_evaluator_replaces_the_compiled_one(tmp_path, monkeypatch):
    (problem,) = load_problems(_problem_paths(tmp_path, "stack_three"))
    start = start_episode(problem, 0, 0)
    monkeypatch.setitem(P.EVALUATORS, "clear", lambda geo, b, x: x == "never-a-block")
    atoms = abstract(start.scene.model, start.scene.data, start.binding)
    assert not any(a[0] == "clear" for a in atoms)
