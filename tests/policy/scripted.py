"""Scripted policies for the tests, loaded through the `module:factory` entry point."""

import numpy as np

from demoforge.policy import PolicySpaces


class Hold:
    """Commands the arm where it is and keeps the gripper open: never reaches a goal."""

    def __init__(self, n_arm: int = 7):
        self.spaces = PolicySpaces({"observation.state": (n_arm + 1,)}, (n_arm + 1,))
        self.resets: list[tuple[int, str, int]] = []

    def reset(self, slot, start):
        self.resets.append((slot, start.problem.name, start.episode))

    def act(self, observations):
        a = np.nan_to_num(np.array(observations["observation.state"], dtype=float))
        a[:, -1] = 0.0
        return a


def hold(n_arm: int = 7) -> Hold:
    return Hold(n_arm)


def wrong_width() -> Hold:
    return Hold(n_arm=3)


def not_a_policy():
    return object()


class Seeing(Hold):
    """Hold, but asks for the front camera and remembers what it saw."""

    def __init__(self, height: int = 24, width: int = 32):
        super().__init__()
        self.spaces = PolicySpaces({"observation.state": (8,), "observation.images.front": (height, width, 3)}, (8,))
        self.seen: list[np.ndarray] = []

    def act(self, observations):
        self.seen.append(np.array(observations["observation.images.front"][0]))
        return super().act(observations)


def seeing(height: int = 24, width: int = 32) -> Seeing:
    return Seeing(height, width)
