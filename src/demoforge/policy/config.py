"""The policy commands' config records: one per command (`demoforge rollout`, `eval`, `relabel`,
`replay`), whose fields are the command's options (`demoforge.fields`); roll-out and evaluation
take what they share (`PolicyLoop`: the policy, the episode limits and metric parameters, the
workers) in as their own. The CLI builds the library calls' arguments from them:

    config = RolloutConfig(loop=PolicyLoop(policy="expert", max_ticks=600), episodes=4)
    rollout(config.loop.policy, problems, "out/r", episodes=config.episodes, settings=config.loop.settings(), ...)

They are not stages of `demoforge run`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from demoforge.errors import DemoforgeError
from demoforge.fields import MAX_ENVS, MAX_EPISODES, MAX_SEED, nested, option
from demoforge.policy.hdf5 import FORMATS
from demoforge.policy.looks import RECORDED, EvalLook, eval_look
from demoforge.policy.protocol import PolicyError
from demoforge.policy.settings import Assist, RolloutSettings
from demoforge.render.config import episodes_value
from demoforge.render.look import parse_image_size
from demoforge.tasks.package import task_packages_option

POLICY_HELP = ("Policy spec: expert | PATH.onnx | onnx:PATH | replay:DATASET | module:factory | file.py:factory "
               "(the factory returns an object with spaces, reset(slot, start), act(observations)).")
MAX_TICKS = 10_000_000  # bound of every tick count: far beyond any episode, small enough to size nothing huge
# Each worker process loads its own copy of the policy (an ONNX or torch model can be gigabytes), so
# the count is the user's choice: no 'auto' (one per core) as the stages have.
MAX_POLICY_WORKERS = 256


def _policy_args(value: tuple[str, ...], where: str) -> tuple[str, ...]:
    """--policy-arg items checked as KEY=VALUE with KEY an identifier and VALUE YAML."""
    problems = []
    for pair in value:
        key, sep, text = pair.partition("=")
        if not sep or not key.isidentifier():
            problems.append(f"{pair!r}: expected KEY=VALUE with KEY a Python identifier")
            continue
        try:
            yaml.safe_load(text)
        except yaml.YAMLError as exc:
            problems.append(f"{pair!r}: VALUE {text!r} is not YAML ({exc.__class__.__name__})")
    if problems:
        raise PolicyError("\n".join(problems))
    return value


def _episodes_option(help: str):
    return option(None, f"{help}, e.g. 0,2,5-7 [default: all].", kind="str", normalize=episodes_value,
                  metavar="RANGES")


def _seed_option(help: str):
    return option(0, help, range=(0, MAX_SEED))


@dataclass(frozen=True)
class PolicyLoop:
    """What a roll-out and an evaluation share: the policy and its factory's arguments, how many
    run at once, the episode limits and metric parameters (`settings()`), the camera image size."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the scenes rebuilt may be a package's
    policy: str | None = option(None, POLICY_HELP, kind="str", optional=False, stage_required=True)
    policy_arg: tuple[str, ...] = option((), "KEY=VALUE (VALUE read as YAML) passed to the policy's factory "
                                             "(module:factory, expert).", metavar="KEY=VALUE",
                                         keyed=True, normalize=_policy_args)
    envs: int = option(1, "Environments stepped together per worker.", range=(1, MAX_ENVS))
    max_ticks: int = option(RolloutSettings.max_ticks, "Ticks before an episode is truncated.",
                            range=(1, MAX_TICKS))
    warmup: int = option(RolloutSettings.warmup_ticks, "Ticks excluded from alive_ratio (at least --assist-steps); "
                                                       "below the horizon.", range=(0, MAX_TICKS))
    reference_ticks: int | None = option(None, "alive_ratio horizon [ticks] [default: --max-ticks].", kind="int",
                                         range=(1, MAX_TICKS))
    assist_floor: float | None = option(None, "Enable the object assist (an upward force of a fraction of each "
                                              "object's weight): it holds at 1.0 for --assist-steps ticks, then DROPS "
                                              "TO this floor for the rest of the episode. The floor is the value it "
                                              "ends at, not the start. Recorded per episode.", kind="float",
                                        range=(0.0, 1.0))
    assist_steps: int = option(0, "Ticks the assist holds at 1.0 before dropping to the floor (with "
                                  "--assist-floor).", range=(0, MAX_TICKS))
    like: str | None = option(None, "A baked dataset: the policy acts under its convention and rate "
                                    "(meta/bake.json), executed on the 60 Hz controller as the lerobot env does.",
                              kind="str", metavar="BAKED")
    image_size: str | None = option(None, "Camera images WIDTHxHEIGHT [px] (or one number) under --look [default: "
                                          "the look's size]. A policy that asks for another size is refused.",
                                    kind="str", metavar="WxH")
    workers: int = option(1, "Processes, each loading the policy and running its share of the episodes on --envs "
                             "envs; the output does not depend on it.", range=(1, MAX_POLICY_WORKERS))

    def settings(self) -> RolloutSettings:
        assist = None if self.assist_floor is None else Assist(floor=self.assist_floor, steps=self.assist_steps)
        return RolloutSettings(max_ticks=self.max_ticks, warmup_ticks=self.warmup,
                               reference_ticks=self.reference_ticks, assist=assist)

    def factory_kwargs(self) -> dict[str, Any]:
        """--policy-arg KEY=VALUE items as the factory's keyword arguments."""
        return {key: yaml.safe_load(text) for key, _, text in (pair.partition("=") for pair in self.policy_arg)}

    def refusals(self) -> list[str]:
        """A warm-up that leaves nothing of the horizon (alive_ratio would divide by nothing), and
        assist steps without the assist they would time (nothing set is silently ignored)."""
        if self.assist_steps and self.assist_floor is None:
            return [f"assist_steps (--assist-steps): {self.assist_steps} ticks of an assist that is off; give "
                    "--assist-floor F to turn the assist on, or drop --assist-steps"]
        horizon = self.max_ticks if self.reference_ticks is None else self.reference_ticks
        excluded = max(self.warmup, self.assist_steps if self.assist_floor is not None else 0)
        if excluded < horizon:
            return []
        name, flag = ("warmup", "--warmup") if self.warmup >= horizon else ("assist_steps", "--assist-steps")
        ends = "--reference-ticks" if self.reference_ticks is not None else "--max-ticks"
        return [f"{name} ({flag}): {excluded} ticks excluded as warm-up leave nothing of the {horizon}-tick horizon "
                f"({ends}); lower {flag} or raise {ends}"]


def _eval_look(look: str | None, image_size: str | None, seed: int, source: Path | None = None) -> EvalLook | None:
    """--look and --image-size as what the policy's cameras see (None: the scene's own)."""
    return eval_look(look, seed=seed, source=source,
                     image_size=None if image_size is None else parse_image_size(image_size))


def _look_problems(look: str | None, image_size: str | None, seed: int) -> list[str]:
    """What is wrong with --look and --image-size, each problem naming its flag."""
    if image_size is not None:
        try:
            parse_image_size(image_size)
        except DemoforgeError as exc:
            return [_naming("image_size", "--image-size", exc)]
    try:
        _eval_look(look, image_size, seed)
    except DemoforgeError as exc:
        return [_naming("look", "--look", exc)]
    return []


def _naming(name: str, flag: str, exc: DemoforgeError) -> str:
    """The problem with the field's label in front, unless its message names the flag already."""
    return str(exc) if flag in str(exc) else f"{name} ({flag}): {exc}"


@dataclass(frozen=True)
class RolloutConfig:
    """`demoforge rollout`: the policy on the problems' own starts, `episodes` of each."""

    loop: PolicyLoop = nested(PolicyLoop)
    episodes: int = option(1, "Episodes per problem.", range=(1, MAX_EPISODES))
    domain: str = option("blocks", "Domain of PDDL problems: a task package's domain name or a domain PDDL file.")
    randomization: str | None = option(None, "Physics randomization spec (YAML), drawn per episode as in generate.",
                                       kind="str", metavar="SPEC.yaml")
    robot: str | None = option(None, "Arm of the PDDL problems' scenes: a built-in robot card (panda, ur5e_2f85) or "
                                     "a card YAML [default: panda]; a scene package has its own.", kind="str")
    look: str | None = option(None, "What the policy's cameras see: plain, randomized, randomized:train|test or a "
                                    "look YAML, one draw per episode [default: the scene's own appearance at the "
                                    "size the policy asks for].", kind="str")
    seed: int = _seed_option("Seed of the episodes' starts, physics randomization and look draws.")
    output_format: str = option("lerobot", "lerobot: OUT/dataset (LeRobot v3.0); hdf5: OUT/dataset.hdf5 in "
                                           "robomimic's layout too (needs demoforge[hdf5]).", choices=FORMATS)

    def eval_look(self) -> EvalLook | None:
        return _eval_look(self.look, self.loop.image_size, self.seed)

    def randomization_spec(self):
        """The physics randomization spec (a `RandomizationSpec`) or None."""
        from demoforge.randomize import load_spec

        return None if self.randomization is None else load_spec(self.randomization)

    def refusals(self) -> list[str]:
        problems = self.loop.refusals()
        try:
            self.randomization_spec()
        except DemoforgeError as exc:
            problems.append(f"randomization (--randomization): {exc}")
        return problems + _look_problems(self.look, self.loop.image_size, self.seed)


@dataclass(frozen=True)
class EvalConfig:
    """`demoforge eval`: the policy from the recorded states of a dataset's episodes."""

    loop: PolicyLoop = nested(PolicyLoop)
    episodes: tuple[int, ...] | None = _episodes_option("Episodes to start from")
    start: str = option("first", "Where episodes start in each recorded episode: first (tick 0), random (a seeded "
                                 "tick before the goal first holds), every:K (every K-th such tick), or several, "
                                 "e.g. first,random: the summary gives each side by side.")
    robot: str | None = option(None, "Arm the episodes ran with: a built-in robot card or a card YAML; it must be "
                                     "the one the dataset records [default: the recorded one].", kind="str")
    look: str | None = option(None, "What the policy's cameras see: recorded (each source episode's own look draw, "
                                    "as rendered), plain, randomized, randomized:train|test or a look YAML "
                                    "[default: the scene's own appearance].", kind="str")
    seed: int = _seed_option("Seed of the random start ticks and look draws.")

    def eval_look(self, source: Path) -> EvalLook | None:
        """What the policy's cameras see, `source` the dataset evaluated from (--look recorded takes its draws)."""
        return _eval_look(self.look, self.loop.image_size, self.seed, source)

    def starts(self) -> tuple:
        """--start as `policy.starts.Start`s."""
        from demoforge.policy.starts import parse_starts

        return parse_starts(self.start)

    def refusals(self) -> list[str]:
        problems = self.loop.refusals()
        try:
            self.starts()
        except DemoforgeError as exc:
            problems.append(str(exc))  # it names --start
        if self.look != RECORDED:  # recorded needs the source dataset: checked when the command has it
            problems += _look_problems(self.look, self.loop.image_size, self.seed)
        return problems


@dataclass(frozen=True)
class RelabelConfig:
    """`demoforge relabel`: the expert from the failure states of failed roll-outs."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the scenes rebuilt may be a package's
    envs: int = option(1, "Environments stepped together per worker.", range=(1, MAX_ENVS))
    workers: int = option(1, "Processes; the output does not depend on it.", range=(1, MAX_POLICY_WORKERS))


@dataclass(frozen=True)
class ReplayConfig:
    """`demoforge replay`: which episodes, how they are replayed and what counts as diverging."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the scenes rebuilt may be a package's
    episodes: tuple[int, ...] | None = _episodes_option("Episodes to replay")
    kinematic: bool = option(False, "Teleport along the recorded states instead of stepping the actions (no policy, "
                                    "no physics).")
    tol: float = option(1e-6, "Divergence above this is reported as diverging [rad, m].", range=(0.0, None))
