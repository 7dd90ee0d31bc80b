"""Roll-outs and evaluations judge an episode by the task's goal: the expert that `generate`
solves a family with succeeds through `rollout` and `eval` as well, and only an object that
fell below every place a placement predicate can rest it counts as dropped."""

import mujoco
import numpy as np
import pytest

from demoforge.execute import generate
from demoforge.execute.generate import run_problems
from demoforge.execute.problems import start_episode
from demoforge.policy import load_policy, rollout
from demoforge.policy.evaluate import evaluate_from_dataset
from demoforge.symbolic.predicates import fallen
from demoforge.tasks import generate_family, write_tasks

FAMILIES = ("stack_three", "unstack", "pnp", "flip", "rotate")
EPISODES = 2  # per family: every one must succeed, as it does in generate


def _problem(family, tmp_path):
    paths = write_tasks(generate_family(family, count=1, seed=3), tmp_path / "tasks")
    return next(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")


def test_an_unstacked_block_is_lower_than_its_start_but_not_fallen(tmp_path):
    problem, = run_problems([str(_problem("unstack", tmp_path))], domain="blocks", randomization=None)
    start = start_episode(problem, 0, 0)
    scene, binding = start.scene, start.binding
    model, data = scene.model, scene.data
    mujoco.mj_forward(model, data)
    assert not fallen(data, binding, 0.05).any()
    top = int(np.argmax(data.xpos[binding.body, 2]))
    adr = model.jnt_qposadr[model.body_jntadr[binding.body[top]]]
    on_table = binding.table_top_z + binding.half[top, 2]
    assert data.qpos[adr + 2] > on_table + 0.01  # it starts on a stack
    data.qpos[adr + 2] = on_table  # unstacked: lower than it started, resting on the table
    mujoco.mj_forward(model, data)
    assert not fallen(data, binding, 0.05).any()
    data.qpos[adr + 2] = binding.table_top_z - 0.2  # off the table, below its top
    mujoco.mj_forward(model, data)
    assert fallen(data, binding, 0.05).tolist() == [i == top for i in range(len(binding.blocks))]


def _ends(root):
    from demoforge.dataset import open_dataset

    reader = open_dataset(root)
    return [reader.episode(k)["demoforge/end"] for k in range(reader.num_episodes)]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_expert_succeeds_through_rollout_and_eval_as_in_generate(family, tmp_path):
    problem = _problem(family, tmp_path)
    made = generate([problem], tmp_path / "gen", episodes_per_problem=EPISODES, envs=1, seed=0)
    assert made.successes == EPISODES
    ro = rollout(load_policy("expert"), [problem], tmp_path / "r", episodes=EPISODES, envs=2, spec="expert")
    ev = evaluate_from_dataset(load_policy("expert"), made.roots["success"], tmp_path / "e", envs=2, spec="expert")
    for summary, root in ((ro, tmp_path / "r" / "dataset"), (ev, tmp_path / "e" / "dataset")):
        assert summary["overall"]["episodes"] == EPISODES
        assert summary["overall"]["success_rate"] == 1.0, (family, _ends(root))


def test_the_expert_succeeds_from_play_episodes(tmp_path):
    from demoforge.pipeline.play import generate_play

    made = generate_play([_problem("unstack", tmp_path)], tmp_path / "play", episodes_per_problem=EPISODES,
                         goals=2, seed=0)
    assert made.successes == EPISODES
    ev = evaluate_from_dataset(load_policy("expert"), made.roots["success"], tmp_path / "e", envs=2, spec="expert")
    assert ev["overall"]["success_rate"] == 1.0, _ends(tmp_path / "e" / "dataset")
