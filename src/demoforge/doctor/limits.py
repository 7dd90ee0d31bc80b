"""Joint limits for D007 and the coverage generator: from a robot card, an MJCF/URDF file, or the dataset.

`--robot` accepts a built-in card name (`panda`), a card YAML, or an MJCF/URDF model. Without
it, the dataset's own meta is used: info.json `robot_type` naming a built-in card, or state
names that are exactly a built-in card's arm joints (what `demoforge generate` writes).

Joints are matched to state dimensions by name when the state names every one of them;
otherwise they are taken in order from the first dimension, and `JointLimits.mapping_note`
says so (D007 reports it; findings name each joint by the dataset's own name), so a
dataset's `joint0..joint6` is never shown as the card's `joint1..joint7` without a word.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from demoforge.dataset.keys import STATE
from demoforge.dataset.layout import DatasetInfo
from demoforge.errors import DemoforgeError


def builtin_cards() -> tuple[str, ...]:
    """Names of the built-in robot cards (demoforge.sim.robots.ROBOTS)."""
    from demoforge.sim.robots import ROBOTS  # lazy: the doctor reads logs without MuJoCo

    return tuple(ROBOTS)


@dataclass(frozen=True)
class JointLimits:
    """Limits of the arm joints, and which dimensions of observation.state hold them."""

    names: tuple[str, ...]  # joint names, base to wrist
    dims: tuple[int, ...]  # index of each joint in observation.state
    lower: tuple[float, ...]  # [rad] or [m]
    upper: tuple[float, ...]  # [rad] or [m]
    source: str  # where the limits came from, for the report
    card: object | None = None  # the RobotCard when the limits came from one (coverage needs it)
    state_names: tuple[str, ...] = ()  # the dataset's own name of each joint's state dimension (what findings say)
    mapping: str = "name"  # "name"; "position" when the state's names are not the joints'; "contradicted" when
    # some of them name other dimensions than the order gives
    mapping_note: str = ""  # how the joints were paired with state dimensions, when not by name

    def label(self, j: int) -> str:
        """Joint j as findings name it: the dataset's name, with the card's when they differ."""
        own = self.state_names[j] if j < len(self.state_names) else self.names[j]
        return own if own == self.names[j] else f"{own} (robot joint {self.names[j]})"

    @property
    def array(self) -> np.ndarray:
        """(n, 2) lower, upper."""
        return np.stack([np.asarray(self.lower), np.asarray(self.upper)], axis=1)


def _card_by_name(name: str):
    from demoforge.sim.robots import ROBOTS as cards  # lazy: the doctor reads logs without MuJoCo

    key = name.removeprefix("builtin:")
    if key not in cards:
        raise DemoforgeError(f"robot {name!r}: no built-in card of that name; built-ins: {sorted(cards)}, "
                             "or pass a card YAML or an MJCF/URDF path")
    return cards[key]()


def card_limits(card) -> tuple[tuple[str, ...], np.ndarray]:
    """Arm joint names and (n, 2) limits of a robot card, from its compiled model."""
    from demoforge.sim.robot_model import bind_robot, robot_spec  # lazy: the doctor reads logs without MuJoCo

    model = robot_spec(card).compile()
    return tuple(card.arm_joints), np.asarray(bind_robot(model, card).limits, dtype=np.float64)


def model_limits(path: Path) -> tuple[tuple[str, ...], np.ndarray]:
    """Every limited hinge or slide joint of an MJCF/URDF file, in model order."""
    import mujoco

    try:
        if Path(path).suffix.lower() == ".urdf":  # its package:// meshes resolved against its folder
            from demoforge.sim.urdf import load_urdf  # lazy: the doctor reads logs without MuJoCo

            model = load_urdf(Path(path)).compile()
        else:
            model = mujoco.MjModel.from_xml_path(str(path))
    except DemoforgeError:
        raise
    except Exception as exc:  # mujoco raises ValueError with the parser's message
        raise DemoforgeError(f"robot model {path}: cannot load ({exc})") from exc
    names, limits = [], []
    for j in range(model.njnt):
        kind = int(model.jnt_type[j])
        if kind in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE) and model.jnt_limited[j]:
            names.append(model.joint(j).name)
            limits.append(model.jnt_range[j])
    if not names:
        raise DemoforgeError(f"robot model {path}: no limited hinge or slide joints")
    return tuple(names), np.asarray(limits, dtype=np.float64)


def _state_names(info: DatasetInfo) -> list[str] | None:
    ft = info.features.get(STATE)
    if ft is None:
        return None
    names = ft.names
    if isinstance(names, dict):  # lerobot's older {"motors": [...]} form
        names = next(iter(names.values()), None)
    return [str(n) for n in names] if isinstance(names, list) else None


def resolve_limits(info: DatasetInfo, robot: str | None = None) -> JointLimits | None:
    """Joint limits for the dataset's observation.state, or None when nothing names them.

    Raises DemoforgeError when `robot` is given but cannot be matched to the state.
    """
    if STATE not in info.features:
        if robot is not None:
            raise DemoforgeError(f"--robot {robot}: the dataset has no {STATE!r} feature to match joints against")
        return None
    width = int(np.prod(info.features[STATE].shape))
    state_names = _state_names(info)
    card = None
    if robot is None:
        if info.robot_type in builtin_cards():
            robot = info.robot_type
        else:
            for name in builtin_cards():
                c = _card_by_name(name)
                if state_names and list(c.arm_joints) == state_names[:len(c.arm_joints)]:
                    robot = name
                    break
        if robot is None:
            return None
    path = Path(robot)
    if path.suffix.lower() in (".yaml", ".yml"):
        from demoforge.sim.robot import load_card  # lazy: the doctor reads logs without MuJoCo

        card = load_card(path)
        names, lim = card_limits(card)
    elif path.suffix.lower() in (".xml", ".urdf", ".mjcf"):
        if not path.is_file():
            raise DemoforgeError(f"robot model {path}: not found")
        names, lim = model_limits(path)
    else:
        card = _card_by_name(robot)
        names, lim = card_limits(card)
    if state_names and all(n in state_names for n in names):
        dims = tuple(state_names.index(n) for n in names)
        how, mapping, note = "matched by name", "name", ""
    elif len(names) <= width:
        dims = tuple(range(len(names)))
        how = f"taken in order as the first {len(names)} state dimensions"
        mapping, note = position_note(robot, names, state_names)
    else:
        raise DemoforgeError(f"--robot {robot}: {len(names)} joints {list(names)} but {STATE} has only {width} "
                             "dimensions; pass the robot the dataset was recorded with")
    labels = tuple(state_names[d] if state_names and d < len(state_names) else f"dim {d}" for d in dims)
    return JointLimits(names=names, dims=dims, lower=tuple(lim[:, 0].tolist()), upper=tuple(lim[:, 1].tolist()),
                       source=f"{robot} ({how})", card=card, state_names=labels, mapping=mapping,
                       mapping_note=note)


def position_note(robot: str, names: tuple[str, ...], state_names: list[str] | None) -> tuple[str, str]:
    """("position" or "contradicted", why) for joints paired with state dimensions in order."""
    n = len(names)
    if not state_names:
        return "position", (f"{STATE} has no names; its first {n} dimensions are taken in order as {robot}'s "
                            f"joints {list(names)}")
    pairs = ", ".join(f"{s}={c}" for s, c in zip(state_names, names))
    shifted = [c for k, c in enumerate(names) if c in state_names and state_names.index(c) != k]
    head = (f"{STATE} names {state_names[:n]} are not {robot}'s joints {list(names)}; the first {n} dimensions are "
            f"taken in order ({pairs})")
    if shifted:
        return "contradicted", (f"{head}, although {shifted} also name other dimensions of the state: the names "
                                "contradict this order")
    return "position", head
