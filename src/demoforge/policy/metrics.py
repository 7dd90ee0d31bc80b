"""Per-episode roll-out metrics and the run summary.

- `success`: the PDDL goal holds at the end, and nothing it keeps has been disturbed (a block the
  goal does not flip shows the face it started with: `tasks.disturbed`; an episode whose goal holds
  only with one knocked over ends there as "disturbed", failed, though its goal atoms all hold).
- `partial_success`: the fraction of the goal's atoms true at the end (1.0 iff every atom holds).
- `completion_ratio`: the work done: of the goal atoms that were false at the start, the
  fraction true at the end (1.0 on success). A policy that does nothing scores 0, however
  long it survives; goal atoms that already held at the start earn nothing (in `unstack`
  the bottom block is on the table before the policy moves).
- `full_completion`: completion_ratio == 1 (the goal's missing atoms were all achieved).
- `alive_ratio`: how much of a reference horizon the episode stayed alive, warm-up
  excluded: 1.0 on success; else clip((T - W) / (H - W), 0, 1) for an episode of T ticks
  that ended without success, with warm-up W and reference horizon H [ticks]. An episode
  still running at the horizon (truncated, nothing dropped) counts as alive throughout;
  one cut short (an object dropped) scores the fraction before the cut. Ticks inside the
  warm-up never count: an assisted start says nothing about the policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from demoforge.errors import DemoforgeError


def partial_success(goal: Sequence, atoms: Iterable) -> float:
    """Fraction of `goal` atoms in `atoms` (an empty goal counts as met)."""
    goal = list(goal)
    if not goal:
        return 1.0
    have = set(atoms)
    return sum(a in have for a in goal) / len(goal)


def completion_ratio(goal: Sequence, start: Iterable, end: Iterable, *, success: bool) -> float:
    """Of the `goal` atoms not in `start`, the fraction in `end`; 1.0 on success."""
    if success:
        return 1.0
    before, after = set(start), set(end)
    todo = [a for a in goal if a not in before]
    if not todo:
        return 0.0  # nothing was left to do, yet the goal does not hold: an atom was undone
    return sum(a in after for a in todo) / len(todo)


def alive_ratio(ticks: int, *, success: bool, cut: bool, warmup: int, horizon: int) -> float:
    """See the module docstring; `cut`: the episode ended early by failure."""
    if horizon <= warmup:
        raise DemoforgeError(f"alive_ratio: reference horizon {horizon} [ticks] must exceed the warm-up {warmup} "
                             "[ticks]; pass a longer horizon or a shorter warm-up")
    if success:
        return 1.0
    if not cut:
        ticks = max(ticks, horizon)
    return float(np.clip((ticks - warmup) / (horizon - warmup), 0.0, 1.0))


@dataclass
class Tally:
    """Running sums of one problem's episodes (constant memory)."""

    episodes: int = 0
    successes: int = 0
    partial: float = 0.0
    completion: float = 0.0
    full: int = 0
    alive: float = 0.0

    def add(self, m: dict) -> None:
        self.episodes += 1
        self.successes += bool(m["success"])
        self.partial += float(m["partial_success"])
        self.completion += float(m["completion_ratio"])
        self.full += bool(m["full_completion"])
        self.alive += float(m["alive_ratio"])

    def to_json(self) -> dict:
        n = max(self.episodes, 1)
        return {"episodes": self.episodes, "success_rate": self.successes / n, "partial_success": self.partial / n,
                "mean_completion": self.completion / n, "full_completion_rate": self.full / n, "mean_alive": self.alive / n}


def summary_json(tallies: dict[str, Tally], header: dict) -> dict:
    total = Tally()
    for t in tallies.values():
        total.episodes += t.episodes
        total.successes += t.successes
        total.partial += t.partial
        total.completion += t.completion
        total.full += t.full
        total.alive += t.alive
    return {**header, "overall": total.to_json(), "problems": {k: t.to_json() for k, t in tallies.items()}}


def summary_markdown(summary: dict) -> str:
    """SUMMARY.md: one table, overall first."""
    lines = [f"# {summary.get('title', 'Roll-out')}", "", f"policy: `{summary.get('policy')}`", "",
             "| problem | episodes | success rate | partial success | mean completion | full completion | mean alive |",
             "|---|---|---|---|---|---|---|"]
    rows = [("**all**", summary["overall"])] + list(summary["problems"].items())
    for name, t in rows:
        lines.append(f"| {name} | {t['episodes']} | {t['success_rate']:.3f} | {t['partial_success']:.3f} | "
                     f"{t['mean_completion']:.3f} | {t['full_completion_rate']:.3f} | {t['mean_alive']:.3f} |")
    return "\n".join(lines) + "\n"
