"""Expert motion quality per task family: yield, joint travel, operator duration, wrist turns.

For every shipped family (stack_three, unstack, pnp, flip, rotate) one `generate` run over
fresh problems and seeds the tests never use (family seed 9001, run seed 9001 by default),
then per family, from the recorded commanded arm targets (`action`) split per operator
(a new operator starts where `plan.operator` changes or the phase index drops back), with
pick/place operators (pick-up, unstack, put-down, stack, place-in-region) and turning
operators (flip, rotate) in separate rows:

- yield: successes / episodes (per family);
- joint travel per operator [rad]: sum over the arm joints of each joint's path length
  (L1, median and max over the row's operators), and the path length in joint space
  (L2: the Euclidean norm of each tick's step, summed); a rotate must turn its block 90
  degrees in the hand, a flip none when it tips the block over with the closed fingers and
  90 degrees when it turns it in the hand (the plan's `flip_mode`), so their travel is counted
  beyond that turn, against the same 2.0 rad as the others;
- median and longest operator duration [s] (its ticks, the runner's settle included);
- largest wrist turn not needed by the task [deg]: the last joint's path length in one
  operator, less the turn the operator must make (TURNING) and less the grasp's turn where the
  scene forced it (the plan's `grasp_forced_turn`: every grasp turning the hand less hit
  something); the largest such forced turn is printed beside it;
- failure causes of failed episodes, and the causes of retried attempts.

Targets (issue 16): pick/place median travel <= 2.0 rad and max <= 4.0 rad, median
pick/place operator <= 2.5 s at the default (medium) profile; flip/rotate median travel
<= the needed turn + 2.0 rad; no unneeded wrist turn > 90 deg; yield
>= 95% per family. The last line is the headline: each target's worst figure and whether
it is met.

Run: python benchmarks/bench_motion.py [--problems 10] [--episodes 4] [--seed 9001] [--plot DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402

from demoforge.dataset import open_dataset  # noqa: E402
from demoforge.execute import generate  # noqa: E402
from demoforge.tasks import generate_family, write_tasks  # noqa: E402
from _machine import describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path

FAMILIES = ("stack_three", "unstack", "pnp", "flip", "rotate")
# Turn [rad] the hand itself must make: rotate turns its block 90 degrees about the vertical in
# the hand; flip tips it over with the closed fingers (no turn of the hand: "topple") or, where
# it has no room to land, turns it 90 degrees in the hand ("in_hand"), the plan's `flip_mode`.
TURNING = {"flip": {"topple": 0.0, "in_hand": math.pi / 2}, "rotate": math.pi / 2}
TRAVEL_BUDGET = 2.0  # median joint travel per operator beyond the needed turn [rad]
TRAVEL_MAX = 4.0  # largest joint travel of a pick/place operator [rad]
DURATION_BUDGET = 2.5  # median pick/place operator duration [s]
WRIST_BUDGET = 90.0  # largest unneeded wrist turn [deg]
YIELD_TARGET = 0.95  # per family


def operator_segments(ops: np.ndarray, phases: np.ndarray) -> list[slice]:
    """Tick ranges of consecutive operators (operator change or phase index dropping back)."""
    starts = [0] + [k for k in range(1, len(ops)) if ops[k] != ops[k - 1] or phases[k] < phases[k - 1]]
    return [slice(a, b) for a, b in zip(starts, [*starts[1:], len(ops)], strict=True)]


def need(name: str, params: dict) -> float:
    """The turn [rad] operator `name` must make with these plan parameters (not counting a
    grasp turn the scene forced: `forced`)."""
    turn = TURNING.get(name, 0.0)
    return turn[params.get("flip_mode", "in_hand")] if isinstance(turn, dict) else turn


def forced(params: dict) -> float:
    """The hand's turn [rad] to its grasp where every grasp turning it less hit something."""
    return float(params.get("grasp_forced_turn", 0.0))


def episode_operators(reader, i: int, vocab: dict, fps: float, executed: list[dict]) -> list[dict]:
    cols = reader.read_episode(i, ["action", "plan.operator", "plan.phase"])
    q = cols["action"][:, :-1].astype(float)
    out = []
    for seg in operator_segments(cols["plan.operator"], cols["plan.phase"]):
        op = int(cols["plan.operator"][seg.start])
        if op < 0:
            continue
        # The first tick's target is measured from the previous tick's command (the hand-over).
        lo = max(seg.start - 1, 0)
        steps = np.abs(np.diff(q[lo:seg.stop], axis=0))
        name = vocab["operators"][op]
        params = next((e["params"] for e in executed if e["ticks"][0] <= seg.start < e["ticks"][1]), {})
        out.append({"op": name, "travel": float(steps.sum()), "wrist": float(steps[:, -1].sum()),
                    "travel2": float(np.linalg.norm(steps, axis=1).sum()), "mode": params.get("flip_mode"),
                    "seconds": (seg.stop - seg.start) / fps, "q": q[seg], "need": need(name, params),
                    "forced": forced(params)})
    return out


def measure(family: str, work: Path, *, problems: int, episodes: int, seed: int, plot: Path | None) -> dict:
    folder = work / family
    paths = [p for p in write_tasks(generate_family(family, count=problems, seed=seed), folder / "tasks")
             if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    t0 = time.perf_counter()
    summary = generate([str(p) for p in paths], folder / "run", episodes_per_problem=episodes, envs=4, seed=seed)
    wall = time.perf_counter() - t0
    ops, failures, retried = [], Counter(), Counter()
    for split in ("success", "failure"):
        root = summary.roots[split]
        if root is None:
            continue
        reader = open_dataset(root)
        vocab = json.loads((Path(root) / "meta/demoforge/vocab.json").read_text())
        fps = float(reader.info.fps)
        for i in reader.episode_indices:
            row = reader.episode(i)
            for r in json.loads(row["demoforge/retries"]):
                for a in r["attempts"]:
                    retried[a["kind"]] += 1
            if split == "failure":
                f = json.loads(row["demoforge/failure"])
                failures[f"{f['kind']}: {f.get('skill')}"] += 1
                continue
            eps = episode_operators(reader, i, vocab, fps, json.loads(row["demoforge/plan"]))
            ops += eps
            if plot is not None and i < 2:
                _plot(plot / f"{family}-ep{i}.png", eps, fps, f"{family} episode {i}")
    classes = {}
    for o in ops:
        classes.setdefault("turn" if o["op"] in TURNING else "pick/place", []).append(o)
    return {
        "family": family, "episodes": summary.episodes, "yield": summary.successes / max(summary.episodes, 1),
        "classes": {c: _figures(v) for c, v in sorted(classes.items())},
        "failures": dict(failures), "retried": dict(retried), "wall": wall,
    }


def _figures(ops: list[dict]) -> dict:
    """Travel (beyond the needed turn), duration and wrist figures of one class of operators."""
    travel = np.array([o["travel"] - o["need"] for o in ops])
    travel2 = np.array([o["travel2"] - o["need"] for o in ops])
    return {
        "ops": len(ops), "med_travel": float(np.median(travel)), "max_travel": float(travel.max()),
        "med_l2": float(np.median(travel2)), "max_l2": float(travel2.max()),
        "med_s": float(np.median([o["seconds"] for o in ops])), "max_s": float(max(o["seconds"] for o in ops)),
        "wrist_deg": math.degrees(max(o["wrist"] - o["need"] - o["forced"] for o in ops)),
        "forced_deg": math.degrees(max(o["forced"] for o in ops)),
        "wrist_all_deg": math.degrees(max(o["wrist"] - o["need"] for o in ops)),  # forced turns counted too
        "forced_ops": sum(o["forced"] > 0 for o in ops),
        "names": sorted({o["op"] for o in ops}),
        "modes": {m: (sum(o["mode"] == m for o in ops), float(np.median([o["travel"] - o["need"] for o in ops
                                                                          if o["mode"] == m])))
                  for m in sorted({o["mode"] for o in ops if o["mode"]})},
    }


def _plot(path: Path, ops: list[dict], fps: float, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    q = np.concatenate([o["q"] for o in ops])
    t = np.arange(len(q)) / fps
    fig, (ax, av) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for j in range(q.shape[1]):
        ax.plot(t, q[:, j], label=f"joint{j + 1}")
        av.plot(t[1:], np.diff(q[:, j]) * fps)
    edge = 0.0
    for o in ops:
        ax.axvline(edge, color="k", lw=0.5)
        ax.text(edge, q.max(), f" {o['op']}", fontsize=7, va="top")
        edge += len(o["q"]) / fps
    ax.set_ylabel("target [rad]")
    av.set_ylabel("velocity [rad/s]")
    av.set_xlabel("time [s]")
    ax.legend(fontsize=7, ncol=7, loc="lower left")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main() -> None:
    print(describe(), flush=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=10, help="problems per family")
    ap.add_argument("--episodes", type=int, default=4, help="episodes per problem")
    ap.add_argument("--seed", type=int, default=9001, help="family and run seed (the tests use others)")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--plot", type=Path, default=None, help="write joint plots of 2 episodes per family here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_motion_"))
    rows = []
    try:
        for family in args.families.split(","):
            rows.append(measure(family, work, problems=args.problems, episodes=args.episodes, seed=args.seed,
                                plot=args.plot))
            r = rows[-1]
            print(f"{family}: done in {r['wall']:.0f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("travel = joint travel per operator beyond the turn it must make [rad]; wrist = largest unneeded "
          "last-joint turn in one operator [deg]; forced = operators whose grasp turn the scene forced, the largest "
          "such turn [deg], and the wrist figure counting them as unneeded")
    print("| family | operators | episodes | yield | count | median travel L1 | max travel L1 | median L2 | max L2 "
          "| median op [s] | longest op [s] | wrist [deg] | forced | failures | retried attempts |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        for c, f in r["classes"].items():
            modes = (" (" + ", ".join(f"{k} {n}: median {t:.2f}" for k, (n, t) in f["modes"].items()) + ")"
                     if f["modes"] else "")
            print(f"| {r['family']} | {', '.join(f['names'])}{modes} | {r['episodes']} | {100 * r['yield']:.1f}% | {f['ops']} "
                  f"| {f['med_travel']:.2f} | {f['max_travel']:.2f} | {f['med_l2']:.2f} | {f['max_l2']:.2f} "
                  f"| {f['med_s']:.2f} | {f['max_s']:.2f} | {f['wrist_deg']:.0f} | {_forced_cell(f)} | {r['failures'] or '-'} "
                  f"| {r['retried'] or '-'} |")
    print(headline(rows))


def _forced_cell(f: dict) -> str:
    if not f["forced_ops"]:
        return "-"
    return f"{f['forced_ops']}: up to {f['forced_deg']:.0f}, wrist {f['wrist_all_deg']:.0f} counting them"


def headline(rows: list[dict]) -> str:
    """Each target's worst figure over the families, and whether it is met."""
    def worst(cls: str, key: str, pick=max):
        found = [(f[key], r["family"]) for r in rows for c, f in r["classes"].items() if c == cls]
        return pick(found) if found else (float("nan"), "-")

    def verdict(value, ok) -> str:
        return "met" if ok(value) else "NOT met"

    parts = []
    for cls, label in (("pick/place", "pick/place"), ("turn", "flip/rotate")):
        med, fam = worst(cls, "med_travel")
        if fam == "-":
            continue
        parts.append(f"{label} median travel {med:.2f} rad ({fam}) <= {TRAVEL_BUDGET}"
                     + (" beyond the turn" if cls == "turn" else "") + f": {verdict(med, lambda v: v <= TRAVEL_BUDGET)}")
        if cls == "pick/place":
            top, fam = worst(cls, "max_travel")
            parts.append(f"max {top:.2f} rad ({fam}) <= {TRAVEL_MAX}: {verdict(top, lambda v: v <= TRAVEL_MAX)}")
            sec, fam = worst(cls, "med_s")
            parts.append(f"median op {sec:.2f} s ({fam}) <= {DURATION_BUDGET}: "
                         f"{verdict(sec, lambda v: v <= DURATION_BUDGET)}")
    wrist = max(((f["wrist_deg"], r["family"]) for r in rows for f in r["classes"].values()), default=(0.0, "-"))
    parts.append(f"unneeded wrist turn {wrist[0]:.0f} deg ({wrist[1]}) <= {WRIST_BUDGET:.0f}: "
                 f"{verdict(wrist[0], lambda v: v <= WRIST_BUDGET)}")
    low = min((r["yield"], r["family"]) for r in rows)
    parts.append(f"min yield {100 * low[0]:.1f}% ({low[1]}) >= {100 * YIELD_TARGET:.0f}%: "
                 f"{verdict(low[0], lambda v: v >= YIELD_TARGET)}")
    return "headline: " + "; ".join(parts)


if __name__ == "__main__":
    main()
