"""Where evaluation episodes start in the recorded episodes they are taken from.

    starts = parse_starts("first,random")     # eval --start first,random
    ticks = start_ticks(starts, length=312, goal_tick=290, rng=rng)   # [(0, "first"), (143, "random")]

- `first`: tick 0, the episode's recorded start (closed-loop success as usually reported);
- `random`: one tick drawn uniformly from those before the goal first holds, seeded per episode
  (the seed's `completion_ratio_mean_random`: can the policy pick the task up half-way, e.g.
  with a block already in hand?);
- `every:K`: ticks 0, K, 2K, ... before the goal first holds.

A start at or after the tick where the recorded goal first holds would begin in success and say
nothing, so no start is placed there. The summary gives each kind's figures side by side
(`by_start`), read back from the episodes' `eval_source` records; a tick that several kinds
choose (tick 0 by first and every:K) runs once and counts for each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from demoforge.dataset import open_dataset
from demoforge.dataset.keys import row_extra
from demoforge.policy.protocol import PolicyError
from demoforge.policy.stage import episode_metrics

KINDS = ("first", "random", "every")


@dataclass(frozen=True)
class Start:
    """One way of choosing start ticks."""

    kind: str  # one of KINDS
    every: int = 0  # the stride of `every:K` [ticks]; 0 otherwise

    @property
    def label(self) -> str:
        return f"every:{self.every}" if self.kind == "every" else self.kind


FIRST = Start("first")


def parse_starts(text: str) -> tuple[Start, ...]:
    """'first', 'random', 'every:K' or a comma-separated list of them (each at most once)."""
    out: list[Start] = []
    for part in (p.strip() for p in text.split(",")):
        kind, sep, k = part.partition(":")
        if kind in ("first", "random") and not sep:
            start = Start(kind)
        elif kind == "every" and sep and k.isdigit() and int(k) >= 1:
            start = Start("every", int(k))
        else:
            raise PolicyError(f"--start: {part!r} is not a start; give first, random or every:K (K >= 1 ticks), "
                              "or several separated by commas (e.g. first,random)")
        if start in out:
            raise PolicyError(f"--start: {part!r} is given twice in {text!r}")
        out.append(start)
    return tuple(out)


def start_ticks(starts: tuple[Start, ...], *, length: int, goal_tick: int | None,
                rng: np.random.Generator) -> list[tuple[int, str]]:
    """(tick, label) of every start in an episode of `length` ticks whose goal first holds at
    `goal_tick` (None: never)."""
    end = max(1, min(length, length if goal_tick is None else goal_tick))  # tick 0 is always a start
    out: list[tuple[int, str]] = []
    for s in starts:
        if s.kind == "first":
            out.append((0, s.label))
        elif s.kind == "random":
            out.append((int(rng.integers(0, end)), s.label))
        else:
            out.extend((t, s.label) for t in range(0, end, s.every))
    return out


def goal_tick(symbols: np.ndarray, vocab_atoms: list[str], goal: tuple[str, ...]) -> int | None:
    """The first row of the per-tick symbolic state (bool, one column per vocab atom) where every
    goal atom holds; None when it never does or a goal atom is not in the vocabulary."""
    index = {a: k for k, a in enumerate(vocab_atoms)}
    if not goal or any(a not in index for a in goal):
        return None
    held = np.asarray(symbols, bool)[:, [index[a] for a in goal]].all(axis=1)
    hits = np.flatnonzero(held)
    return int(hits[0]) if len(hits) else None


def by_start(dataset: Path, starts: tuple[Start, ...]) -> dict[str, dict]:
    """Per start label of `starts`, in that order: episodes, success rate, mean completion and
    full-completion rate of the evaluation dataset at `dataset`, read from its episodes' records."""
    reader = open_dataset(dataset)
    sums: dict[str, list[float]] = {s.label: [0, 0.0, 0.0, 0.0] for s in starts}
    for k in reader.episode_indices:
        row = reader.episode(k)
        m = episode_metrics(row)
        for label in (row_extra(row, "eval_source") or {}).get("starts", [FIRST.label]):
            s = sums[label]
            s[0] += 1
            s[1] += bool(m["success"])
            s[2] += float(m["completion_ratio"])
            s[3] += bool(m["full_completion"])
    return {label: {"episodes": int(n), "success_rate": ok / max(n, 1), "mean_completion": c / max(n, 1),
                    "full_completion_rate": f / max(n, 1)} for label, (n, ok, c, f) in sums.items()}


def by_start_markdown(table: dict[str, dict]) -> str:
    """The SUMMARY.md section: one row per start kind."""
    lines = ["", "## By start frame", "", "| start | episodes | success rate | mean completion | full completion |",
             "|---|---|---|---|---|"]
    for label, t in table.items():
        lines.append(f"| {label} | {t['episodes']} | {t['success_rate']:.3f} | {t['mean_completion']:.3f} | "
                     f"{t['full_completion_rate']:.3f} |")
    return "\n".join(lines) + "\n"
