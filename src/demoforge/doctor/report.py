"""The doctor's report, HTML or Markdown, with its plots embedded as base64 PNGs.

Plots: per-joint occupancy across the joint limits (empty bins in red), the episode
length distribution, and state / action traces of the first flagged episodes (read
back one at a time). matplotlib is imported here only, and only its object API is
used (no pyplot state).
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from demoforge.dataset.keys import ACTION, STATE
from demoforge.dataset.reader import open_dataset
from demoforge.doctor.findings import Finding
from demoforge.doctor.registry import CHECKS, DoctorError
from demoforge.doctor.run import DoctorResult
from demoforge.errors import DemoforgeError
from demoforge.dataset.guard import write_file

MAX_TRACED_EPISODES = 4  # flagged episodes whose traces are plotted
_COLOURS = {"error": "#c0392b", "warning": "#d68910", "info": "#2e86c1"}


@dataclass(frozen=True)
class Plot:
    """One embedded figure."""

    title: str
    png: bytes


def _figure(width: float, height: float):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # an optional dependency: say how to get it
        raise DoctorError("doctor reports need matplotlib: pip install 'demoforge[report]' (or matplotlib)") from exc
    return Figure(figsize=(width, height), dpi=90, layout="constrained")


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def occupancy_plot(result: DoctorResult) -> Plot | None:
    scan = result.scan
    if scan is None or scan.limits is None:
        return None
    n, bins = scan.occupancy.shape
    cols = min(n, 4)
    rows = (n + cols - 1) // cols
    fig = _figure(3.0 * cols, 2.2 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols)).reshape(-1)
    lim = scan.limits.array
    for j, ax in enumerate(axes):
        if j >= n:
            ax.set_visible(False)
            continue
        counts = scan.occupancy[j]
        edges = np.linspace(lim[j, 0], lim[j, 1], bins + 1)
        empty = counts < result.config.min_bin_frames
        ax.bar(edges[:-1], counts, width=np.diff(edges), align="edge",
               color=np.where(empty, "#e6b0aa", "#5dade2"), edgecolor="white")
        for b in np.flatnonzero(empty):
            ax.axvspan(edges[b], edges[b + 1], color="#c0392b", alpha=0.15, lw=0)
        ax.set_title(f"{scan.limits.label(j)}  ({(~empty).mean():.0%} of bins)", fontsize=9)
        ax.set_xlabel("[rad]", fontsize=8)
        ax.tick_params(labelsize=7)
    return Plot("Joint occupancy across the limits (red: never visited)", _png(fig))


def length_plot(result: DoctorResult) -> Plot | None:
    scan = result.scan
    if scan is None or not scan.episodes:
        return None
    lengths = np.array([s.length for s in scan.episodes])
    flagged = {f.evidence.episode for f in result.findings if f.code == "D009"}
    fig = _figure(6.0, 2.6)
    ax = fig.subplots()
    ax.hist(lengths, bins=min(40, max(5, len(lengths) // 3)), color="#5dade2", edgecolor="white")
    for s in scan.episodes:
        if s.episode in flagged:
            ax.axvline(s.length, color="#c0392b", lw=1)
    ax.set_xlabel("episode length [frames]")
    ax.set_ylabel("episodes")
    return Plot("Episode length distribution (red: outliers)", _png(fig))


def flagged_episodes(result: DoctorResult, limit: int = MAX_TRACED_EPISODES) -> list[int]:
    """The first episodes named by a warning or error, in finding order."""
    out: list[int] = []
    for f in result.findings:
        e = f.evidence.episode
        if e is not None and f.severity != "info" and e not in out:
            out.append(e)
    return out[:limit]


def trace_plots(result: DoctorResult) -> list[Plot]:
    if result.scan is None:
        return []

    try:
        ds = open_dataset(result.root)
    except DemoforgeError:
        return []
    keys = [k for k in (STATE, ACTION) if k in ds.info.features]
    plots = []
    for e in flagged_episodes(result):
        try:
            cols = ds.read_episode(e, keys)
        except DemoforgeError:
            continue
        marks = sorted({f.evidence.frame for f in result.findings if f.evidence.episode == e
                        and f.evidence.frame is not None})
        codes = sorted({f.code for f in result.findings if f.evidence.episode == e})
        fig = _figure(7.0, 1.9 * len(keys))
        axes = np.atleast_1d(fig.subplots(len(keys), 1, sharex=True))
        t = np.arange(len(next(iter(cols.values())))) / ds.info.fps
        for ax, key in zip(axes, keys):
            values = cols[key].reshape(len(t), -1)
            ax.plot(t, values, lw=0.9)
            for k in marks:
                ax.axvline(k / ds.info.fps, color="#c0392b", lw=1, ls="--")
            ax.set_ylabel(key, fontsize=8)
            ax.tick_params(labelsize=7)
        axes[-1].set_xlabel("time [s]")
        plots.append(Plot(f"Episode {e} ({', '.join(codes)}): state and action", _png(fig)))
    return plots


def coverage_plot(report) -> Plot:
    """Per joint, occupied bins before and after a coverage run (a demoforge.doctor.coverage.CoverageReport)."""
    n = len(report.joints)
    fig = _figure(7.0, 2.6)
    ax = fig.subplots()
    x = np.arange(n)
    ax.bar(x - 0.2, report.occupancy_before, width=0.4, color="#e6b0aa", label="before")
    ax.bar(x + 0.2, report.occupancy_after, width=0.4, color="#5dade2", label="after")
    ax.set_xticks(x, report.joints, fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("bins visited")
    ax.legend(fontsize=8)
    return Plot(f"Coverage: D007 findings {report.d007_before} -> {report.d007_after}", _png(fig))


def plots(result: DoctorResult) -> list[Plot]:
    return [p for p in (occupancy_plot(result), length_plot(result)) if p is not None] + trace_plots(result)


def _b64(p: Plot) -> str:
    return base64.b64encode(p.png).decode("ascii")


def _where(f: Finding) -> str:
    ev = f.evidence
    return ", ".join(f"{k} {v}" for k, v in (("episode", ev.episode), ("frame", ev.frame), ("feature", ev.feature))
                     if v is not None)


def _summary_rows(result: DoctorResult) -> list[tuple[str, str, int, str]]:
    rows = []
    for code in result.checks:
        fs = [f for f in result.findings if f.code == code]
        worst = max((f.severity for f in fs), key=("info", "warning", "error").index, default="ok")
        rows.append((code, CHECKS[code].title, len(fs), worst))
    return rows


def render_markdown(result: DoctorResult, figures: list[Plot] | None = None) -> str:
    figures = plots(result) if figures is None else figures
    scan = result.scan
    lines = [f"# Dataset doctor: `{result.root.name}`", ""]
    if scan is not None:
        lines += [f"{len(scan.episodes)} episodes, {sum(s.length for s in scan.episodes)} frames at "
                  f"{scan.info.fps} fps. Joint limits: {scan.limits.source if scan.limits else 'none'}.", ""]
    lines += ["| check | what | findings | worst |", "|---|---|---:|---|"]
    lines += [f"| {c} | {t} | {n} | {w} |" for c, t, n, w in _summary_rows(result)]
    lines += ["", "## Findings", ""]
    if not result.findings:
        lines.append("No findings.")
    for f in result.findings:
        where = _where(f)
        lines += [f"- **{f.code} {f.severity}**: {f.message}" + (f" ({where})" if where else ""),
                  f"  - fix: {f.fix}"]
    lines += ["", "## Plots", ""]
    for p in figures:
        lines += [f"### {p.title}", "", f"![{p.title}](data:image/png;base64,{_b64(p)})", ""]
    return "\n".join(lines) + "\n"


def render_html(result: DoctorResult, figures: list[Plot] | None = None) -> str:
    figures = plots(result) if figures is None else figures
    esc = html.escape
    scan = result.scan
    parts = ["<!doctype html><html><head><meta charset='utf-8'>",
             f"<title>doctor: {esc(result.root.name)}</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 8px;font-size:14px}.fix{color:#555}</style></head><body>",
             f"<h1>Dataset doctor: <code>{esc(result.root.name)}</code></h1>"]
    if scan is not None:
        parts.append(f"<p>{len(scan.episodes)} episodes, {sum(s.length for s in scan.episodes)} frames at "
                     f"{scan.info.fps} fps. Joint limits: {esc(scan.limits.source if scan.limits else 'none')}.</p>")
    parts.append("<table><tr><th>check</th><th>what</th><th>findings</th><th>worst</th></tr>")
    for c, t, n, w in _summary_rows(result):
        parts.append(f"<tr><td>{c}</td><td>{esc(t)}</td><td>{n}</td>"
                     f"<td style='color:{_COLOURS.get(w, '#1e8449')}'>{w}</td></tr>")
    parts.append("</table><h2>Findings</h2>")
    if not result.findings:
        parts.append("<p>No findings.</p>")
    else:
        parts.append("<table><tr><th>code</th><th>severity</th><th>message</th><th>where</th><th>fix</th></tr>")
        for f in result.findings:
            parts.append(f"<tr><td>{f.code}</td><td style='color:{_COLOURS[f.severity]}'>{f.severity}</td>"
                         f"<td>{esc(f.message)}</td><td>{esc(_where(f))}</td><td class='fix'>{esc(f.fix)}</td></tr>")
        parts.append("</table>")
    parts.append("<h2>Plots</h2>")
    for p in figures:
        parts.append(f"<h3>{esc(p.title)}</h3><img alt='{esc(p.title)}' src='data:image/png;base64,{_b64(p)}'>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(result: DoctorResult, path: str | Path, *, extra_plots: list[Plot] = ()) -> Path:
    """Write the report to `path`: HTML for .html/.htm, Markdown for .md; `extra_plots` go first."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".html", ".htm", ".md", ".markdown"):
        raise DoctorError(f"report {path}: unknown format {suffix!r}; use .html or .md")
    figures = [*extra_plots, *plots(result)]
    if suffix in (".html", ".htm"):
        text = render_html(result, figures)
    else:
        text = render_markdown(result, figures)

    return write_file(path, text)
