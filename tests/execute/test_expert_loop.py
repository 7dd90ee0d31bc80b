"""The expert loop: verification catches an injected failure, retries restore the snapshot,
a forced re-plan, the goal check and the failure split's cause record."""

import json
import re

import mujoco
import numpy as np
import pytest

from demoforge.dataset import check_dataset, open_dataset
from demoforge.execute import ExpertSettings, generate, load_problems, run_layout
from demoforge.replay import episode_scene
from demoforge.sim import control_step, restore, snapshot, state_size
from demoforge.symbolic import bind_symbols, abstract
from demoforge.tasks import holds

from .conftest import nudge, problem_files


class Nudger:
    """After the place-in-region skill settles, push the block out of its region (`times` times)."""

    def __init__(self, times: int):
        self.times, self.calls = times, []

    def __call__(self, i, ep, step, attempt):
        if step.action == "place-in-region" and len(self.calls) < self.times:
            self.calls.append((step.args, attempt))
            nudge(ep.scene, step.args[0], 0.0, -0.2 if step.args[1] == "left" else 0.2)


def _extras(root, i=0) -> dict:
    row = open_dataset(root).episode(i)
    return {k.removeprefix("demoforge/"): json.loads(v) for k, v in row.items()
            if k.startswith("demoforge/") and isinstance(v, str)}


def _replays_exactly(root, i: int):
    """Rebuild the episode's model; from each recorded state, apply the controls the next
    recorded state holds and step one tick: the next recorded state must come out bit for
    bit (and with it every object pose). Returns the scene after the last recorded tick."""
    scene = episode_scene(root, i)
    m, d = scene.model, scene.data
    cols = open_dataset(root).read_episode(i)
    n = state_size(m)
    states = cols["sim.state"][:, :n]
    substeps = round(1 / (60 * m.opt.timestep))
    for t in range(len(states) - 1):
        restore(m, d, states[t + 1])
        ctrl, poses = d.ctrl.copy(), d.xpos.copy()
        restore(m, d, states[t])
        d.ctrl[:] = ctrl
        mujoco.mj_step(m, d, substeps)
        assert np.array_equal(snapshot(m, d), states[t + 1]), f"tick {t}"
        mujoco.mj_forward(m, d)
        assert np.array_equal(d.xpos, poses), f"tick {t}"
        # the recorded action is the command of the tick, to float32 precision
        np.testing.assert_allclose(ctrl[scene.robot.arm_actuators], cols["action"][t, :-1], rtol=0, atol=1e-6)
    restore(m, d, states[-1])
    law = scene.robot.card.controller
    control_step(scene, law, cols["action"][-1, :-1].astype(np.float64), float(cols["action"][-1, -1]), substeps)
    return scene


def test_injected_failure_is_caught_and_the_retry_restores_the_snapshot(pnp, tmp_path):
    hook = Nudger(times=1)
    summary = generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, seed=0, after_skill=hook)
    assert hook.calls and hook.calls[0][1] == 0
    assert summary.successes == 1 and summary.roots["failure"] is None
    root = summary.roots["success"]
    assert check_dataset(root) == []
    ex = _extras(root)
    (retry,) = ex["retries"]
    block, region = hook.calls[0][0]
    assert retry["step"] == 1 and retry["attempts"][0]["kind"] == "physics"
    assert retry["attempts"][0]["predicate"] == f"(in_region {block} {region})"
    assert [p["attempts"] for p in ex["plan"]] == [1, 2]
    # the failed attempt's ticks were dropped with the restore: the recording is one continuous
    # trajectory, replayable tick by tick, and it ends with the goal holding
    scene = _replays_exactly(root, 0)
    (problem,) = load_problems(pnp[:1])
    settle_ticks = round(ExpertSettings().settle_s * 60)
    mujoco.mj_step(scene.model, scene.data, settle_ticks * 10)
    atoms = abstract(scene.model, scene.data, bind_symbols(scene, problem.task, problem.params))
    assert holds(problem.task, problem.task.goal, atoms)


def test_exhausted_retries_force_a_replan(pnp, tmp_path):
    hook = Nudger(times=2)
    summary = generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, seed=0, after_skill=hook,
                       settings=ExpertSettings(max_retries=1, max_replans=1))
    assert summary.successes == 1
    ex = _extras(summary.roots["success"])
    assert ex["replans"]["count"] == 1
    assert [p["operator"] for p in ex["plan"]] == ["pick-up", "pick-up", "place-in-region"]
    assert ex["outcome"] == "success" and ex["failure"] is None


def test_a_goal_that_does_not_hold_is_a_failure_with_its_cause(pnp, tmp_path):
    hook = Nudger(times=10)
    summary = generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, seed=0, after_skill=hook,
                       settings=ExpertSettings(max_retries=0, max_replans=0))
    assert summary.successes == 0 and summary.roots["success"] is None
    assert summary.failure_kinds() == {"physics": 1}
    root = summary.roots["failure"]
    assert check_dataset(root) == []
    ex = _extras(root)
    block, region = hook.calls[0][0]
    assert ex["outcome"] == "failure"
    assert {k: ex["failure"][k] for k in ("skill", "step", "predicate", "kind")} == {
        "skill": "place-in-region", "step": 1, "predicate": f"(in_region {block} {region})", "kind": "physics"}
    assert ex["goal"] == [f"(in_region {block} {region})"]


def test_run_layout_names_atoms_and_vocab(pnp):
    layout = run_layout(load_problems(pnp))
    assert list(layout.atoms) == sorted(layout.atoms)
    assert "place-in-region" in layout.operators and layout.phases[0] == "approach"


def test_a_run_mixing_state_sizes_takes_the_widest_and_refuses_a_wider_episode(pnp, tmp_path):
    from demoforge.execute import EpisodeRecorder, ExecuteError
    from demoforge.execute.problems import start_layout_scene
    from demoforge.sim import state_size

    from .conftest import problem_files

    problems = load_problems(pnp[:1] + problem_files(tmp_path / "stack", "stack_three", 1))
    sizes = [state_size(start_layout_scene(p)[0].model) for p in problems]
    assert sizes[0] < sizes[1] and run_layout(problems).n_state == sizes[1]
    narrow = run_layout(problems[:1])
    rec = EpisodeRecorder(narrow, start_layout_scene(problems[1])[0])
    rec.record(frozenset(), np.zeros(7), 0.0, -1, -1)
    with pytest.raises(ExecuteError, match=f"{sizes[1]} values, more than the run's sim.state width {sizes[0]}"):
        rec.columns()


def test_motion_profile_sets_the_expert_speed_and_unknown_ones_are_refused(pnp, tmp_path):
    lengths = {}
    for name in ("slow", "fast"):
        summary = generate([str(pnp[0])], tmp_path / name, episodes_per_problem=1, seed=2,
                           settings=ExpertSettings(motion_profile=name))
        assert summary.successes == 1
        lengths[name] = open_dataset(summary.roots["success"]).num_frames
    assert lengths["slow"] > 1.3 * lengths["fast"]
    with pytest.raises(Exception, match=r"motion_profile 'warp' is not one of \['fast', 'medium', 'slow'\]"):
        ExpertSettings(motion_profile="warp")


def test_a_half_turn_turns_the_wrist_half_a_turn_without_a_regrasp(tmp_path):
    """The planner cannot tell the two ways of a half turn apart; from the home pose only one
    keeps the wrist's last joint in range, and the runner takes it (skills.half_turn_way):
    no episode's wrist turns more than the half turn and its approaches (a regrasp costs a
    quarter turn more)."""
    paths = problem_files(tmp_path / "tasks", "rotate", 6, seed=12)
    turns = {p: [int(a) for a in re.findall(r"\(yaw \w+ yaw(\d+)\)", p.read_text())] for p in paths}
    half = [p for p, (start, end) in turns.items() if abs(start - end) == 180][:3]
    assert len(half) == 3
    summary = generate(half, tmp_path / "run", episodes_per_problem=1, seed=0)
    assert summary.successes == 3
    reader = open_dataset(summary.roots["success"])
    for i in reader.episode_indices:
        assert [p["operator"] for p in _extras(summary.roots["success"], i)["plan"]] == ["rotate", "rotate"]
        wrist = reader.read_episode(i, ["action"])["action"][:, -2].astype(float)
        assert np.degrees(np.abs(np.diff(wrist)).sum()) < 215, i


def test_the_expert_and_its_skills_refuse_an_unknown_choice_with_the_same_words():
    """ExpertSettings checks put_down_spot and flip_mode before any worker starts, with the words
    SkillSettings would use later; both name the field, the value and the choices."""
    from demoforge.execute import ExecuteError
    from demoforge.skills import SkillError, SkillSettings

    for field, value, choices in (("put_down_spot", "corner", "uniform, nearest"),
                                  ("flip_mode", "roll", "topple, in_hand")):
        words = f"{field} {value!r} is not one of {choices}"
        with pytest.raises(ExecuteError, match=re.escape(words)):
            ExpertSettings(**{field: value})
        with pytest.raises(SkillError, match=re.escape(words)):
            SkillSettings(**{field: value})
