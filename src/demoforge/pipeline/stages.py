"""The pipeline's stages, in order: tasks -> scenes -> execute -> render -> merge -> annotate -> bake -> doctor.

Layout of a run folder RUN = OUT_DIR/EXPERIMENT_ID:

    RUN/config.yaml             the fully resolved config
    RUN/tasks/                  domain + problem PDDL + scene sidecars   (demoforge tasks gen)
    RUN/scenes/                 scene package                           (demoforge scenes build)
    RUN/execute/                generate run: success/, failure/, shards (demoforge generate)
    RUN/render/success/         execute/success rendered under the looks (demoforge render)
    RUN/render/ticks/           when the run bakes below the native rate: the ticks the bake keeps, state-only with
                                sim.state, which render/success renders instead (pipeline.baked_render)
    RUN/dataset/train/          the training split (rendered when all its ticks were) (demoforge dataset merge)
    RUN/dataset/failures/       failed episodes, a separate split
    RUN/annotated/              the train split with goal.action, goal.position and goal.visible (pipeline.annotate);
                                when only the baked ticks were rendered, render/success labelled instead
    RUN/baked/                  annotated (else train) baked to control_space, the goal labels kept (demoforge bake;
                                or the annotated render/success without sim.state, videos copied, when only the baked
                                ticks were rendered)
    RUN/doctor/                 doctor.json and report.md on the final dataset (demoforge doctor)
    RUN/logs/execute/<problem>.log, RUN/.pipeline_state/<stage>.done

A run that renders and bakes at a rate below the native one renders only the ticks the bake
keeps (`pipeline.baked_render`): the render stage bakes execute/success state-only and renders
that, the train split stays state-only, annotate labels the rendered ticks, and the bake stage copies
them into RUN/baked. Either way RUN/baked carries the goal labels at the baked rate.

Under `render_schedule: pipelined` the execute stage also renders each problem's successes as soon
as it can, on its own executor, and writes RUN/render/success (and RUN/render/ticks) as the render
stage would (`pipeline.pipelined`); the render stage then finds them finished.

Each stage is `fn(ctx) -> dict` (counts for its marker); `STAGE_OUTPUTS` names what a
restarted stage removes first; stages in `CONTINUES` keep their partial outputs because
they continue them byte-identically themselves (execute and render shards).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demoforge.pipeline.config import PipelineConfig, PipelineError, robot_card, run_domain
from demoforge.pipeline.execution import execute_problems, executor_for
from demoforge.pipeline.run_files import copy_source_meta, problem_files, write_stage_provenance
from demoforge.tasks.scene import SIDECAR_SUFFIX

STAGE_OUTPUTS: dict[str, list[str]] = {
    "tasks": ["tasks"], "scenes": ["scenes"], "execute": ["execute"], "render": ["render"],
    "merge": ["dataset"], "annotate": ["annotated"], "bake": ["baked"], "doctor": ["doctor"],
}
CONTINUES = ("execute", "render")


@dataclass
class RunContext:
    """What the stages share while one run goes."""

    config: PipelineConfig
    run_dir: Path
    echo: Callable[[str], None]
    progress: Callable | None = None
    notes: dict[str, Any] = field(default_factory=dict)  # stage -> what it said for the summary

    def path(self, rel: str) -> Path:
        return self.run_dir / rel


def stage_tasks(ctx: RunContext) -> dict:
    from demoforge.tasks import generate_family, write_tasks

    c, out = ctx.config.tasks, ctx.path("tasks")
    tmp = out.with_name(".tasks.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    if c.problem_files:
        from demoforge.tasks import DOMAINS, domain_text

        tmp.mkdir(parents=True)
        domain = run_domain(ctx.config)
        (tmp / DOMAINS[domain]).write_text(domain_text(domain), encoding="utf-8")
        for p in map(Path, c.problem_files):
            sidecar = p.with_name(p.name.removesuffix(".pddl") + SIDECAR_SUFFIX)
            missing = [str(q) for q in (p, sidecar) if not q.is_file()]
            if missing:
                raise PipelineError(f"problem_files: {missing} do not exist (each problem needs NAME.scene.json)")
            shutil.copyfile(p, tmp / p.name)
            shutil.copyfile(sidecar, tmp / sidecar.name)
    else:
        write_tasks(generate_family(c.family, count=c.problems, seed=c.task_seed, **c.family_options()), tmp)
    tmp.rename(out)
    return {"problems": len(problem_files(ctx))}


def stage_scenes(ctx: RunContext) -> dict:
    from demoforge.scenes import build_scene_package

    c = ctx.config.scenes
    starts = c.robot_start_params()
    manifest = build_scene_package(problem_files(ctx), reset_states=c.reset_states, profiles=c.profiles,
                                   seed=c.seed, out=ctx.path("scenes"), robot=robot_card(ctx.config),
                                   robot_start=starts, domain=run_domain(ctx.config))
    return {"problems": len(manifest.problems)}


def execute_inputs(ctx: RunContext) -> list[str]:
    """The scene package when the scenes stage has built one, else the PDDL problems."""
    if ctx.config.runs("scenes") and (ctx.path("scenes") / "manifest.json").is_file():
        return [str(ctx.path("scenes"))]
    return [str(p) for p in problem_files(ctx)]


def stage_execute(ctx: RunContext) -> dict:
    c = ctx.config
    run_with = pipelined_render(ctx)
    with _executor(ctx) as executor:
        summary = execute_problems(c, execute_inputs(ctx), ctx.path("execute"), ctx.progress, executor=executor,
                                   run_with=run_with)
    ctx.notes["execute"] = (f"{summary.episodes} episodes, {summary.successes} successes, "
                            f"failures by kind {summary.failure_kinds()}")
    return {"episodes": summary.episodes, "successes": summary.successes, "failure_kinds": summary.failure_kinds()}


def pipelined_render(ctx: RunContext) -> Callable | None:
    """What runs generate's stage under `render_schedule: pipelined` (`pipeline.pipelined`), when the run
    renders; None: generate alone (the render stage renders after it)."""
    c = ctx.config
    if c.render_schedule != "pipelined" or not (c.runs("render") and c.render.looks):
        return None
    if c.execute.inline_video() is not None:  # the render stage refuses a source with videos: let it say so
        ctx.echo("execute: render_schedule pipelined does not apply: execute records videos inline; the render "
                 "stage runs after it")
        return None
    from demoforge.pipeline.pipelined import pipelined_run_with

    ticks = bake_config(c) if c.bake.control_space is not None and c.runs("bake") else None
    ctx.notes["render"] = "pipelined with execute"
    return pipelined_run_with(c.render, ticks, ctx.path("render"))


def bake_config(config: PipelineConfig, workers: int = 1):
    """The bake stage's BakeConfig on `workers` local slots (the run's own count may be 'auto')."""
    import dataclasses

    return dataclasses.replace(config.bake, workers=workers)


def bake_models(config):
    """What a bake under `config` (a BakeConfig) rebuilds raw episodes' models with
    (`convert.seams.EpisodeModels`) when it reads them (--filter-idle, --environment-state);
    None when it does not, so a real-robot log bakes without MuJoCo."""
    if not config.reads_models:
        return None
    from demoforge.replay import EPISODE_MODELS  # lazy: MuJoCo only for the options that read rebuilt models

    return EPISODE_MODELS


def renders_baked_ticks(ctx: RunContext) -> bool:
    """True when the run renders only the ticks its bake keeps (`pipeline.baked_render`): it renders
    and bakes, at a rate below the native one."""
    c = ctx.config
    source = ctx.path("execute/success")
    if not (c.render.looks and c.bake.control_space is not None and c.runs("render") and c.runs("bake")
            and (source / "meta/info.json").is_file()):
        return False
    from demoforge.pipeline.baked_render import baked_stride

    return baked_stride(source, bake_config(c)) > 1


def stage_render(ctx: RunContext) -> dict:
    from demoforge.execute import resolve_workers
    from demoforge.render import render_dataset

    c = ctx.config
    if not c.render.looks:
        return {"rendered": False, "reason": "no looks (render.looks; --look LOOK renders)"}
    from demoforge.pipeline.pipelined import PARTS_MERGE

    shutil.rmtree(ctx.path("render") / PARTS_MERGE, ignore_errors=True)  # a killed pipelined run's partial merge
    source = ctx.path("execute/success")
    if not (source / "meta/info.json").is_file():
        raise PipelineError(f"{source}: no successful episodes to render")
    config = c.render
    n_eps = json.loads((source / "meta/info.json").read_text())["total_episodes"]
    ticks = renders_baked_ticks(ctx)
    if ticks:
        from demoforge.pipeline.baked_render import bake_ticks

        source = bake_ticks(source, ctx.path("render/ticks"), bake_config(c))
        ctx.notes["render"] = f"rendered only the ticks the bake keeps ({c.bake.control_freq} Hz)"
    with _executor(ctx) as executor:
        summary = render_dataset(source, ctx.path("render/success"), config, workers=resolve_workers(c.workers, n_eps),
                                 executor=executor)
    return {"rendered": True, "episodes": summary.episodes, "frames": summary.frames,
            "ticks": "baked" if ticks else "native"}


def train_sources(ctx: RunContext) -> list[Path]:
    rendered = ctx.path("render/success")
    if ctx.config.runs("render") and ctx.config.render.looks and (rendered / "meta/info.json").is_file() \
            and not renders_baked_ticks(ctx):  # else render/success holds only the baked ticks
        return [rendered]
    source = ctx.path("execute/success")
    if not (source / "meta/info.json").is_file():
        raise PipelineError(f"{source}: execution produced no successful episodes; nothing to train on")
    return [source]


def merge_datasets(sources: list[Path], out: Path):
    """`sources` merged in order into `out` by the merge stage (`demoforge.stage.merge`); its info."""
    from demoforge.dataset import open_dataset
    from demoforge.stage import run_stage
    from demoforge.stage.merge import MergeStage

    run_stage(MergeStage(tuple(Path(s) for s in sources)), out)  # guards OUT against the sources
    return open_dataset(out).info


def stage_merge(ctx: RunContext) -> dict:
    out = ctx.path("dataset")
    out.mkdir(parents=True, exist_ok=True)
    sources = train_sources(ctx)
    info = merge_datasets(sources, out / "train")
    copy_source_meta(sources[0], out / "train")
    write_stage_provenance(ctx, out / "train", sources, "merge")
    record = {"train_episodes": info.total_episodes, "failure_episodes": 0}
    failures = ctx.path("execute/failure")
    if (failures / "meta/info.json").is_file():
        finfo = merge_datasets([failures], out / "failures")
        copy_source_meta(failures, out / "failures")
        write_stage_provenance(ctx, out / "failures", [failures], "merge")
        record["failure_episodes"] = finfo.total_episodes
    ctx.notes["merge"] = f"train {record['train_episodes']} episodes, failures {record['failure_episodes']}"
    return record


def _executor(ctx: RunContext):
    """Where a stage's work items run: the run's backend (`execution.executor_for`)."""
    return executor_for(ctx.config.backend, ctx.config.ray_address)


def _workers(ctx: RunContext, source: Path) -> int:
    """The run's worker slots for a stage over the episodes of `source`."""
    from demoforge.execute import resolve_workers

    return resolve_workers(ctx.config.workers, json.loads((source / "meta/info.json").read_text())["total_episodes"])


def annotate_source(ctx: RunContext) -> tuple[Path, Path | None]:
    """What the annotate stage labels, and the raw dataset its rows were baked from (None: its rows
    are native ticks): the train split, or RUN/render/success when only the baked ticks were
    rendered (the train split then has no video; those rows are execute/success's kept ticks)."""
    if renders_baked_ticks(ctx):
        return ctx.path("render/success"), ctx.path("execute/success")
    return ctx.path("dataset/train"), None


def stage_annotate(ctx: RunContext) -> dict:
    from demoforge.pipeline.annotate import annotate_dataset

    source, native = annotate_source(ctx)
    out = ctx.path("annotated")
    with _executor(ctx) as executor:
        record = annotate_dataset(source, out, native=native, warn=ctx.echo, workers=_workers(ctx, source),
                                  executor=executor)
    copy_source_meta(source, out)
    write_stage_provenance(ctx, out, [source], "annotate")
    ctx.notes["annotate"] = (f"goal labels at {record['rows']} of {source.relative_to(ctx.run_dir).as_posix()}, "
                             f"cameras {record['cameras']}")
    return record


def labelled(ctx: RunContext) -> Path | None:
    """RUN/annotated when the annotate stage wrote it (the bake's source then), else None."""
    out = ctx.path("annotated")
    return out if ctx.config.runs("annotate") and (out / "meta/info.json").is_file() else None


def with_labels(config, source: Path):
    """`config` (a BakeConfig) also keeping the goal labels `source` has: the run's bake carries
    annotate's columns without being asked (`--keep all` carries them already)."""
    import dataclasses

    from demoforge.convert.config import KEEP_ALL
    from demoforge.dataset import open_dataset
    from demoforge.pipeline.annotate import LABEL_KEYS

    if KEEP_ALL in config.keep:
        return config
    have = open_dataset(source).info.features
    extra = tuple(k for k in LABEL_KEYS if k in have and k not in config.keep)
    return dataclasses.replace(config, keep=(*config.keep, *extra))


def stage_bake(ctx: RunContext) -> dict:
    from demoforge.convert import bake

    c = ctx.config
    if c.bake.control_space is None:
        return {"baked": False, "reason": "no control_space (bake.control_space; --control-space NAME bakes)"}
    annotated = labelled(ctx)
    if renders_baked_ticks(ctx):
        from demoforge.pipeline.baked_render import write_baked

        rendered = annotated or ctx.path("render/success")
        write_baked(rendered, ctx.path("render/ticks"), ctx.path("execute/success"), ctx.path("baked"), bake_config(c))
        write_stage_provenance(ctx, ctx.path("baked"), [rendered], "bake")
        return {"baked": True, "convention": c.bake.control_space, "videos": "copied from the rendered baked ticks",
                "source": rendered.relative_to(ctx.run_dir).as_posix()}
    source = annotated or ctx.path("dataset/train")
    config = with_labels(bake_config(c, _workers(ctx, source)), source)
    with _executor(ctx) as executor:
        bake([source], ctx.path("baked"), config, executor=executor, models=bake_models(config))
    write_stage_provenance(ctx, ctx.path("baked"), [source], "bake")
    return {"baked": True, "convention": c.bake.control_space, "source": source.relative_to(ctx.run_dir).as_posix()}


def final_dataset(ctx: RunContext) -> Path:
    """The run's training dataset: baked when the bake stage wrote one, else the annotated
    one, else the merged train split."""
    for stage, rel in (("bake", "baked"), ("annotate", "annotated")):
        if ctx.config.runs(stage) and (ctx.path(rel) / "meta/info.json").is_file():
            return ctx.path(rel)
    train = ctx.path("dataset/train")
    if (train / "meta/info.json").is_file():
        return train
    return ctx.path("execute/success")


def doctor_summary(result) -> str:
    sev = result.to_json()["severities"]
    worst = result.worst() or "none"
    return f"doctor: {sev['error']} errors, {sev['warning']} warnings, {sev['info']} info (worst: {worst})"


def stage_doctor(ctx: RunContext) -> dict:
    from demoforge.dataset.layout import write_json_atomic
    from demoforge.doctor import run_doctor, write_report

    root = final_dataset(ctx)
    # A card file gives the doctor the joint limits; a built-in robot is named by the dataset's
    # robot_type, which the doctor reads itself.
    robot = ctx.config.robot
    options = ctx.config.doctor
    result = run_doctor(root, robot=robot if robot is not None and robot.endswith((".yaml", ".yml")) else None,
                        config=options, checks=options.checks)
    out = ctx.path("doctor")
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "doctor.json", result.to_json())
    write_report(result, out / "report.md")
    lines = [doctor_summary(result)] + [f"  {f}" for f in result.findings if f.severity != "info"]
    ctx.notes["doctor"] = "\n".join(lines)
    record = {"dataset": root.relative_to(ctx.run_dir).as_posix(), **result.to_json()["severities"]}
    if options.fail_on and result.failed(options.fail_on):
        record["failed"] = True
    return record


STAGE_FUNCTIONS: dict[str, Callable[[RunContext], dict]] = {
    "tasks": stage_tasks, "scenes": stage_scenes, "execute": stage_execute, "render": stage_render,
    "merge": stage_merge, "annotate": stage_annotate, "bake": stage_bake, "doctor": stage_doctor,
}
