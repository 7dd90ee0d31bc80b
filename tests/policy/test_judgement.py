"""Roll-outs and evaluations judge an episode by the task's goal: the expert that `generate`
solves a family with succeeds through `rollout` and `eval` as well, only an object that fell
below every place a placement predicate can rest it counts as dropped, and a goal reached with a
block knocked over onto another face is disturbed, not a success."""

import json
import re

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


def _knock_over(ctx, upside_down: str | None):
    """Every block of `ctx`'s scene set down on the table side by side at rest, `upside_down` on its top face."""
    scene, binding = ctx.scene, ctx.binding
    model, data = scene.model, scene.data
    for k, body in enumerate(binding.body):
        name = binding.blocks[k]
        joint = model.body_jntadr[body]
        q, v = model.jnt_qposadr[joint], model.jnt_dofadr[joint]
        data.qpos[q:q + 3] = [0.45, -0.15 + 0.15 * k, binding.table_top_z + binding.half[k, 2] + 0.001]
        data.qpos[q + 3:q + 7] = [0, 1, 0, 0] if name == upside_down else [1, 0, 0, 0]
        data.qvel[v:v + 6] = 0
    mujoco.mj_forward(model, data)


def test_a_goal_reached_by_knocking_blocks_over_is_disturbed_not_a_success(tmp_path):
    """Unstack's goal (every block on the table) also holds when the tower is knocked down; a block
    that lands on another face than it started on, which the goal does not ask, makes the episode
    "disturbed": ended, failed, in VecSimEnv (rollout, eval) and in FamilyEnv (the lerobot plugin).
    Set down upright, the same blocks are a success."""
    from demoforge.execute.vecenv import VecSimEnv, pddl_task
    from demoforge.gym import FamilyEnv, FamilyEnvConfig
    from demoforge.tasks import disturbed

    problem, = run_problems([str(_problem("unstack", tmp_path))], domain="blocks", randomization=None)
    blocks = sorted(o for o, _ in problem.task.objects)
    for upside_down in (None, blocks[1]):
        env = VecSimEnv([pddl_task(problem)], num_envs=1, episodes=1, seed=0)
        env.reset()
        ctx = env.contexts[0]
        start = ctx.atoms()
        assert ("face_up", blocks[1], "pz") in start
        _knock_over(ctx, upside_down)
        for _ in range(30):
            hold = np.append(ctx.scene.data.qpos[ctx.scene.robot.arm_qpos], 0.0)[None]
            _, _, terminated, _, info = env.step(hold)
            if info["done"][0]:
                break
        assert info["done"][0] and terminated[0]
        assert bool(info["final_success"][0]) is (upside_down is None)
        assert bool(info["final_spoiled"][0]) is (upside_down is not None)
        end = info["final_context"][0].atoms()
        assert disturbed(problem.task, start, end) == (() if upside_down is None else (("face_up", blocks[1], "pz"),))

    family = FamilyEnv(FamilyEnvConfig(task="unstack", split="test"))
    obs, info = family.reset(seed=0)
    _knock_over(family.ctx, sorted(family.ctx.binding.blocks)[0])
    for _ in range(30):
        obs, _, terminated, info = family.step(obs["agent_pos"].astype(float))
        if terminated:
            break
    assert terminated and info["disturbed"] and not info["is_success"] and info["partial_success"] == 1.0


def test_disturbed_spares_what_the_goal_asks_and_what_cannot_be_read(tmp_path):
    """A flip goal turns its block: that block's new face is no disturbance, the other block's is;
    a block that shows no face now (held, tilted) is not judged."""
    from demoforge.tasks import disturbed, load_task, static_facts

    init = " ".join(f"({' '.join(a)})" for a in static_facts()) + \
        " (hand_empty) (on_table a) (on_table b) (clear a) (clear b) (face_up a pz) (face_up b pz)"
    path = tmp_path / "p.pddl"
    path.write_text(f"(define (problem p) (:domain demoforge-blocks) (:objects a b - block) (:init {init}) "
                    "(:goal (and (face_up a px))))")
    task = load_task(path, "blocks")
    start = frozenset({("on_table", "a"), ("on_table", "b"), ("face_up", "a", "pz"), ("face_up", "b", "pz")})
    turned = start - {("face_up", "a", "pz")} | {("face_up", "a", "px")}
    assert disturbed(task, start, turned) == ()
    knocked = turned - {("face_up", "b", "pz")} | {("face_up", "b", "nx")}
    assert disturbed(task, start, knocked) == (("face_up", "b", "pz"),)
    assert disturbed(task, start, turned - {("face_up", "b", "pz")}) == ()  # b shows no face: not judged


def test_the_rollout_driver_ends_a_knocked_over_goal_as_disturbed_naming_the_block(tmp_path, monkeypatch):
    """Through the roll-out driver: when the tower is laid on the table after the first action, one
    block upside down, the episode ends at once as `disturbed`, failed, its failure naming the atom
    that no longer holds (a stand-in for a policy that sweeps the tower off its base)."""
    from demoforge.dataset import open_dataset
    from demoforge.policy import driver as driver_module
    from demoforge.policy.settings import free_bodies

    def knock(scene, assist, tick):
        if tick != 0:
            return
        model, data = scene.model, scene.data
        bodies, z_adr, _ = free_bodies(model)
        low = float(min(data.qpos[z_adr]))  # the bottom block rests on the table
        for k, adr in enumerate(z_adr - 2):
            data.qpos[adr:adr + 3] = [0.45, -0.15 + 0.15 * k, low + 0.001]
            data.qpos[adr + 3:adr + 7] = [0, 1, 0, 0] if k == 1 else [1, 0, 0, 0]
        data.qvel[:] = 0
        mujoco.mj_forward(model, data)

    monkeypatch.setattr(driver_module, "apply_assist", knock)
    problem = _problem("unstack", tmp_path)
    summary = rollout(load_policy("expert"), [problem], tmp_path / "r", episodes=1, envs=1, spec="expert")
    assert summary["overall"]["success_rate"] == 0.0
    record = {k: json.loads(v) for k, v in open_dataset(tmp_path / "r" / "dataset").episode(0).items()
              if k.startswith("demoforge/")}
    assert record["demoforge/end"] == "disturbed" and record["demoforge/success"] is False
    assert record["demoforge/partial_success"] == 1.0  # every goal atom holds: the judgement, not the goal, fails it
    assert record["demoforge/failure"]["kind"] == "physics"
    assert re.search(r"the goal holds, but \(face_up \w+ pz\) no longer holds", record["demoforge/failure"]["message"])
