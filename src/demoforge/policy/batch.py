"""The evaluation batch: policies x checkpoints x tasks from one YAML spec, one summary.

    demoforge eval-batch batch.yaml --out OUT [--score-only] [--limit N]

```yaml
policies:                         # name -> a policy as --policy, --policy-arg and --like take it
  expert: {spec: expert}
  mine:
    spec: my_policies.py:make     # "{checkpoint}" in spec or args is replaced by each checkpoint
    args: {path: "ckpt/{checkpoint}"}
    checkpoints: [3000, 6000]     # runs named mine@3000, mine@6000
    like: out/baked               # optional: act under that baked dataset's convention and rate
tasks:                            # name -> a problem set
  pnp: {family: pnp, split: test, count: 10, seed: 7, episodes: 1}
  mine: {problems: [tasks/a.pddl, tasks/b.pddl], episodes: 2}
  recorded: {from_dataset: out/run/success, episodes: [0, 1, 2], start: "first,random"}
reference:                        # optional: task -> figures to print beside the measured ones
  pnp: {success_rate: 0.84, full_completion_rate: 0.84}
settings: {max_ticks: 1200, envs: 1, seed: 0, workers: 2}  # workers: processes per run
```

Each (policy, task) run is a roll-out (`problems`, `family`) or an evaluation from recorded
states (`from_dataset`) in OUT/runs/<policy>/<task>/, with its own dataset and summary. A run
is finished when its summary.json exists; a rerun skips finished runs, so a killed batch resumes
where it stopped, and OUT/summary.json and SUMMARY.md are rewritten from every finished run's
dataset (the same bytes for the same runs). `--score-only` runs nothing and re-scores what is
finished; `--limit N` runs at most N unfinished runs in this call. Relative paths in the spec
are read from the spec's folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from demoforge.dataset.layout import write_json_atomic
from demoforge.dataset.guard import guard_output_dir
from demoforge.fields import option
from demoforge.policy.protocol import PolicyError
from demoforge.tasks.package import task_packages_option

SPEC_COPY = "batch.yaml"  # the spec as given, kept in OUT: a rerun must give the same
FIGURES = ("success_rate", "partial_success", "full_completion_rate", "mean_completion")
TASK_KEYS = {"family": {"family", "split", "count", "seed", "episodes"},
             "problems": {"problems", "episodes"},
             "from_dataset": {"from_dataset", "episodes", "start", "seed"}}
SETTINGS = {"max_ticks": 1200, "envs": 1, "seed": 0, "workers": 1}  # max_ticks: RolloutSettings' default


@dataclass(frozen=True)
class BatchRunConfig:
    """`demoforge eval-batch`'s options (`demoforge.fields`: its flags are generated from these fields)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the scenes rebuilt may be a package's
    score_only: bool = option(False, "Run nothing: re-score the finished runs in OUT.")
    limit: int | None = option(None, "Run at most this many unfinished (policy, task) runs in this call.",
                               kind="int", range=(1, 1_000_000))


@dataclass(frozen=True)
class PolicyRun:
    """One policy at one checkpoint."""

    name: str  # policy name, "@checkpoint" appended when it has checkpoints
    spec: str  # as --policy takes it
    args: dict = field(default_factory=dict)  # the factory's keyword arguments
    like: Path | None = None  # a baked dataset to act under (--like)


@dataclass(frozen=True)
class TaskSet:
    """One problem set: its kind (a key of TASK_KEYS) and its keys as given."""

    name: str
    kind: str
    keys: dict


@dataclass(frozen=True)
class BatchSpec:
    """A parsed, checked batch spec."""

    file: Path
    policies: tuple[PolicyRun, ...]
    tasks: tuple[TaskSet, ...]
    reference: dict  # task -> {figure: value}
    settings: dict  # SETTINGS, as given


def _fail(file: Path, where: str, what: str) -> PolicyError:
    return PolicyError(f"{file}: {where}: {what}")


def _mapping(file: Path, value: Any, where: str) -> dict:
    if not isinstance(value, dict) or not value:
        raise _fail(file, where, f"must be a non-empty mapping, got {type(value).__name__} {value!r:.60}")
    return value


def _fill(value: Any, checkpoint: str) -> Any:
    if isinstance(value, str):
        return value.replace("{checkpoint}", checkpoint)
    if isinstance(value, dict):
        return {k: _fill(v, checkpoint) for k, v in value.items()}
    return value


def _entries(file: Path, raw: Any, section: str):
    """(name, where, entry) of each named entry of a spec section, every one a mapping."""
    for name, entry in _mapping(file, raw, section).items():
        where = f"{section}.{name}"
        yield name, where, _mapping(file, entry, where)


def _policies(file: Path, raw: dict) -> list[PolicyRun]:
    out = []
    for name, where, entry in _entries(file, raw, "policies"):
        unknown = set(entry) - {"spec", "args", "checkpoints", "like"}
        if unknown or not isinstance(entry.get("spec"), str):
            raise _fail(file, where, f"needs spec (a string) and may have args, checkpoints, like; got keys "
                                     f"{sorted(entry)}")
        args = entry.get("args") or {}
        if not isinstance(args, dict):
            raise _fail(file, f"{where}.args", f"must be a mapping, got {type(args).__name__}")
        like = None if entry.get("like") is None else (file.parent / str(entry["like"]))
        if like is not None and not like.is_dir():
            raise _fail(file, f"{where}.like", f"{like} is not a baked dataset folder")
        checkpoints = entry.get("checkpoints")
        if checkpoints is None:
            out.append(PolicyRun(str(name), entry["spec"], args, like))
            continue
        if not isinstance(checkpoints, list) or not checkpoints:
            raise _fail(file, f"{where}.checkpoints", f"must be a non-empty list, got {checkpoints!r:.60}")
        if "{checkpoint}" not in json.dumps([entry["spec"], args]):
            raise _fail(file, where, "has checkpoints but neither spec nor args mention {checkpoint}")
        out.extend(PolicyRun(f"{name}@{c}", _fill(entry["spec"], str(c)), _fill(args, str(c)), like)
                   for c in checkpoints)
    return out


def _tasks(file: Path, raw: dict) -> list[TaskSet]:
    out = []
    for name, where, entry in _entries(file, raw, "tasks"):
        kinds = [k for k in TASK_KEYS if k in entry]
        if len(kinds) != 1:
            raise _fail(file, where, f"needs exactly one of {', '.join(TASK_KEYS)}; got keys {sorted(entry)}")
        unknown = set(entry) - TASK_KEYS[kinds[0]]
        if unknown:
            raise _fail(file, where, f"unknown keys {sorted(unknown)} for a {kinds[0]} task; it takes "
                                     f"{sorted(TASK_KEYS[kinds[0]])}")
        _check_task(file, where, kinds[0], entry)
        out.append(TaskSet(str(name), kinds[0], dict(entry)))
    return out


def _check_task(file: Path, where: str, kind: str, entry: dict) -> None:
    """What can be checked before anything runs: paths exist, the family is known, counts are counts."""
    from demoforge.tasks.families import FAMILIES

    paths = {"problems": entry.get("problems"), "from_dataset": [entry.get("from_dataset")]}.get(kind, [])
    if kind != "family" and (not isinstance(paths, list) or not paths):
        raise _fail(file, f"{where}.{kind}", f"must be a path or a list of paths, got {paths!r:.60}")
    missing = [str(p) for p in paths if not (file.parent / str(p)).exists()]
    if missing:
        raise _fail(file, f"{where}.{kind}", f"not found: {', '.join(missing)} (relative to {file.parent})")
    if kind == "family" and entry["family"] not in FAMILIES:
        raise _fail(file, f"{where}.family", f"unknown family {entry['family']!r}; families: {', '.join(FAMILIES)}")
    counts = {k: entry[k] for k in ("count", "seed") if k in entry}
    if kind != "from_dataset" and "episodes" in entry:
        counts["episodes"] = entry["episodes"]
    least = {"count": 1, "episodes": 1, "seed": 0}
    bad = {k: v for k, v in counts.items() if not isinstance(v, int) or isinstance(v, bool) or v < least[k]}
    episodes = entry.get("episodes") if kind == "from_dataset" else []
    if bad or not (episodes is None or isinstance(episodes, list) and all(isinstance(e, int) for e in episodes)):
        raise _fail(file, where, f"{bad or {'episodes': episodes}} must be whole numbers (count and episodes >= 1, "
                                 "seed >= 0; a from_dataset task's episodes: a list of episode indices)")


def load_batch(file: str | Path) -> BatchSpec:
    """Parse and check a batch spec; every name is checked to be a plain folder name."""
    file = Path(file)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PolicyError(f"{file}: batch spec not found") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{file}: not valid YAML: {exc}") from None
    raw = _mapping(file, raw, "the spec")
    unknown = set(raw) - {"policies", "tasks", "reference", "settings"}
    if unknown:
        raise _fail(file, "top level", f"unknown keys {sorted(unknown)}; keys: policies, tasks, reference, settings")
    settings = {**SETTINGS, **(raw.get("settings") or {})}
    bad = {k: v for k, v in settings.items() if k not in SETTINGS or not isinstance(v, int) or isinstance(v, bool)
           or v < (0 if k == "seed" else 1)}
    if bad:
        raise _fail(file, "settings", f"{bad} not allowed; settings are {SETTINGS} (integers, all but seed >= 1)")
    policies, tasks = _policies(file, raw.get("policies")), _tasks(file, raw.get("tasks"))
    for what, names in (("policies", [p.name for p in policies]), ("tasks", [t.name for t in tasks])):
        odd = [n for n in names if not n or "/" in n or n.startswith(".")]
        if odd or len(set(names)) != len(names):
            raise _fail(file, what, f"names must be distinct plain folder names; got {names}")
    reference = raw.get("reference") or {}
    if not isinstance(reference, dict) or set(reference) - {t.name for t in tasks}:
        raise _fail(file, "reference", f"must map task names ({', '.join(t.name for t in tasks)}) to figures")
    return BatchSpec(file, tuple(policies), tuple(tasks), reference, settings)


def _problems(spec: BatchSpec, task: TaskSet, out: Path) -> list[Path]:
    """The PDDL files of a `problems` or `family` task (a family's written under OUT/tasks/<task>)."""
    if task.kind == "problems":
        return [spec.file.parent / str(p) for p in task.keys["problems"]]
    from demoforge.tasks import DOMAINS, generate_family, write_tasks

    k = task.keys
    made = generate_family(str(k["family"]), count=int(k.get("count", 10)), seed=int(k.get("seed", 0)),
                           split=str(k.get("split", "test")))
    paths = write_tasks(made, out / "tasks" / task.name)
    domains = set(DOMAINS.values())
    return sorted(p for p in paths if p.suffix == ".pddl" and p.name not in domains)


def _run(spec: BatchSpec, policy: PolicyRun, task: TaskSet, out: Path, run_dir: Path) -> None:
    from demoforge.policy.settings import RolloutSettings

    loaded = {"policy": policy.spec, "policy_kwargs": policy.args, "like": policy.like,
              "workers": spec.settings["workers"]}  # each worker loads the policy from its spec
    settings = RolloutSettings(max_ticks=spec.settings["max_ticks"])
    envs, seed = spec.settings["envs"], spec.settings["seed"]
    if task.kind == "from_dataset":
        from demoforge.policy.evaluate import evaluate_from_dataset
        from demoforge.policy.starts import parse_starts

        k = task.keys
        evaluate_from_dataset(root=spec.file.parent / str(k["from_dataset"]), out=run_dir, episodes=k.get("episodes"),
                              envs=envs, settings=settings, starts=parse_starts(str(k.get("start", "first"))),
                              seed=int(k.get("seed", seed)), **loaded)
    else:
        from demoforge.policy.rollout import rollout

        rollout(inputs=_problems(spec, task, out), out=run_dir, episodes=int(task.keys.get("episodes", 1)), envs=envs,
                seed=seed, settings=settings, **loaded)


def score_run(run_dir: Path) -> dict:
    """A finished run's figures, recomputed from its dataset's episode records."""
    from demoforge.policy.stage import count_summary

    return count_summary(run_dir / "dataset", {})["overall"]


def _same_spec(spec: BatchSpec, out: Path) -> bool:
    kept = out / SPEC_COPY
    return kept.is_file() and kept.read_bytes() == spec.file.read_bytes()


def run_batch(spec: BatchSpec, out: str | Path, *, score_only: bool = False, limit: int | None = None,
              progress=None) -> dict:
    """Run the unfinished (policy, task) runs (at most `limit`; none when `score_only`), then
    write OUT/summary.json and OUT/SUMMARY.md from every finished run. Returns the summary."""
    out = Path(out)
    inputs = [spec.file, *(p.like for p in spec.policies if p.like is not None)]
    # OUT holds several runs, not one stage's output: the batch guards it; run_stage guards each run in it
    guard_output_dir(out, inputs, error=PolicyError, resumable=lambda o: _same_spec(spec, o))
    if score_only and not _same_spec(spec, out):
        raise PolicyError(f"--score-only: {out} holds no batch run of {spec.file}; run it without --score-only first")
    out.mkdir(parents=True, exist_ok=True)
    (out / SPEC_COPY).write_bytes(spec.file.read_bytes())
    ran = 0
    for policy in spec.policies:
        for task in spec.tasks:
            run_dir = out / "runs" / policy.name / task.name
            if score_only or (run_dir / "summary.json").is_file() or (limit is not None and ran >= limit):
                continue
            if progress:
                progress(f"{policy.name} on {task.name}")
            _run(spec, policy, task, out, run_dir)
            ran += 1
    summary = summarize(spec, out)
    write_json_atomic(out / "summary.json", summary)
    (out / "SUMMARY.md").write_text(summary_markdown(summary), encoding="utf-8")
    return summary


def summarize(spec: BatchSpec, out: Path) -> dict:
    """Per policy: each task's figures (or "pending") beside its reference, and the total over
    its finished tasks (weighted by episodes)."""
    policies = {}
    for policy in spec.policies:
        tasks, total = {}, {"episodes": 0, **{f: 0.0 for f in FIGURES}}
        for task in spec.tasks:
            run_dir = out / "runs" / policy.name / task.name
            if not (run_dir / "summary.json").is_file():
                tasks[task.name] = {"status": "pending"}
                continue
            figures = score_run(run_dir)
            tasks[task.name] = {"status": "done", **figures}
            total["episodes"] += figures["episodes"]
            for f in FIGURES:
                total[f] += figures[f] * figures["episodes"]
        n = max(total["episodes"], 1)
        policies[policy.name] = {"spec": policy.spec, "tasks": tasks,
                                 "total": {"episodes": total["episodes"], **{f: total[f] / n for f in FIGURES}}}
    return {"spec": spec.file.name, "policies": policies, "reference": spec.reference}


def _cell(value: float | None, ref: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" + ("" if ref is None else f" (ref {ref:.3f})")


def summary_markdown(summary: dict) -> str:
    """SUMMARY.md: one table per policy, a row per task and the total."""
    lines = [f"# Evaluation batch `{summary['spec']}`", ""]
    for name, p in summary["policies"].items():
        lines += [f"## {name}", "", f"policy: `{p['spec']}`", "",
                  "| task | episodes | success rate | partial success | full completion | mean completion |",
                  "|---|---|---|---|---|---|"]
        for task, t in [*p["tasks"].items(), ("**total**", {"status": "done", **p["total"]})]:
            ref = summary["reference"].get(task, {})
            if t["status"] == "pending":
                lines.append(f"| {task} | pending | - | - | - | - |")
                continue
            lines.append(f"| {task} | {t['episodes']} | " + " | ".join(
                _cell(t[f], ref.get(f)) for f in ("success_rate", "partial_success", "full_completion_rate",
                                                  "mean_completion")) + " |")
        lines.append("")
    return "\n".join(lines)
