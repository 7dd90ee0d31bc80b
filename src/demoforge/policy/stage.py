"""Roll-outs and evaluations as stages (`demoforge.stage`): workers, resume, one merge.

The episodes of a run, in canonical order, are cut into contiguous work items (`chunks`, not
depending on the worker count); each item runs its episodes with `run_policy` into its own shard,
and the shards are merged in order into OUT/dataset, whose summary is then counted from the
merged episodes. So the bytes do not depend on `--workers`, a killed run keeps its finished
items and the same command resumes it, and a worker's progress arrives as `ProgressEvent`s.

OUT is the stage's run folder (its `dataset`): `run_stage` guards it as a whole, refusing an OUT
over or inside an input, a file, or one holding anything but this run (its work folder while it
runs; a run killed before the stage, `resumable`, is started over); this run finished is returned
by `finished` (its summary, written again when a kill came between the dataset and it).

A worker builds its episodes from the run's inputs (`plan`, a module-level function and its
plain arguments) and loads the policy from its spec: a live policy object stays in the process
that made it, so more than one worker needs the policy as a spec (`PolicyLoad`).
"""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

from demoforge.dataset import merge_datasets, open_dataset
from demoforge.dataset.keys import row_extra
from demoforge.dataset.layout import DEMOFORGE_META_DIR, write_json_atomic
from demoforge.dataset.locks import restart_killed
from demoforge.policy.adapters import load_policy
from demoforge.policy.driver import run_policy
from demoforge.policy.like import like
from demoforge.policy.metrics import Tally, summary_json, summary_markdown
from demoforge.policy.protocol import Policy, PolicyError
from demoforge.stage import MergeAtEnd, Progress, chunks, run_stage
from demoforge.stage.local import LocalExecutor
from demoforge.stage.runner import publish_dataset

DATASET = "dataset"  # OUT/dataset
RUN_DIR = "run"  # SHARD/run: one item's run_policy output (its dataset and summary)
METRICS = ("success", "partial_success", "completion_ratio", "full_completion", "alive_ratio")
# a killed run's OUT from before the stage (its dataset unfinished, no summary) is started over
restart_killed_run = functools.partial(restart_killed, writes={DATASET}, finished="summary.json")


@dataclass(frozen=True)
class PolicyLoad:
    """How a worker loads the policy: `load_policy(spec, **kwargs)`, under `--like like`."""

    spec: str
    kwargs: dict = field(default_factory=dict)
    like: str | None = None

    def load(self) -> Policy:
        policy = load_policy(self.spec, **self.kwargs)
        if self.like is None:
            return policy
        return like(policy, self.like)


@dataclass(frozen=True)
class Plan:
    """What every item of a run shares, rebuilt in each worker by `build(**args)`:
    (tasks, problems, layout, queue, extra)."""

    build: Callable[..., tuple]  # a module-level function (pickled by name)
    args: dict  # its plain arguments (paths, settings, seeds)


@dataclass
class PolicyStage:
    """A roll-out or an evaluation as a stage (see the module docstring)."""

    name: str  # "rollout" or "eval"
    plan: Plan
    load: PolicyLoad | None  # None: `live` only (one worker)
    episodes: int  # episodes of the run (the plan's queue length)
    settings: Any  # RolloutSettings
    envs: int
    seed: int
    spec: str  # the policy as the summary names it
    title: str
    look: Any = None  # policy.looks.EvalLook
    randomization: Any = None
    live: Policy | None = None  # the caller's policy object, or the one a worker loaded (never pickled)
    built: tuple | None = None  # `plan.build`'s result in this process (never pickled: it holds live scenes)
    reads: tuple[str, ...] = ()  # the paths the run reads (problems or source dataset, --like): never under OUT
    names: tuple[str, ...] = ()  # the problems in the summary's order
    more: Callable[[Path], tuple[dict, str]] | None = None  # more(dataset): further figures, their SUMMARY.md part
    check: Callable[[list], None] | None = None  # check(problems) once OUT is guarded (roll-out: `check_goals`)
    error: ClassVar[type] = PolicyError
    dataset: ClassVar[str] = DATASET  # OUT is a run folder: the dataset, its summary (`run_stage`'s `published`)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "live": None, "built": None}  # a worker loads and builds its own

    def parts(self) -> list[range]:
        return chunks(self.episodes)

    def fingerprint(self) -> dict:
        from dataclasses import asdict

        return {"stage": self.name, "policy": self.spec, "load": None if self.load is None else asdict(self.load),
                "plan": f"{self.plan.build.__module__}.{self.plan.build.__qualname__}",
                "args": _plain(self.plan.args), "envs": self.envs, "seed": self.seed, "settings": _plain(self.settings),
                "look": None if self.look is None else _plain(self.look),
                "randomization": _plain(self.randomization)}

    def inputs(self) -> tuple[str, ...]:
        return self.reads

    def finished(self, out: Path) -> dict:
        """This run's summary: OUT/dataset is this run, published (the summary written once more
        when a kill came before it)."""
        import json

        if not (out / "summary.json").is_file():
            return write_summary(self, out)
        return json.loads((out / "summary.json").read_text(encoding="utf-8"))

    def resumable(self, out: Path) -> bool:
        return restart_killed_run(out)  # a run from before the stage: started over

    def prepare(self) -> None:
        """Load the policy and check the problems before any work: a bad one is named first."""
        if self.live is None:
            self.live = self.load.load()
        if self.check is not None:
            self.check(self.built[1])

    def items(self) -> list[str]:
        return [f"episodes-{r.start}-{r.stop - 1}" for r in self.parts()]

    def total(self) -> int:
        return self.episodes

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        part = self.parts()[k]
        run = shard / RUN_DIR
        shutil.rmtree(run, ignore_errors=True)  # an item a kill interrupted starts over
        if self.built is None:  # once per process: every item of it runs from the same episodes
            self.built = self.plan.build(**self.plan.args)
        tasks, problems, layout, queue, extra = self.built
        if self.live is None:  # a worker loads the policy once too
            self.live = self.load.load()
        policy = self.live

        run_policy(policy, tasks, problems, layout, queue[part.start:part.stop], run, envs=self.envs, seed=self.seed,
                   settings=self.settings, spec=self.spec, extra=extra, progress=progress,
                   randomization=self.randomization, look=self.look, stage=self.name)
        return {"episodes": len(part)}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: self._merge(shards, out))

    def _merge(self, shards: list[Path], out: Path) -> dict:
        merged = shards[0].parent.parent / "merged"  # in the work folder: OUT/dataset appears whole or not at all
        shutil.rmtree(merged, ignore_errors=True)
        if len(shards) == 1:
            shutil.copytree(shards[0] / RUN_DIR / DATASET, merged)
        else:
            merge_datasets([s / RUN_DIR / DATASET for s in shards], merged)
            (merged / DEMOFORGE_META_DIR / "merge.json").unlink(missing_ok=True)
            # the raw contract (controller, vocabulary, scenes, provenance) is the run's: every shard's is the same
            meta = shards[0] / RUN_DIR / DATASET / DEMOFORGE_META_DIR
            for path in meta.rglob("*"):
                target = merged / DEMOFORGE_META_DIR / path.relative_to(meta)
                if path.is_file() and not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)
        publish_dataset(merged, out / DATASET, self.name, self.fingerprint())
        return write_summary(self, out)


def _plain(value: Any) -> Any:
    """`value` as JSON-able data for a fingerprint (dataclasses, paths, tuples)."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def episode_metrics(row) -> dict:
    """The metrics a roll-out or evaluation recorded with an episode (its row of meta/episodes)."""
    return {m: row_extra(row, m) for m in METRICS}


def count_summary(dataset: Path, header: dict, names: list[str] = ()) -> dict:
    """summary.json of a run, counted from its dataset's episodes (problems in `names` order,
    then any other in order of appearance)."""
    tallies = {n: Tally() for n in names}
    reader = open_dataset(dataset)
    for k in reader.episode_indices:
        row = reader.episode(k)
        tallies.setdefault(row_extra(row, "problem"), Tally()).add(episode_metrics(row))
    return summary_json(tallies, header)


def summary_header(stage: PolicyStage) -> dict:
    return {"title": stage.title, "policy": stage.spec, "dataset": DATASET, "warmup_ticks": stage.settings.warmup,
            "reference_ticks": stage.settings.horizon}


def write_summary(stage: PolicyStage, out: Path) -> dict:
    """Count OUT's summary from OUT/dataset (and `stage.more`'s figures); write SUMMARY.md, then
    summary.json, which marks the run finished; return it."""
    summary = count_summary(out / DATASET, summary_header(stage), list(stage.names))
    figures, section = stage.more(out / DATASET) if stage.more is not None else ({}, "")
    summary.update(figures)
    (out / "SUMMARY.md").write_text(summary_markdown(summary) + section, encoding="utf-8")
    write_json_atomic(out / "summary.json", summary)  # last: it marks the run finished
    return summary


def run_policy_stage(stage: PolicyStage, out: Path, *, workers: int, progress: Progress | None = None) -> dict:
    """Run `stage` into its run folder OUT on `workers` local slots (`run_stage` guards OUT, and
    returns a finished run's summary as it is); return OUT's summary."""
    if workers > 1 and stage.load is None:
        raise PolicyError(f"policy {stage.spec!r}: --workers {workers} loads the policy in each worker, so give it "
                          "as a spec (expert, PATH.onnx, replay:DATASET, module:factory, file.py:factory), not "
                          "as an object")
    with LocalExecutor(min(workers, len(stage.parts()))) as local:
        return run_stage(stage, out, executor=local, progress=progress)
