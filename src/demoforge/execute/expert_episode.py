"""The expert's episode in one VecSimEnv slot: plan -> skill -> settle -> verify -> retry -> re-plan.

Each env plans from its own abstract state. A step's skill is planned whole (a
precomputed trajectory) and then indexed tick by tick while all envs step together.
After the skill the env holds its last command for `settle_s` and the abstraction is
compared with the operator's effects applied to the state before the step (adds must
hold, deletes must not, nothing else may change). On a mismatch, or when the skill
cannot be planned, the pre-skill snapshot is restored, the failed attempt's frames are
dropped from the recording and the step is retried with fresh parameters, up to
`max_retries` times; then the expert loop re-plans from the abstraction of the current
(settled) state, up to `max_replans` times. An episode succeeds only if the goal holds
in the final, settled state; otherwise its cause is {skill, step, predicate, kind}.

A caller gives an episode its planner, goal source and hooks (`demoforge.execute.seams`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.errors import PlanningError
from demoforge.execute.problems import ExecuteError, Problem
from demoforge.execute.record import EpisodeRecorder, RunLayout, goal_words
from demoforge.execute.seams import DEFAULT_PLANNER, EpisodeHooks, GoalSource, PlannerFactory, ProblemGoal
from demoforge.execute.vecenv import PddlEpisode, VecSimEnv
from demoforge.fields import option
from demoforge.raw import EpisodeRecord, FailureCause, FailureKind
from demoforge.scenes.scene import REGION_PREFIX
from demoforge.sim import command_toward, restore, snapshot
from demoforge.skills import (
    FLIP_MODES, PROFILES, PUT_DOWN_SPOTS, SkillSettings, choice_problems, half_turn_way, plan_skill, skill_context,
)
from demoforge.tasks import Step, apply, goal_atoms, holds, with_goal
from demoforge.tasks.pddl_text import format_atom


def _profiles() -> tuple[str, ...]:
    return tuple(sorted(PROFILES))


@dataclass(frozen=True)
class ExpertSettings:
    """Recovery limits and timing of the expert loop; the fields with an option are also the
    execute stage's (`execute.config.ExecuteConfig`), the others the library's alone."""

    max_retries: int = option(3, "Attempts of a failed step beyond the first, each from the pre-skill snapshot "
                                 "with new parameters.", range=(0, 100))
    max_replans: int = option(2, "Re-plans per episode, from the current abstraction once a step's attempts are "
                                 "used up.", range=(0, 100))
    settle_s: float = 0.2  # arm held still after each skill before its effects are verified [s]
    max_episode_s: float = option(180.0, "An episode still running after this is a timeout failure [s].",
                                  range=(0.0, 3600.0), low_open=True)
    plan_budget_s: float = 1.0  # time budget of the first planner in the chain per call [s]
    control_hz: float = 60.0  # control and recording rate [Hz]
    motion_profile: str = option("medium", "Expert arm speed: slow, medium or fast (fractions of the robot card's "
                                           "joint velocity, acceleration and jerk limits).", choices=_profiles)
    put_down_spot: str = option("uniform", "Where put-down sets a block on the table: uniform (a free spot drawn "
                                           "from the whole workspace: varied demos) or nearest (the first free spot "
                                           "of a fixed scan around where it was picked: one spot per scene, which "
                                           "a policy can learn; see demoforge.skills.place).", choices=PUT_DOWN_SPOTS)
    flip_mode: str = option("topple", "How flip tips a block: topple (pushed over where it has room to land, else "
                                      "turned in the hand) or in_hand (always turned in the hand: a longer motion, "
                                      "but its demos tolerate the few millimetres a learned policy is off; "
                                      "benchmarks/bench_precision.py).", choices=FLIP_MODES)

    def __post_init__(self):
        problems = [f"{n} must be >= 0, got {getattr(self, n)}" for n in ("max_retries", "max_replans", "settle_s")
                    if not getattr(self, n) >= 0]
        problems += [f"{n} must be > 0, got {getattr(self, n)}" for n in ("max_episode_s", "plan_budget_s", "control_hz")
                     if not getattr(self, n) > 0]
        problems += choice_problems(self.put_down_spot, self.flip_mode)
        if self.motion_profile not in PROFILES:
            problems.append(f"motion_profile {self.motion_profile!r} is not one of {sorted(PROFILES)}")
        if problems:
            raise ExecuteError("invalid ExpertSettings:\n  " + "\n  ".join(problems))


@dataclass(frozen=True, eq=False)
class EpisodeResult:
    """One finished episode, ready for the writer."""

    problem: str  # problem name
    episode: int  # index within the problem
    success: bool  # the goal holds in the final settled state
    columns: dict[str, np.ndarray]  # per-tick features (raw.schema)
    task: str  # task string (the goal in words)
    extra: dict  # per-episode records (`EpisodeRecord.to_extras()`)

    @property
    def failure_kind(self) -> str | None:
        return None if self.success else FailureKind(self.extra["failure"]["kind"]).value


# A skill's own failure kinds mapped onto the episode cause kinds of the schema.
_KIND = {"ik": "ik", "collision": "collision", "timeout": "timeout", "precondition": "physics"}


@dataclass(frozen=True)
class AttemptFailure:
    """Why one attempt of a step failed: an entry of the episode's `retries` record."""

    kind: FailureKind
    message: str  # what happened, for people
    phase: str | None = None  # the skill phase that could not be planned (None: the skill ran)
    predicate: str | None = None  # the atom found wrong after the skill, e.g. "(on a b)", when one was

    def to_json(self) -> dict:
        return {"kind": self.kind.value, "phase": self.phase, "predicate": self.predicate, "message": self.message}


class ExpertEpisode:
    """One env's episode under the expert: planning, skills, verification and recovery.

    It runs `problem` in slot `slot` of `env` (reset to the episode's start), recorded with
    `layout`'s vocabularies under `settings`. `planner` builds its planner (at the start and for
    each next goal); `goals` gives the goals after the problem's own (default: none); `hooks` are
    called after each skill, when a goal is reached, on failure and on the result (see
    `demoforge.execute.seams`).

    Per tick, `command()` gives (arm command, gripper, operator, phase) and, after the env
    stepped, `advance()` moves along the plan; `outcome` is set once the episode ended and
    `result()` then gives it for the writer; `timeout()` ends it as a timeout."""

    def __init__(self, env: VecSimEnv, slot: int, problem: Problem, layout: RunLayout, settings: ExpertSettings, *,
                 planner: PlannerFactory = DEFAULT_PLANNER, goals: GoalSource | None = None,
                 hooks: EpisodeHooks = EpisodeHooks()):
        self.env, self.slot, self.problem, self.layout, self.settings = env, slot, problem, layout, settings
        self.new_planner, self.hooks = planner, hooks
        self.goals: GoalSource = ProblemGoal() if goals is None else goals
        self.goal_number = 1  # the goal being pursued: 1 is the problem's own, then the goal source's
        self.ep: PddlEpisode = env.contexts[slot]
        self.task = self.problem.task
        self.scene = self.ep.scene
        b = self.ep.binding
        regions = {name: tuple(float(v) for v in box) for name, box in zip(b.regions, b.region_box, strict=True)}
        ctx = skill_context(self.scene, regions=regions,
                            settings=SkillSettings(profile=PROFILES[settings.motion_profile],
                                                   put_down_spot=settings.put_down_spot,
                                                   flip_mode=settings.flip_mode))
        # Region slabs are scene props but not blocks: a skill must not treat them as obstacles.
        self.ctx = dataclasses.replace(ctx, props={n: b for n, b in ctx.props.items() if not n.startswith(REGION_PREFIX)})
        self.rng = self.ep.start.rngs["skills"]
        self.rec = EpisodeRecorder(layout, self.scene, self.ep.binding)
        # A planner per episode: the pymimir backend caches the problem it loaded, and a search
        # from a state can depend on which init that was; sharing it across episodes would let
        # the order episodes run in (env and worker counts) change a plan.
        self.planner = planner()
        self.steps: list[Step] = []
        self.k = 0  # index into steps
        self.attempt = 0
        self.replans: list[dict] = []
        self.retries: list[dict] = []
        self.executed: list[dict] = []
        self.plan = None  # SkillPlan being executed
        self._q32 = None  # (plan, its targets and gripper commands rounded to float32)
        self.t = 0  # tick within plan (then settle ticks)
        self.pre = None  # (snapshot, frames, atoms) before the current step
        self.op = -1
        self.outcome: tuple[bool, FailureCause | None] | None = None
        self.settle_ticks = round(settings.settle_s * settings.control_hz)
        self.hold = (self.scene.data.ctrl[self.scene.robot.arm_actuators].copy(), self._gripper_now())
        # skills plan joint targets; under another law each tick's target becomes that law's command
        self.law = layout.law
        self._fk = None if self.law.mode == "joint_position" else mujoco.MjData(self.scene.model)
        self._begin()

    def _gripper_now(self) -> float:
        r = self.scene.robot
        c_open, c_closed = r.gripper_ctrl
        return float(np.clip((self.scene.data.ctrl[r.gripper_actuator] - c_open) / (c_closed - c_open), 0.0, 1.0))

    # -- planning ----------------------------------------------------------------------
    def _begin(self) -> None:
        atoms = self.ep.atoms()
        if not self._make_plan(atoms, why="initial plan"):
            return
        self._start_step()

    def _make_plan(self, atoms: frozenset, *, why: str) -> bool:
        result = self.planner.plan(self.task, state=atoms, time_budget_s=self.settings.plan_budget_s)
        if not result.solved:
            self._fail(None, self.k, None, "planning", f"{why}: planner {result.planner} says {result.status.value}: "
                       f"{result.detail}")
            return False
        self.steps = self.steps[: self.k] + list(result.plan)
        if not self.steps[self.k:]:
            self._finish_if_goal(atoms)
            return False
        return True

    def _start_step(self) -> None:
        """Plan the skill of step k from the current state (first attempt or a retry)."""
        while True:
            if self.pre is None:
                self.pre = (snapshot(self.scene.model, self.scene.data), self.rec.length, self.ep.atoms())
                self._choose_half_turn_way(self.pre[2])
            step = self.steps[self.k]
            plan = plan_skill(self.ctx, step.action, step.args, self.rng)
            if plan.ok:
                self.plan, self.t = plan, 0
                self.op = self.layout.operator_index(step.action)
                return
            cause = AttemptFailure(FailureKind(_KIND.get(plan.failure.kind, "physics")),
                                   f"{plan.failure.kind}: {plan.failure.message}", phase=plan.failure.phase)
            if not self._note_failure(step, cause):
                return

    def _choose_half_turn_way(self, atoms: frozenset) -> None:
        """Steps k and k+1 turned the other way round when they are a half turn the wrist makes
        in one grasp only that way (`skills.half_turn_way`) and the plan reaches the same state."""
        pair = self.steps[self.k: self.k + 2]
        if len(pair) < 2:
            return
        way = half_turn_way(self.ctx, *((s.action, s.args) for s in pair))
        if way is None:
            return
        other = [Step(s.action, args) for s, args in zip(pair, way, strict=True)]
        try:
            same = apply(self.task, apply(self.task, atoms, other[0]), other[1]) == \
                apply(self.task, apply(self.task, atoms, pair[0]), pair[1])
        except PlanningError:
            return
        if same:
            self.steps[self.k: self.k + 2] = other

    def _note_failure(self, step: Step, cause: AttemptFailure) -> bool:
        """Record a failed attempt; True when step k is to be attempted again (state restored)."""
        self._retry_record(step)["attempts"].append(cause.to_json())
        self.attempt += 1
        snap, frames, _ = self.pre
        if self.attempt <= self.settings.max_retries:
            restore(self.scene.model, self.scene.data, snap)
            self.ep.touch()
            self.rec.truncate(frames)
            return True
        if len(self.replans) < self.settings.max_replans:
            atoms = self.ep.atoms()
            self.replans.append({"step": self.k, "why": f"{step} failed {self.attempt} time(s); last: {cause.message}",
                                 "state": sorted(format_atom(a) for a in atoms if a[0] in self.task.fluent_predicates)})
            self.attempt, self.pre = 0, None
            if self._make_plan(atoms, why=f"re-plan {len(self.replans)}"):
                return True
            return False
        self._fail(step, self.k, cause.predicate, cause.kind, cause.message)
        return False

    def _retry_record(self, step: Step) -> dict:
        if not self.retries or self.retries[-1]["step"] != self.k or self.retries[-1]["operator"] != str(step) \
                or self.retries[-1]["replan"] != len(self.replans):
            self.retries.append({"step": self.k, "operator": str(step), "replan": len(self.replans), "attempts": []})
        return self.retries[-1]

    # -- per tick ----------------------------------------------------------------------
    def command(self) -> tuple[np.ndarray, float, int, int]:
        plan = self.plan
        if plan is not None and self.t < plan.ticks:
            if self._q32 is None or self._q32[0] is not plan:
                # Step exactly what is recorded (raw_command is float32), so replay is bit-exact.
                self._q32 = (plan, plan.q.astype(np.float32).astype(np.float64),
                             plan.gripper.astype(np.float32).astype(np.float64))
            q = self._q32[1][self.t]
            g = float(self._q32[2][self.t])
            self.hold = (q, g)
            return self.arm_command(q), g, self.op, int(plan.phase[self.t])
        last = int(plan.phase[-1]) if plan is not None and plan.ticks else -1
        return self.arm_command(self.hold[0]), self.hold[1], self.op, last

    def arm_command(self, q: np.ndarray) -> np.ndarray:
        """The command asking for joint targets `q` under the run's law. A cartesian_delta command
        is the TCP delta from the pose of the targets in force to the pose of `q` (closed on the
        controller's own targets, so diff-IK drift does not accumulate over a skill)."""
        if self._fk is None:
            return q
        cmd = command_toward(self.scene.model, self.scene.data, self.scene.robot, self.law, q, self._fk)
        return cmd.astype(np.float32).astype(np.float64)  # step what is recorded (float32): replay is bit-exact

    def advance(self) -> None:
        """After a tick: move along the plan; after the settle, verify."""
        if self.plan is None:
            return
        self.t += 1
        if self.t < self.plan.ticks + self.settle_ticks:
            return
        step = self.steps[self.k]
        if self.hooks.after_skill is not None:
            self.hooks.after_skill(self, step, self.attempt)
            self.ep.touch()
        cause = self._verify(step)
        if cause is None:
            self.executed.append({"step": self.k, "operator": step.action, "args": list(step.args),
                                  "params": self.plan.params, "attempts": self.attempt + 1,
                                  "ticks": [self.pre[1], self.rec.length]})
            self.k, self.attempt, self.pre, self.plan = self.k + 1, 0, None, None
            if self.k == len(self.steps):
                self._finish_if_goal(self.ep.atoms())
            else:
                self._start_step()
            return
        self.plan = None
        if self._note_failure(step, cause):
            self._start_step()

    def _verify(self, step: Step) -> AttemptFailure | None:
        actual = self.ep.atoms()
        before = self.pre[2]
        try:
            expected = apply(self.task, before, step)
        except PlanningError as exc:
            return AttemptFailure(FailureKind.PHYSICS, f"precondition: {exc}")
        adds, dels = expected - before, before - expected
        fluent = self.task.fluent_predicates
        missing = sorted(adds - actual)
        lingering = sorted(dels & actual)
        other = sorted(a for a in (actual ^ expected) if a[0] in fluent)
        for kind, atoms in (("add effect missing", missing), ("delete effect still holds", lingering),
                            ("unexpected change", other)):
            if atoms:
                message = f"{step}: {kind}: " + " ".join(format_atom(a) for a in atoms)
                return AttemptFailure(FailureKind.PHYSICS, message, predicate=format_atom(atoms[0]))
        return None

    def _finish_if_goal(self, atoms: frozenset) -> None:
        if holds(self.task, self.task.goal, atoms):
            if self.hooks.on_goal_reached is not None:
                self.hooks.on_goal_reached(self, atoms)
            goal = self.goals.next_goal(self, atoms)
            if not goal:
                self.outcome = (True, None)
                return
            self.goal_number += 1
            self.task = with_goal(self.task, goal)
            self.planner = self.new_planner()  # a fresh cache: the next plans do not depend on the ones before
            self.replans = []
            if self._make_plan(atoms, why=f"{self.goals.name} goal {self.goal_number}"):
                self._start_step()
            return
        step = self.steps[-1] if self.steps else None
        if len(self.replans) < self.settings.max_replans:
            self.replans.append({"step": self.k, "why": "the plan ended without the goal holding",
                                 "state": sorted(format_atom(a) for a in atoms if a[0] in self.task.fluent_predicates)})
            if self._make_plan(atoms, why=f"re-plan {len(self.replans)}"):
                self._start_step()
            return
        missing = [format_atom(a) for a in goal_atoms(self.task) if a not in atoms]
        self._fail(step, self.k, missing[0] if missing else None, "physics", "the goal does not hold at the end")

    def _fail(self, step: Step | None, k: int, predicate: str | None, kind: FailureKind | str, message: str) -> None:
        self.plan = None
        cause = FailureCause(FailureKind(kind), message, None if step is None else step.action,
                             None if step is None else tuple(step.args), k, predicate)
        self.outcome = (False, cause)
        if self.hooks.on_failure is not None:
            self.hooks.on_failure(self, cause)

    def timeout(self) -> None:
        step = self.steps[self.k] if self.k < len(self.steps) else None
        self._fail(step, self.k, None, "timeout", f"the episode ran past {self.settings.max_episode_s} s")

    def result(self) -> EpisodeResult:
        ok, failure = self.outcome
        if self.rec.length == 0:  # failed before any tick: one frame of the reset state
            q, g, _, _ = self.command()
            self.rec.record(self.ep.atoms(), q, g, -1, -1)
        start = self.ep.start.records
        record = EpisodeRecord(
            self.problem.name, start["seed"], start["scene_draw"], start["env_package"], start["reset_state"],
            randomization=self.env.randomization_draws[self.slot],
            goal=tuple(format_atom(a) for a in goal_atoms(self.task)), plan=tuple(self.executed),
            retries=tuple(self.retries), replans={"count": len(self.replans), "why": self.replans},
            outcome="success" if ok else "failure", failure=failure, sim_state_width=self.rec.state_width)
        result = EpisodeResult(self.problem.name, self.ep.start.episode, ok, self.rec.columns(),
                               goal_words(self.task), record.to_extras())
        return result if self.hooks.on_result is None else self.hooks.on_result(self, result)
