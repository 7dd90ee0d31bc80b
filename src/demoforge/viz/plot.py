"""A PNG of every signal of one episode: state, action, gripper, operator/phase labels,
symbolic atoms and success.

Panels, top to bottom, all against the tick: arm joint state and commanded targets
(solid / dashed per joint) [rad]; gripper closedness, achieved and commanded [0..1];
operator and phase indices (named in the legend); the truth of each symbolic atom
(rows, goal atoms starred); the fraction of goal atoms true and the episode's recorded
outcome in the title. Needs matplotlib (demoforge[report]).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from demoforge.dataset import open_dataset
from demoforge.dataset.keys import ACTION, STATE, row_extra
from demoforge.dataset.guard import write_file
from demoforge.raw.schema import OPERATOR, PHASE, SYMBOLIC_STATE, read_vocab
from demoforge.viz.tiles import VizError


def plot_episode(root: str | Path, episode: int, out: str | Path, *, dpi: int = 100) -> Path:
    """Write the episode's signal plot to `out` (PNG); returns the path."""
    # One function: one figure drawn panel by panel (arm, gripper, labels, atoms) on a shared time axis;
    # each panel is a few lines over the same columns.
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise VizError("demoforge plot needs matplotlib: pip install 'demoforge[report]'") from None
    root, out = Path(root), Path(out)
    reader = open_dataset(root)
    if episode not in reader.episode_indices:
        raise VizError(f"{root}: no episode {episode}; it has 0..{reader.num_episodes - 1}")
    feats = reader.info.features
    cols = reader.read_episode(episode, [c for c in (STATE, ACTION, SYMBOLIC_STATE, OPERATOR, PHASE) if c in feats])
    row = reader.episode(episode)
    vocab = read_vocab(root) or {}
    goal = row_extra(row, "goal", [])
    outcome = row_extra(row, "success")
    if outcome is None:
        outcome = row_extra(row, "outcome")
    n = int(row["length"])
    t = np.arange(n)
    panels = [p for p in ("arm", "gripper", "labels", "atoms") if p != "atoms" or SYMBOLIC_STATE in cols]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 2.6 * len(panels)), sharex=True, squeeze=False)
    axes = dict(zip(panels, axes[:, 0], strict=True))
    state, action = cols.get(STATE), cols.get(ACTION)
    ax = axes["arm"]
    for j in range(state.shape[1] - 1):
        line, = ax.plot(t, state[:, j], lw=1, label=f"q{j}")
        if action is not None:
            ax.plot(t, action[:, j], lw=1, ls="--", color=line.get_color())
    ax.set_ylabel("arm [rad]\nstate — / action --")
    ax.legend(ncol=8, fontsize=7, loc="upper right")
    ax = axes["gripper"]
    ax.plot(t, state[:, -1], label="state")
    if action is not None:
        ax.plot(t, action[:, -1], ls="--", label="action")
    ax.set_ylabel("gripper [0..1]")
    ax.legend(fontsize=7)
    ax = axes["labels"]
    for key, names in ((OPERATOR, vocab.get("operators", [])), (PHASE, vocab.get("phases", []))):
        if key in cols:
            v = cols[key].reshape(-1)
            used = sorted(set(v.tolist()))
            label = ", ".join(f"{i}={names[i] if 0 <= i < len(names) else 'none'}" for i in used)
            ax.step(t, v, where="post", label=f"{key.split('.')[-1]}: {label}"[:120])
    ax.set_ylabel("labels (index)")
    ax.legend(fontsize=7)
    goal_frac = None
    if "atoms" in axes:
        atoms = vocab.get("atoms") or feats[SYMBOLIC_STATE].names or []
        sym = cols[SYMBOLIC_STATE].astype(float)
        keep = np.flatnonzero(sym.any(axis=0) | np.isin(np.array(atoms, dtype=object), goal)) if atoms else \
            np.arange(sym.shape[1])
        ax = axes["atoms"]
        ax.imshow(sym[:, keep].T, aspect="auto", interpolation="nearest", cmap="Greys", extent=(0, n, len(keep), 0))
        ax.set_yticks(np.arange(len(keep)) + 0.5)
        ax.set_yticklabels([("* " if atoms[i] in goal else "") + atoms[i] for i in keep] if atoms else keep, fontsize=6)
        ax.set_ylabel("atoms true")
        gcols = [atoms.index(g) for g in goal if g in atoms]
        if gcols:
            goal_frac = cols[SYMBOLIC_STATE][:, gcols].mean(axis=1)
            ax2 = axes["labels"].twinx()
            ax2.plot(t, goal_frac, color="green", lw=2, label="goal atoms true")
            ax2.set_ylim(-0.05, 1.05)
            ax2.set_ylabel("goal fraction", color="green")
    list(axes.values())[-1].set_xlabel("tick")
    fig.suptitle(f"{root.name} episode {episode}: {n} ticks, outcome {outcome}"
                 + ("" if goal_frac is None else f", goal atoms true at end {goal_frac[-1]:.2f}"), fontsize=10)
    fig.tight_layout()
    import io


    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    plt.close(fig)
    return write_file(out, buf.getvalue())  # whole or not at all
