"""The adversarial catalogue: hostile inputs and faults for every `demoforge` command.

Each case runs the command in-process (typer's CliRunner, through the real top-level app and
its one error handler) and asserts: the exit code (2 for bad input and environment faults, 1
where a command reports findings), a message naming what is wrong, no traceback, no input
changed (every shared input and every file the case made is hashed before and after), and
nothing half-written (no output folder after a refusal, no temporary folder left anywhere).

A case is (id, argv, exit code, text the output must contain, setup). `argv` is formatted
with the shared inputs ({raw}, {rendered}, {baked}, {tasks}, {problem}, {scenepkg}, {spec}),
the case's own folder {tmp}, and what its setup returns; {out} is {tmp}/out, which a refused
case must not create.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from tests.adversarial.conftest import tree_hash

LATIN1 = "(define (problem caf\xe9) ; \xe9t\xe9\n".encode("latin-1")
TEMP_MARKS = (".partial", ".bake-partial", ".merge-partial", "-shards", ".demoforge-staging", ".merging")


# ---- setups: each makes hostile inputs under `tmp` and returns extra placeholders ----

def _copy(world, name: str, tmp: Path, as_: str = "ds") -> Path:
    dst = tmp / as_
    shutil.copytree(world[name], dst)
    return dst


def _info_edit(**changes):
    def setup(world, tmp):
        ds = _copy(world, "raw", tmp)
        info = json.loads((ds / "meta" / "info.json").read_text())
        info.update(changes)
        (ds / "meta" / "info.json").write_text(json.dumps(info))
        return {"ds": ds}
    return setup


def _info_bytes(data: bytes, name: str = "raw"):
    def setup(world, tmp):
        ds = _copy(world, name, tmp)
        (ds / "meta" / "info.json").write_bytes(data)
        return {"ds": ds}
    return setup


def _file(name: str, data: bytes | str):
    def setup(world, tmp):
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return {"f": path}
    return setup


def _problem(pddl: bytes | str | None = None, sidecar: bytes | str | None = None, name: str = "p"):
    """A copy of the shared problem (and sidecar), either replaced by the bytes given."""
    def setup(world, tmp):
        src = world["problem"]
        text = src.read_text()
        dst = tmp / f"{name}.pddl"
        dst.write_bytes(pddl.encode() if isinstance(pddl, str) else pddl if pddl is not None else text.encode())
        car = src.with_name(src.name.removesuffix(".pddl") + ".scene.json").read_bytes()
        (tmp / f"{name}.scene.json").write_bytes(sidecar.encode() if isinstance(sidecar, str) else
                                                 sidecar if sidecar is not None else car)
        return {"p": dst}
    return setup


def _renamed_problem(new_name: str):
    def setup(world, tmp):
        text = world["problem"].read_text().replace("pnp-all-0000", new_name, 1)
        return _problem(pddl=text)(world, tmp)
    return setup


def _goal(goal: str):
    """The shared problem with its goal replaced."""
    def setup(world, tmp):
        text = world["problem"].read_text()
        start = text.index("(:goal")
        depth, end = 0, start
        for end in range(start, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        return _problem(pddl=text[:start] + f"(:goal {goal})" + text[end + 1:])(world, tmp)
    return setup


def _nonempty_out(world, tmp):
    (tmp / "out").mkdir()
    (tmp / "out" / "keep.txt").write_text("precious")
    return {}


def _out_file(world, tmp):
    (tmp / "out").write_text("a file")
    return {}


def _both(*setups):
    def setup(world, tmp):
        extra = {}
        for s in setups:
            extra.update(s(world, tmp) or {})
        return extra
    return setup


def _run_first(argv: list[str]):
    """Run `argv` once (it must succeed) before the case runs it again."""
    def setup(world, tmp):
        res = CliRunner().invoke(app, [a.format(**_names(world, tmp)) for a in argv])
        assert res.exit_code == 0, res.output
        return {}
    return setup


def _look(text: bytes | str):
    return _file("look.yaml", text)


def _names(world, tmp, extra=None) -> dict:
    return {**{k: str(v) for k, v in world.items()}, "tmp": str(tmp), "out": str(tmp / "out"),
            **{k: str(v) for k, v in (extra or {}).items()}}


# ---- the catalogue ----

C = []


def case(id_, argv, code=2, needle=None, setup=None, out_may_exist=False):
    C.append(pytest.param(argv, code, needle, setup, out_may_exist, id=id_))


# generate
GEN = ["generate", "{problem}", "--episodes-per-problem", "1", "--out", "{out}"]
case("gen-seed-negative", GEN + ["--seed", "-5"], needle="seed")
case("gen-record-videos-unknown", GEN + ["--record-videos", "nosuch"], needle="nosuch")
case("gen-record-videos-empty", GEN + ["--record-videos", ","], needle="--record-videos")
case("gen-record-videos-twice", GEN + ["--record-videos", "front,front"], needle="distinct")
case("gen-look-unknown", GEN + ["--record-videos", "front", "--video-look", "nosuch"], needle="nosuch")
case("gen-look-latin1", GEN + ["--record-videos", "front", "--video-look", "{f}"], needle="look.yaml", setup=_look(LATIN1))
case("gen-episodes-zero", ["generate", "{problem}", "--episodes-per-problem", "0", "--out", "{out}"])
case("gen-episodes-huge", ["generate", "{problem}", "--episodes-per-problem", "99999999999", "--out", "{out}"])
case("gen-envs-zero", GEN + ["--envs", "0"])
case("gen-envs-huge", GEN + ["--envs", "100000"], needle="--envs")
case("gen-workers-zero", GEN + ["--workers", "0"], needle="--workers")
case("gen-workers-text", GEN + ["--workers", "many"], needle="--workers")
case("gen-workers-huge", GEN + ["--workers", "100000"], needle="--workers")
case("gen-retries-negative", GEN + ["--max-retries", "-1"])
case("gen-replans-negative", GEN + ["--max-replans", "-1"])
case("gen-out-is-file", GEN, needle="file", setup=_out_file, out_may_exist=True)
case("gen-out-nonempty", GEN, needle="not a run folder", setup=_nonempty_out, out_may_exist=True)
case("gen-out-is-input", ["generate", "{problem}", "--episodes-per-problem", "1", "--out", "{problem}"],
     needle="is the input")
case("gen-out-is-input-folder", ["generate", "{scenepkg}", "--episodes-per-problem", "1", "--out", "{scenepkg}/x"],
     needle="lies inside")
case("gen-missing-problem", ["generate", "{tmp}/nope.pddl", "--episodes-per-problem", "1", "--out", "{out}"],
     needle="nope.pddl")
case("gen-pddl-latin1", ["generate", "{p}", "--episodes-per-problem", "1", "--out", "{out}"], needle="p.pddl",
     setup=_problem(pddl=LATIN1))
case("gen-pddl-syntax", ["generate", "{p}", "--episodes-per-problem", "1", "--out", "{out}"], needle="p.pddl",
     setup=_problem(pddl="(define (problem x) (:domain blocks) (:objects"))
case("gen-sidecar-latin1", ["generate", "{p}", "--episodes-per-problem", "1", "--out", "{out}"],
     needle="p.scene.json", setup=_problem(sidecar=LATIN1))
case("gen-sidecar-not-json", ["generate", "{p}", "--episodes-per-problem", "1", "--out", "{out}"],
     needle="p.scene.json", setup=_problem(sidecar="{not json"))
case("gen-sidecar-missing", ["generate", "{tmp}/q.pddl", "--episodes-per-problem", "1", "--out", "{out}"],
     needle="sidecar", setup=_file("q.pddl", "(define (problem q) (:domain blocks))"))
case("gen-name-300-chars", ["generate", "{p}", "--episodes-per-problem", "1", "--out", "{out}"],
     needle="problem name", setup=_renamed_problem("x" * 300))
case("gen-domain-unknown", GEN + ["--domain", "nosuch"], needle="nosuch")
case("gen-domain-latin1", GEN + ["--domain", "{f}"], needle="d.pddl", setup=_file("d.pddl", LATIN1))
case("gen-spec-latin1", GEN + ["--randomization", "{f}"], needle="s.yaml", setup=_file("s.yaml", LATIN1))
case("gen-spec-missing", GEN + ["--randomization", "{tmp}/none.yaml"], needle="none.yaml")
case("gen-spec-gravity-reversed", GEN + ["--randomization", "{f}"], needle="gravity_jitter_mps2",
     setup=_file("s.yaml", "gravity_jitter_mps2: 20\n"))
case("gen-randomize-nan", GEN + ["--randomize", "mass_scale=[.nan,1]"], needle="mass_scale")
case("gen-randomize-unknown", GEN + ["--randomize", "gravity=1"], needle="gravity")
case("gen-randomize-syntax", GEN + ["--randomize", "mass_scale"], needle="FIELD=VALUE")
case("gen-goal-unsolvable", ["generate", "{p}", "--episodes-per-problem", "1", "--out", "{out}"],
     needle="unsolvable", setup=_goal("(and (on white white))"))
case("gen-goal-true-at-start", ["generate", "{p}", "--episodes-per-problem", "1", "--out", "{out}"],
     needle="already", setup=_goal("(and (on_table white))"))
case("gen-other-run", GEN + ["--seed", "1"], needle="other inputs",
     setup=_run_first(GEN), out_may_exist=True)
case("gen-rerun-finished", GEN, code=0, needle="1/1 episodes", setup=_run_first(GEN), out_may_exist=True)

# bake
BAKE = ["bake", "{rendered}", "--out", "{out}"]
case("bake-out-inside-source", ["bake", "{rendered}", "--out", "{rendered}/baked"], needle="lies inside")
case("bake-out-is-source", ["bake", "{rendered}", "--out", "{rendered}"], needle="is the input")
case("bake-out-contains-source", ["bake", "{rendered}", "--out", "{base}"], needle="contains")
case("bake-out-nonempty", BAKE, needle="not empty", setup=_nonempty_out, out_may_exist=True)
case("bake-out-is-file", BAKE, needle="file", setup=_out_file, out_may_exist=True)
case("bake-control-space", BAKE + ["--control-space", "teleport"], needle="teleport")
case("bake-freq-zero", BAKE + ["--control-freq", "0"], needle="--control-freq")
case("bake-freq-negative", BAKE + ["--control-freq", "-5"], needle="--control-freq")
case("bake-freq-not-divisor", BAKE + ["--control-freq", "7"], needle="7")
case("bake-crf-negative", BAKE + ["--crf", "-5"], needle="--crf")
case("bake-crf-huge", BAKE + ["--crf", "1000"], needle="--crf")
case("bake-pix-fmt", BAKE + ["--pix-fmt", "bogus"], needle="bogus")
case("bake-vcodec", BAKE + ["--vcodec", "divx"], needle="divx")
case("bake-gop-zero", BAKE + ["--gop-seconds", "0"], needle="--gop-seconds")
case("bake-gop-nan", BAKE + ["--gop-seconds", "nan"], needle="--gop-seconds")
case("bake-max-file-nan", BAKE + ["--max-video-file-seconds", "nan"], needle="--max-video-file-seconds")
case("bake-max-file-zero", BAKE + ["--max-video-file-seconds", "0"], needle="--max-video-file-seconds")
case("bake-max-file-huge", BAKE + ["--max-video-file-seconds", "1e9"], needle="--max-video-file-seconds")
case("bake-workers-zero", BAKE + ["--workers", "0"], needle="--workers")
case("bake-workers-text", BAKE + ["--workers", "lots"], needle="--workers")
case("bake-format", BAKE + ["--lerobot-format", "v9"], needle="v9")
case("bake-cams-unknown", BAKE + ["--cams", "nosuch"], needle="nosuch")
case("bake-source-missing", ["bake", "{tmp}/none", "--out", "{out}"], needle="none")
case("bake-source-is-file", ["bake", "{spec}", "--out", "{out}"], needle="physics.yaml")
case("bake-fps-text", ["bake", "{ds}", "--out", "{out}"], needle="fps", setup=_info_edit(fps="thirty"))
case("bake-fps-zero", ["bake", "{ds}", "--out", "{out}"], needle="fps", setup=_info_edit(fps=0))
case("bake-info-not-json", ["bake", "{ds}", "--out", "{out}"], needle="info.json", setup=_info_bytes(b"{oops"))
case("bake-info-latin1", ["bake", "{ds}", "--out", "{out}"], needle="info.json", setup=_info_bytes(LATIN1))

# export
EXPORT = ["export", "openpi", "{baked}", "--out", "{out}"]
case("export-trainer-unknown", ["export", "rlds", "{baked}", "--out", "{out}"],
     needle="choose one of ['gr00t', 'openpi']")
case("export-out-inside-source", ["export", "gr00t", "{baked}", "--out", "{baked}/x"], needle="lies inside")
case("export-out-nonempty", EXPORT, needle="not empty", setup=_nonempty_out, out_may_exist=True)
case("export-horizon-zero", EXPORT + ["--action-horizon", "0"], needle="--action-horizon")
case("export-horizon-huge", ["export", "gr00t", "{baked}", "--out", "{out}", "--action-horizon", "1000"],
     needle="shorter than the action horizon 1000")
case("export-repo-id-escapes", EXPORT + ["--repo-id", "../up"], needle="--repo-id")
case("export-not-baked", ["export", "gr00t", "{rendered}", "--out", "{out}"], needle="bake it first")
case("export-source-missing", ["export", "openpi", "{tmp}/none", "--out", "{out}"], needle="none")
case("export-bake-json-junk", ["export", "openpi", "{ds}", "--out", "{out}"], needle="bake.json",
     setup=lambda w, t: {"ds": _copy_and_write(w, "baked", t, "meta/bake.json", b"{oops")})

# render
RENDER = ["render", "{raw}", "--look", "plain", "--cameras", "front", "--out", "{out}"]
# look-sheet
SHEET = ["look-sheet", "--out", "{out}.png"]
case("sheet-look-unknown", SHEET + ["--look", "nosuch"], needle="nosuch")
case("sheet-look-latin1", SHEET + ["--look", "{f}"], needle="look.yaml", setup=_look(LATIN1))
case("sheet-over-its-look", ["look-sheet", "--look", "{f}", "--out", "{f}"], needle="look.yaml",
     setup=_look("image: {}\n"))
case("sheet-out-not-png", ["look-sheet", "--out", "{out}.parquet"], needle=".png")
case("sheet-out-folder", ["look-sheet", "--out", "{tmp}"], needle="folder")
case("sheet-camera-unknown", SHEET + ["--cameras", "top"], needle="top")
case("sheet-family-unknown", SHEET + ["--family", "nosuch"], needle="nosuch")
case("sheet-draws-zero", SHEET + ["--draws", "0"], needle="--draws")
case("sheet-seed-negative", SHEET + ["--seed", "-1"], needle="--seed")
case("sheet-draws-huge", SHEET + ["--draws", "99999999999"], needle="--draws")  # it rendered for ever
case("sheet-columns-huge", SHEET + ["--columns", "99999999999"], needle="--columns")  # it ran out of memory
case("sheet-seed-huge", SHEET + ["--seed", "99999999999999999999999"], needle="--seed")

case("render-look-unknown", ["render", "{raw}", "--look", "nosuch", "--out", "{out}"], needle="nosuch")
case("render-look-latin1", ["render", "{raw}", "--look", "{f}", "--out", "{out}"], needle="look.yaml",
     setup=_look(LATIN1))
case("render-look-not-yaml", ["render", "{raw}", "--look", "{f}", "--out", "{out}"], needle="look.yaml",
     setup=_look("image: [unclosed\n"))
case("render-look-copies-zero", ["render", "{raw}", "--look", "plain:0", "--out", "{out}"], needle="plain:0")
case("render-look-copies-text", ["render", "{raw}", "--look", "plain:x", "--out", "{out}"], needle="plain:x")
case("render-camera-unknown", ["render", "{raw}", "--look", "plain", "--cameras", "top", "--out", "{out}"],
     needle="top")
case("render-out-inside-source", ["render", "{raw}", "--look", "plain", "--out", "{raw}/r"], needle="{raw}")
case("render-out-is-source", ["render", "{raw}", "--look", "plain", "--out", "{raw}"], needle="{raw}")
case("render-out-nonempty", RENDER, needle="not empty", setup=_nonempty_out, out_may_exist=True)
case("render-out-is-file", RENDER, needle="file", setup=_out_file, out_may_exist=True)
case("render-workers-zero", RENDER + ["--workers", "0"])
case("render-workers-huge", RENDER + ["--workers", "100000"], needle="--workers")
case("render-seed-huge", RENDER + ["--seed", "99999999999999999999999"], needle="--seed")
case("render-look-copies-huge", ["render", "{raw}", "--look", "plain:99999999999", "--out", "{out}"],
     needle="[1, 1000]")  # it rendered for ever
case("render-episodes-reversed", RENDER + ["--episodes", "3-1"], needle="3-1")
case("render-episodes-huge", RENDER + ["--episodes", "0-99999999999"], needle="99999999999")
case("render-episodes-absent", RENDER + ["--episodes", "9"], needle="9")
case("render-seed-negative", RENDER + ["--seed", "-1"])
case("render-source-rendered", ["render", "{rendered}", "--look", "plain", "--out", "{out}"], needle="already")
case("render-source-missing", ["render", "{tmp}/none", "--look", "plain", "--out", "{out}"], needle="none")
case("render-fps-text", ["render", "{ds}", "--look", "plain", "--out", "{out}"], needle="fps",
     setup=_info_edit(fps="thirty"))
case("render-rerun-finished", RENDER, code=0, needle="rendered 2 episodes", setup=_run_first(RENDER),
     out_may_exist=True)

# doctor
DOC = ["doctor", "{raw}"]
case("doctor-json-into-info", DOC + ["--json", "{raw}/meta/info.json"], needle="lies inside")
case("doctor-json-is-dataset", DOC + ["--json", "{raw}"], needle="is the input")
case("doctor-json-is-folder", DOC + ["--json", "{tmp}"], needle="folder")
case("doctor-json-under-file", DOC + ["--json", "{spec}/x.json"], needle="is a file")
case("doctor-report-into-dataset", DOC + ["--report", "{raw}/report.md"], needle="lies inside")
case("doctor-report-suffix", DOC + ["--report", "{tmp}/r.pdf"], needle=".html")
case("doctor-bins-zero", DOC + ["--bins", "0"], needle="--bins")
case("doctor-bins-huge", DOC + ["--bins", "100000000"], needle="--bins")
case("doctor-bins-float", DOC + ["--bins", "1e8"])
case("doctor-speed-nan", DOC + ["--max-action-speed", "nan"], needle="--max-action-speed")
case("doctor-speed-negative", DOC + ["--max-action-speed", "-1"], needle="--max-action-speed")
case("doctor-fail-on", DOC + ["--fail-on", "panic"], needle="panic")
case("doctor-checks-unknown", DOC + ["--checks", "D999"], needle="D999")
case("doctor-robot-unknown", DOC + ["--robot", "nosuch"], needle="nosuch")
case("doctor-missing", ["doctor", "{tmp}/none"], needle="none")
case("doctor-is-file", ["doctor", "{spec}"], needle="physics.yaml")
case("doctor-fps-text", ["doctor", "{ds}"], code=1, needle="fix: rewrite the dataset with a v3 writer (e.g. `demoforge "
     "dataset merge ROOT OUT` rebuilds the metadata), or restore meta/info.json from the dataset's source",
     setup=_info_edit(fps="thirty"))
case("doctor-fps-zero", ["doctor", "{ds}"], code=1, needle="D001", setup=_info_edit(fps=0))
case("doctor-info-not-json", ["doctor", "{ds}"], code=1, needle="D001", setup=_info_bytes(b"{oops"))
case("doctor-info-latin1", ["doctor", "{ds}"], code=1, needle="D001", setup=_info_bytes(LATIN1))
case("doctor-features-not-dict", ["doctor", "{ds}"], code=1, needle="D001", setup=_info_edit(features=[1, 2]))
case("doctor-total-episodes-text", ["doctor", "{ds}"], code=1, needle="D00",
     setup=_info_edit(total_episodes="many"))

# coverage
COV = ["coverage", "{raw}", "{out}", "--episodes", "1"]
case("coverage-out-is-input", ["coverage", "{raw}", "{raw}"], needle="is the input")
case("coverage-out-inside-input", ["coverage", "{raw}", "{raw}/more"], needle="lies inside")
case("coverage-out-nonempty", COV, needle="not empty", setup=_nonempty_out, out_may_exist=True)
case("coverage-episodes-zero", ["coverage", "{raw}", "{out}", "--episodes", "0"], needle="episodes")
case("coverage-episodes-huge", ["coverage", "{raw}", "{out}", "--episodes", "99999999999"])
case("coverage-bins-zero", COV + ["--bins", "0"], needle="bins")
case("coverage-envs-zero", COV + ["--envs", "0"], needle="envs")
case("coverage-seed-negative", COV + ["--seed", "-1"], needle="seed")
case("coverage-json-into-input", COV + ["--json", "{raw}/meta/stats.json"], needle="lies inside")
case("coverage-input-missing", ["coverage", "{tmp}/none", "{out}"], needle="none")

# dataset
case("dataset-info-missing", ["dataset", "info", "{tmp}/none"], needle="none")
case("dataset-readers-argument", ["dataset", "readers", "{tmp}/none"], needle="unexpected extra argument")
case("dataset-info-fps-text", ["dataset", "info", "{ds}"], needle="fps", setup=_info_edit(fps="thirty"))
case("dataset-info-latin1", ["dataset", "info", "{ds}"], needle="info.json", setup=_info_bytes(LATIN1))
case("dataset-check-missing", ["dataset", "check", "{tmp}/none"], code=1, needle="none")
case("dataset-check-fps-zero", ["dataset", "check", "{ds}"], code=1, needle="fps", setup=_info_edit(fps=0))
case("dataset-check-latin1", ["dataset", "check", "{ds}"], code=1, needle="info.json", setup=_info_bytes(LATIN1))
MERGE = ["dataset", "merge", "{raw}", "--out"]
case("merge-out-inside-source", MERGE + ["{raw}/data/chunk-001"], needle="lies inside")
case("merge-out-is-source", MERGE + ["{raw}"], needle="is the input")
case("merge-out-nonempty", MERGE + ["{out}"], needle="not empty", setup=_nonempty_out, out_may_exist=True)
case("merge-out-is-file", MERGE + ["{out}"], needle="file", setup=_out_file, out_may_exist=True)
case("merge-incompatible", ["dataset", "merge", "{raw}", "{rendered}", "--out", "{out}"], needle="do not agree")
case("merge-duration-zero", MERGE + ["{out}", "--video-file-duration-s", "0"], needle="duration")
case("merge-duration-nan", MERGE + ["{out}", "--video-file-duration-s", "nan"], needle="duration")
case("merge-source-missing", ["dataset", "merge", "{tmp}/none", "--out", "{out}"], needle="none")
case("merge-source-fps-text", ["dataset", "merge", "{ds}", "--out", "{out}"], needle="fps",
     setup=_info_edit(fps="thirty"))
case("merge-no-sources", ["dataset", "merge", "--out", "{out}"])

# sim lint
case("lint-missing", ["sim", "lint", "{tmp}/none.xml"], needle="none.xml")
case("lint-latin1", ["sim", "lint", "{f}"], needle="s.xml", setup=_file("s.xml", LATIN1))
case("lint-broken-xml", ["sim", "lint", "{f}"], needle="s.xml", setup=_file("s.xml", "<mujoco><worldbody>"))
case("lint-is-folder", ["sim", "lint", "{tmp}"], needle="{tmp}")
SCENE = "<mujoco><worldbody><geom type='plane' size='1 1 .1'/></worldbody></mujoco>"
case("lint-settle-huge", ["sim", "lint", "{f}", "--settle-s", "1e9"], needle="--settle-s", setup=_file("s.xml", SCENE))
case("lint-settle-negative", ["sim", "lint", "{f}", "--settle-s", "-1"], needle="settle", setup=_file("s.xml", SCENE))
case("lint-settle-nan", ["sim", "lint", "{f}", "--settle-s", "nan"], needle="settle", setup=_file("s.xml", SCENE))
case("lint-keyframe-unknown", ["sim", "lint", "{f}", "--keyframe", "nosuch"], needle="nosuch",
     setup=_file("s.xml", SCENE))
case("lint-keyframe-index", ["sim", "lint", "{f}", "--keyframe", "99"], needle="99", setup=_file("s.xml", SCENE))

# tasks
TG = ["tasks", "gen", "pnp", "--problems", "1", "--task-seed", "0", "--out", "{out}"]
case("tasks-list-argument", ["tasks", "list", "{tmp}/none"], needle="unexpected extra argument")
case("tasks-gen-family", ["tasks", "gen", "towers", "--problems", "1", "--task-seed", "0", "--out", "{out}"],
     needle="towers")
case("tasks-gen-problems-zero", ["tasks", "gen", "pnp", "--problems", "0", "--task-seed", "0", "--out", "{out}"],
     needle="--problems")
case("tasks-gen-problems-negative", ["tasks", "gen", "pnp", "--problems", "-3", "--task-seed", "0", "--out", "{out}"],
     needle="--problems")
case("tasks-gen-problems-huge", ["tasks", "gen", "pnp", "--problems", "99999999999", "--task-seed", "0", "--out", "{out}"],
     needle="--problems")
case("tasks-gen-seed-negative", ["tasks", "gen", "pnp", "--problems", "1", "--task-seed", "-1", "--out", "{out}"],
     needle="seed")
case("tasks-gen-out-existing", TG, needle="not empty", setup=_nonempty_out, out_may_exist=True)
case("tasks-gen-out-other-set", ["tasks", "gen", "pnp", "--problems", "1", "--task-seed", "1", "--out", "{out}"],
     needle="not empty", setup=_run_first(TG), out_may_exist=True)
case("tasks-gen-out-is-file", TG, needle="file", setup=_out_file, out_may_exist=True)
case("tasks-gen-rerun-same", TG, code=0, needle="wrote 1", setup=_run_first(TG), out_may_exist=True)
case("tasks-gen-block-nan", TG + ["--block-size", "nan,nan"], needle="--block-size")
case("tasks-gen-block-one", TG + ["--block-size", "0.05"], needle="--block-size")
case("tasks-gen-block-reversed", TG + ["--block-size", "0.06,0.03"], needle="block")
case("tasks-gen-block-negative", TG + ["--block-size", "-1,-0.5"], needle="block")
case("tasks-gen-block-inf", TG + ["--block-size", "0.03,inf"], needle="--block-size")
case("tasks-gen-friction-nan", TG + ["--friction", "nan,1"], needle="--friction")
case("tasks-gen-table-nan", TG + ["--table-height-offset", "0,nan"], needle="--table-height-offset")
case("tasks-gen-placement-inf", TG + ["--placement-x", "-inf,0.1"], needle="--placement-x")
case("tasks-gen-placement-text", TG + ["--placement-y", "a,b"], needle="--placement-y")
case("tasks-gen-n-zero", TG + ["--n", "0"], needle="n")
case("tasks-gen-n-huge", ["tasks", "gen", "stack_n", "--problems", "1", "--task-seed", "0", "--out", "{out}", "--n", "1000"],
     needle="1000")
case("tasks-gen-distractors-negative", TG + ["--distractors", "-1"], needle="distractors")
case("tasks-gen-distractors-huge", TG + ["--distractors", "1000"], needle="distractors")
case("tasks-gen-split", TG + ["--split", "bogus"], needle="bogus")
case("tasks-gen-split-by", TG + ["--split-by", "bogus"], needle="bogus")
case("tasks-check-latin1", ["tasks", "check", "{f}"], code=1, needle="p.pddl", setup=_file("p.pddl", LATIN1))
case("tasks-check-missing", ["tasks", "check", "{tmp}/none.pddl"], code=1, needle="none.pddl")
case("tasks-check-name-300-chars", ["tasks", "check", "{p}"], code=1, needle="problem name",
     setup=_renamed_problem("x" * 300))  # valid PDDL that generate refuses: it said OK
case("tasks-families-extra-argument", ["tasks", "families", "stack_three"], needle="stack_three")
case("tasks-check-domain-unknown", ["tasks", "check", "{problem}", "--domain", "nosuch"], code=1, needle="nosuch")
case("tasks-plan-budget-nan", ["tasks", "plan", "{problem}", "--budget", "nan"], needle="--budget")
case("tasks-plan-budget-negative", ["tasks", "plan", "{problem}", "--budget", "-1"], needle="--budget")
case("tasks-plan-budget-huge", ["tasks", "plan", "{problem}", "--budget", "1e9"], needle="--budget")
case("tasks-plan-latin1", ["tasks", "plan", "{f}"], needle="p.pddl", setup=_file("p.pddl", LATIN1))
case("tasks-plan-missing", ["tasks", "plan", "{tmp}/none.pddl"], needle="none.pddl")
case("tasks-plan-domain-latin1", ["tasks", "plan", "{problem}", "--domain", "{f}"], needle="d.pddl",
     setup=_file("d.pddl", LATIN1))
case("tasks-plan-unsolvable", ["tasks", "plan", "{p}"], code=1, needle="unsolvable",
     setup=_goal("(and (on white white))"))

# scenes
EB = ["scenes", "build", "{problem}", "--reset-states", "1", "--seed", "0", "--out", "{out}"]
case("scenes-build-out-exists", EB, needle="exists", setup=_nonempty_out, out_may_exist=True)
case("scenes-build-out-is-input", ["scenes", "build", "{problem}", "--reset-states", "1", "--seed", "0", "--out",
                                   "{problem}"], needle="{problem}")
case("scenes-build-resets-zero", ["scenes", "build", "{problem}", "--reset-states", "0", "--seed", "0", "--out",
                                  "{out}"], needle="--reset-states")
case("scenes-build-resets-huge", ["scenes", "build", "{problem}", "--reset-states", "99999999999", "--seed", "0",
                                  "--out", "{out}"], needle="reset")
case("scenes-build-profiles-zero", EB + ["--profiles", "0"], needle="profiles")
case("scenes-build-seed-negative", ["scenes", "build", "{problem}", "--reset-states", "1", "--seed", "-1", "--out",
                                    "{out}"], needle="seed")
case("scenes-build-p-closed-nan", EB + ["--robot-start", "--p-closed", "nan"], needle="--p-closed")
case("scenes-build-p-closed-two", EB + ["--robot-start", "--p-closed", "2"], needle="--p-closed")
case("scenes-build-latin1", ["scenes", "build", "{p}", "--reset-states", "1", "--seed", "0", "--out", "{out}"],
     needle="p.pddl", setup=_problem(pddl=LATIN1))
case("scenes-build-domain-unknown", EB + ["--domain", "nosuch"], needle="nosuch")
case("scenes-build-name-300-chars", ["scenes", "build", "{p}", "--reset-states", "1", "--seed", "0", "--out",
                                    "{out}"],
     needle="problem name", setup=_renamed_problem("x" * 300))  # was ENAMETOOLONG from a temporary folder
case("scenes-check-missing", ["scenes", "check", "{tmp}/none"], needle="none")
case("scenes-check-manifest-broken", ["scenes", "check", "{ds}"], needle="manifest.json",
     setup=lambda w, t: {"ds": _copy_and_write(w, "scenepkg", t, "manifest.json", b"{oops")})
case("scenes-check-manifest-latin1", ["scenes", "check", "{ds}"], needle="manifest.json",
     setup=lambda w, t: {"ds": _copy_and_write(w, "scenepkg", t, "manifest.json", LATIN1)})
# the deprecated name `env` refuses the same way, after its one note
case("env-build-deprecated-resets-zero", ["env", "build", "{problem}", "--reset-states", "0", "--seed", "0", "--out",
                                          "{out}"], needle="--reset-states")
case("env-check-deprecated-missing", ["env", "check", "{tmp}/none"], needle="none")


def _corrupt(name: str, rel: str, how: str = "truncate"):
    """A copy of a shared dataset with one file truncated to half, overwritten with junk, or removed."""
    def setup(world, tmp):
        ds = _copy(world, name, tmp)
        path = next(ds.glob(rel))
        if how == "truncate":
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        elif how == "junk":
            path.write_bytes(b"\x00junk" * 64)
        else:
            path.unlink()
        return {"ds": ds}
    return setup


DATA = "data/chunk-000/file-000.parquet"
EPISODES = "meta/episodes/chunk-000/file-000.parquet"
VIDEO = "videos/*/chunk-000/file-000.mp4"
for cmd, argv, code in (("info", ["dataset", "info", "{ds}"], 2), ("check", ["dataset", "check", "{ds}"], 1),
                        ("doctor", ["doctor", "{ds}"], 1), ("bake", ["bake", "{ds}", "--out", "{out}"], 2),
                        ("render", ["render", "{ds}", "--look", "plain", "--out", "{out}"], 2),
                        ("replay", ["replay", "{ds}"], 2), ("merge", ["dataset", "merge", "{ds}", "--out", "{out}"], 2),
                        ("plot", ["plot", "{ds}", "--episode", "0", "--out", "{tmp}/p.png"], 2),
                        ("viz", ["viz", "{ds}", "--out", "{out}"], 2)):
    if cmd != "info":  # info summarises the metadata only
        case(f"{cmd}-data-truncated", argv, code=code, needle="parquet", setup=_corrupt("raw", DATA))
    case(f"{cmd}-episodes-junk", argv, code=code, needle="parquet", setup=_corrupt("raw", EPISODES, "junk"))
for cmd, argv, code in (("check", ["dataset", "check", "{ds}"], 1), ("doctor", ["doctor", "{ds}", "--decode-video"], 1),
                        ("bake", ["bake", "{ds}", "--out", "{out}"], 2),
                        ("viz", ["viz", "{ds}", "--out", "{out}"], 2),
                        ("merge", ["dataset", "merge", "{ds}", "--out", "{out}"], 2)):
    case(f"{cmd}-video-truncated", argv, code=code, needle="mp4", setup=_corrupt("rendered", VIDEO))
    case(f"{cmd}-video-missing", argv, code=code, needle="mp4", setup=_corrupt("rendered", VIDEO, "remove"))
case("doctor-stats-junk", ["doctor", "{ds}"], code=1, needle="stats.json", setup=_corrupt("raw", "meta/stats.json", "junk"))
case("info-tasks-missing", ["dataset", "info", "{ds}"], needle="tasks.parquet",
     setup=_corrupt("raw", "meta/tasks.parquet", "remove"))
case("bake-scenes-junk", ["bake", "{ds}", "--out", "{out}"], needle="json",
     setup=_corrupt("raw", "meta/demoforge/controller.json", "junk"))
case("replay-controller-junk", ["replay", "{ds}"], needle="controller.json",
     setup=_corrupt("raw", "meta/demoforge/controller.json", "junk"))
case("render-scene-junk", ["render", "{ds}", "--look", "plain", "--out", "{out}"], needle="pnp-all-0000.json",
     setup=_corrupt("raw", "meta/demoforge/scenes/*.json", "junk"))


def _copy_and_write(world, name, tmp, rel, data):
    ds = _copy(world, name, tmp)
    (ds / rel).write_bytes(data)
    return ds


# randomize
case("randomize-check-latin1", ["randomize", "check", "{f}"], needle="save it as UTF-8",
     setup=_file("s.yaml", LATIN1))
case("randomize-check-not-yaml", ["randomize", "check", "{f}"], needle="s.yaml", setup=_file("s.yaml", "a: [\n"))
case("randomize-check-gravity", ["randomize", "check", "{f}"], needle="gravity_jitter_mps2",
     setup=_file("s.yaml", "gravity_jitter_mps2: 20\n"))
case("randomize-check-mass-negative", ["randomize", "check", "{f}"], needle="mass_scale",
     setup=_file("s.yaml", "mass_scale: [-1, 2]\n"))
case("randomize-check-mass-nan", ["randomize", "check", "{f}"], needle="mass_scale",
     setup=_file("s.yaml", "mass_scale: [.nan, 1]\n"))
case("randomize-check-unknown-key", ["randomize", "check", "{f}"], needle="gravity",
     setup=_file("s.yaml", "gravity: 1\n"))
case("randomize-check-not-mapping", ["randomize", "check", "{f}"], needle="mapping", setup=_file("s.yaml", "- 1\n"))
case("randomize-check-set-syntax", ["randomize", "check", "{spec}", "--set", "mass_scale"], needle="FIELD=VALUE")
case("randomize-check-missing", ["randomize", "check", "{tmp}/none.yaml"], needle="none.yaml")
case("randomize-sample-seed-negative", ["randomize", "sample", "{spec}", "--seed", "-1"])
case("randomize-sample-count-zero", ["randomize", "sample", "{spec}", "--count", "0"])
case("randomize-sample-count-huge", ["randomize", "sample", "{spec}", "--count", "99999999999"], needle="--count")
case("randomize-sample-robot-missing", ["randomize", "sample", "{spec}", "--robot", "{tmp}/none.yaml"],
     needle="none.yaml")
case("randomize-sample-robot-latin1", ["randomize", "sample", "{spec}", "--robot", "{f}"], needle="r.yaml",
     setup=_file("r.yaml", LATIN1))

# replay
case("replay-json-into-stats", ["replay", "{raw}", "--json", "{raw}/meta/stats.json"], needle="lies inside")
case("replay-episodes-reversed", ["replay", "{raw}", "--episodes", "3-1"], needle="3-1")
case("replay-episodes-huge", ["replay", "{raw}", "--episodes", "0-99999999999"], needle="99999999999")
case("replay-episodes-text", ["replay", "{raw}", "--episodes", "abc"], needle="abc")
case("replay-episodes-absent", ["replay", "{raw}", "--episodes", "7"], needle="7")
case("replay-episodes-negative", ["replay", "{raw}", "--episodes", "-1"], needle="-1")
case("replay-tol-nan", ["replay", "{raw}", "--tol", "nan"], needle="--tol")
case("replay-tol-negative", ["replay", "{raw}", "--tol", "-1"], needle="--tol")
case("replay-missing", ["replay", "{tmp}/none"], needle="none")
case("replay-baked", ["replay", "{baked}"], needle="{baked}")
case("replay-fps-text", ["replay", "{ds}"], needle="fps", setup=_info_edit(fps="thirty"))

# rollout / eval / relabel
RO = ["rollout", "--policy", "expert", "--problems", "{problem}", "--out", "{out}", "--max-ticks", "5"]
case("rollout-out-is-input", ["rollout", "--policy", "expert", "--problems", "{problem}", "--out", "{problem}"],
     needle="is the input")
case("rollout-out-nonempty", RO, needle="not empty", setup=_nonempty_out, out_may_exist=True)
case("rollout-episodes-zero", RO + ["--episodes", "0"])
case("rollout-episodes-huge", RO + ["--episodes", "99999999999"])
case("rollout-policy-unknown", ["rollout", "--policy", "nosuch:thing", "--problems", "{problem}", "--out", "{out}"],
     needle="nosuch")
case("rollout-policy-arg", RO + ["--policy-arg", "not an arg"], needle="--policy-arg")
case("rollout-max-ticks-zero", ["rollout", "--policy", "expert", "--problems", "{problem}", "--out", "{out}",
                                "--max-ticks", "0"])
case("rollout-assist-floor-two", RO + ["--assist-floor", "2"])
case("rollout-assist-floor-nan", RO + ["--assist-floor", "nan"], needle="--assist-floor")
case("rollout-seed-negative", RO + ["--seed", "-1"], needle="seed")
case("rollout-warmup-over-horizon", RO + ["--warmup", "10"], needle="--warmup")  # was exit 3 after OUT was made
case("rollout-assist-steps-over-horizon", RO + ["--assist-floor", "0.5", "--assist-steps", "5"],
     needle="--assist-steps")
case("rollout-assist-steps-without-floor", RO + ["--assist-steps", "5"], needle="--assist-floor")
case("rollout-warmup-huge", RO + ["--warmup", "99999999999"], needle="--warmup")
case("rollout-name-300-chars", ["rollout", "--policy", "expert", "--problems", "{p}", "--out", "{out}"],
     needle="problem name", setup=_renamed_problem("x" * 300))
case("rollout-problem-missing", ["rollout", "--policy", "expert", "--problems", "{tmp}/none.pddl", "--out", "{out}"],
     needle="none.pddl")
case("rollout-spec-latin1", RO + ["--randomization", "{f}"], needle="s.yaml", setup=_file("s.yaml", LATIN1))
case("rollout-goal-true-at-start", ["rollout", "--policy", "expert", "--problems", "{p}", "--out", "{out}"],
     needle="already holds", setup=_goal("(and (on_table white))"))
EV = ["eval", "--policy", "expert", "--out", "{out}", "--max-ticks", "5", "--from-dataset"]
case("eval-plain-lerobot", EV + ["{baked}"], needle="{baked}")
case("eval-missing", EV + ["{tmp}/none"], needle="none")
case("eval-out-inside", ["eval", "--policy", "expert", "--from-dataset", "{raw}", "--out", "{raw}/e"],
     needle="lies inside")
case("eval-episodes-reversed", EV + ["{raw}", "--episodes", "3-1"], needle="3-1")
case("eval-start-unknown", EV + ["{raw}", "--start", "middle"], needle="middle")
case("rollout-look-unknown", RO + ["--look", "nosuch"], needle="nosuch")
case("rollout-look-recorded", RO + ["--look", "recorded"], needle="eval --from-dataset")
case("rollout-image-size-odd", RO + ["--look", "plain", "--image-size", "95"], needle="95x95")
case("rollout-image-size-text", RO + ["--look", "plain", "--image-size", "big"], needle="WIDTHxHEIGHT")
case("rollout-image-size-no-look", RO + ["--image-size", "96"], needle="--look")
case("eval-look-split-unknown", EV + ["{raw}", "--look", "randomized:val"], needle="randomized:val")
case("eval-start-every-zero", EV + ["{raw}", "--start", "every:0"], needle="every:0")
case("eval-batch-missing", ["eval-batch", "{tmp}/none.yaml", "--out", "{out}"], needle="none.yaml")
case("eval-batch-not-yaml", ["eval-batch", "{f}", "--out", "{out}"], needle="b.yaml", setup=_file("b.yaml", "a: [\n"))
case("eval-batch-unknown-key", ["eval-batch", "{f}", "--out", "{out}"], needle="polices",
     setup=_file("b.yaml", "polices: {a: {spec: expert}}\ntasks: {t: {family: pnp}}\n"))
case("eval-batch-limit-zero", ["eval-batch", "{f}", "--out", "{out}", "--limit", "0"], needle="--limit",
     setup=_file("b.yaml", "policies: {a: {spec: expert}}\ntasks: {t: {family: pnp}}\n"))
case("eval-episodes-absent", EV + ["{raw}", "--episodes", "9"], needle="9")
case("eval-warmup-over-horizon", EV + ["{raw}", "--warmup", "5"], needle="--warmup")
case("eval-reference-under-warmup", EV + ["{raw}", "--warmup", "3", "--reference-ticks", "2"],
     needle="--reference-ticks")
case("eval-policy-unknown", ["eval", "--policy", "nosuch:x", "--from-dataset", "{raw}", "--out", "{out}"],
     needle="nosuch")
case("relabel-not-rollouts", ["relabel", "--rollouts", "{baked}", "--out", "{out}"], needle="{baked}")
case("relabel-out-inside", ["relabel", "--rollouts", "{raw}", "--out", "{raw}/l"], needle="lies inside")
case("relabel-missing", ["relabel", "--rollouts", "{tmp}/none", "--out", "{out}"], needle="none")
case("relabel-envs-zero", ["relabel", "--rollouts", "{raw}", "--out", "{out}", "--envs", "0"])

# viz / plot
case("viz-out-inside", ["viz", "{raw}", "--out", "{raw}/v"], needle="lies inside")
case("viz-out-is-file", ["viz", "{raw}", "--out", "{out}"], needle="file", setup=_out_file, out_may_exist=True)
case("viz-episodes-reversed", ["viz", "{raw}", "--out", "{out}", "--episodes", "3-1"], needle="3-1")
case("viz-width-one", ["viz", "{raw}", "--out", "{out}", "--width", "1"])
case("viz-width-huge", ["viz", "{raw}", "--out", "{out}", "--width", "100000"], needle="--width")
case("viz-stride-zero", ["viz", "{raw}", "--out", "{out}", "--stride", "0"])
case("viz-kinds-unknown", ["viz", "{raw}", "--out", "{out}", "--kinds", "infrared"], needle="infrared")
case("viz-cameras-unknown", ["viz", "{rendered}", "--out", "{out}", "--cameras", "top"], needle="top")
case("viz-missing", ["viz", "{tmp}/none", "--out", "{out}"], needle="none")
PLOT = ["plot", "{raw}", "--episode", "0", "--out"]
case("plot-out-parquet", PLOT + ["{tmp}/x.parquet"], needle=".png")
case("plot-out-inside", PLOT + ["{raw}/meta/p.png"], needle="lies inside")
case("plot-out-is-folder", PLOT + ["{tmp}"], needle="folder")
case("plot-episode-absent", ["plot", "{raw}", "--episode", "9", "--out", "{tmp}/p.png"], needle="9")
case("plot-episode-negative", ["plot", "{raw}", "--episode", "-1", "--out", "{tmp}/p.png"])
case("plot-missing", ["plot", "{tmp}/none", "--episode", "0", "--out", "{tmp}/p.png"], needle="none")

# run / demo
RUN = ["run", "--experiment-id", "x", "--out-dir", "{tmp}", "--problems", "1", "--episodes-per-problem", "1"]
case("run-camera-unknown", RUN + ["--cameras", "top"], needle="top")
case("run-render-pass-unknown", RUN + ["--look", "nosuch"], needle="nosuch")
case("run-bake-unknown", RUN + ["--control-space", "teleport"], needle="teleport")
case("run-fail-on-unknown", RUN + ["--fail-on", "panic"], needle="panic")
case("run-backend-unknown", RUN + ["--backend", "slurm"], needle="slurm")
case("run-family-unknown", RUN + ["--family", "towers"], needle="towers")
case("run-problems-zero", ["run", "--experiment-id", "x", "--out-dir", "{tmp}", "--problems", "0"], needle="problems")
case("run-episodes-zero", ["run", "--experiment-id", "x", "--out-dir", "{tmp}", "--episodes-per-problem", "0"],
     needle="episodes_per_problem")
case("run-seed-negative", RUN + ["--seed", "-1"], needle="seed")
case("run-config-latin1", RUN + ["--config", "{f}"], needle="c.yaml", setup=_file("c.yaml", LATIN1))
case("run-config-not-yaml", RUN + ["--config", "{f}"], needle="c.yaml", setup=_file("c.yaml", "a: [\n"))
case("run-config-missing", RUN + ["--config", "{tmp}/none.yaml"], needle="none.yaml")
case("run-smoke-vs-explicit", ["run", "--experiment-id", "x", "--out-dir", "{tmp}", "--smoke-test",
                               "--episodes-per-problem", "5"], needle="--smoke-test")
case("run-problems-huge", RUN + ["--problems", "99999999999"], needle="[1, 100000]")  # it ran for ever
case("run-episodes-huge", ["run", "--experiment-id", "x", "--out-dir", "{tmp}", "--episodes-per-problem",
                           "99999999999"], needle="episodes_per_problem")
case("run-envs-huge", RUN + ["--envs", "100000"], needle="envs")
case("run-workers-huge", RUN + ["--workers", "100000"], needle="workers")
case("run-reset-states-zero", RUN + ["--reset-states", "0"], needle="reset_states")
case("run-task-seed-negative", RUN + ["--task-seed", "-1"], needle="task_seed")
case("run-play-goals-huge", RUN + ["--play", "--play-goals", "1000"], needle="play_goals")
case("run-render-copies-huge", RUN + ["--look", "randomized:99999"], needle="[1, 1000]")
case("run-config-problems-huge", RUN[:5] + ["--config", "{f}"], needle="problems",
     setup=_file("c.yaml", "problems: 99999999999\n"))
case("run-problem-file-missing", RUN + ["--problem-file", "{tmp}/none.pddl"], needle="none.pddl")
case("run-out-dir-is-file", ["run", "--experiment-id", "x", "--out-dir", "{spec}", "--problems", "1"],
     needle="physics.yaml")
case("run-experiment-id-path", ["run", "--experiment-id", "../escape", "--out-dir", "{tmp}"], needle="experiment")
case("demo-out-foreign", ["demo", "--out", "{tmp}"], needle="not the demo", setup=_file("demo/config.yaml", "x: 1\n"))
case("demo-out-foreign-files", ["demo", "--out", "{tmp}"], needle="precious.txt",
     setup=_both(_file("demo/config.yaml", "x: 1\n"), _file("demo/precious.txt", "keep")))
case("demo-out-is-file", ["demo", "--out", "{spec}"], needle="physics.yaml")


# issue 34, set A


def _cyclic_goal(world, tmp):
    """Four blocks whose goal puts two of them on each other: pymimir's search runs out of time
    on it, Fast Downward proves it unsolvable."""
    import importlib.util

    from demoforge.tasks import generate_family, write_tasks

    if importlib.util.find_spec("up_fast_downward") is None:
        pytest.skip("Fast Downward (the fd extra) is not installed")

    write_tasks(generate_family("stack_n", count=1, seed=0, n=4), tmp / "t")
    p = tmp / "t" / "stack_n-all-0000.pddl"
    text = p.read_text()
    start = text.index("(:goal")
    p.write_text(text[:start] + "(:goal (and (on red teal) (on teal red))))\n")
    return {"p": p}


def _damaged_page(name: str, rel: str):
    """A copy of a shared dataset whose data file is overwritten in the middle, at the start of the
    largest column chunk of row group 0 (sim.state; its footer intact), so that the snappy data of
    a page no longer decodes."""
    import pyarrow.parquet as pq

    def setup(world, tmp):
        ds = _copy(world, name, tmp)
        path = ds / rel
        data = path.read_bytes()
        group = pq.ParquetFile(path).metadata.row_group(0)
        chunk = max((group.column(i) for i in range(group.num_columns)), key=lambda c: c.total_compressed_size)
        for k in range(64):  # past the page header, into the snappy stream
            bad = bytearray(data)
            bad[chunk.data_page_offset + k: chunk.data_page_offset + k + 8] = b"\xff" * 8
            path.write_bytes(bad)
            try:
                pq.ParquetFile(path).read_row_group(0)
            except OSError as exc:
                if "snappy" in str(exc):
                    return {"ds": ds}
        raise AssertionError(f"no offset in {rel} makes its snappy data undecodable")
    return setup


def _six_joint_card(world, tmp):
    """The built-in card without joint7, self-consistent (six actuators, home values and gains)."""
    import yaml

    card = yaml.safe_load((Path(__file__).parents[2] / "examples" / "robots" / "panda.yaml").read_text())
    for key in ("arm_joints", "arm_actuators", "home", "max_velocity", "max_acceleration", "max_jerk"):
        card[key] = card[key][:6]
    card["controller"] = {**card["controller"], "kp": card["controller"]["kp"][:6], "kd": card["controller"]["kd"][:6]}
    (tmp / "six.yaml").write_text(yaml.safe_dump(card))
    return {"card": tmp / "six.yaml"}


def _windows(**changes):
    """The shared problem with these fields of its sidecar changed."""
    def setup(world, tmp):
        car = json.loads(world["problem"].with_name("pnp-all-0000.scene.json").read_text())
        return _problem(sidecar=json.dumps({**car, **changes}))(world, tmp)
    return setup


# Windows wide enough for the block but inside the left region's keep-out: no spot is ever free,
# which only the reset sampling finds, in the first episode.
IN_REGION = {"placement_x_m": [[0.05, 0.15]], "placement_y_m": [[0.2, 0.28]]}


def _failed_then_fixed(world, tmp):
    """generate refused a sidecar whose windows no start satisfies, leaving no output; the sidecar
    is then put right, for the case's rerun into the same --out."""
    extra = _windows(**IN_REGION)(world, tmp)
    res = CliRunner().invoke(app, [a.format(**_names(world, tmp, extra)) for a in GEN_P])
    assert res.exit_code == 2 and "no free spot" in res.output, res.output
    assert not (tmp / "out").exists(), "the refused run left its --out"
    shutil.copy2(world["problem"].with_name("pnp-all-0000.scene.json"), tmp / "p.scene.json")
    return extra


GEN_P = ["generate", "{p}", "--episodes-per-problem", "1", "--out", "{out}"]
case("gen-goal-cyclic-unsolvable", GEN_P, needle="the goal of stack_n-all-0000 is unsolvable from its initial state "
     "(fast-downward: search proved it unsolvable); fix the goal or the init (check with `demoforge tasks plan {p}`)",
     setup=_cyclic_goal)
case("check-data-page-damaged", ["dataset", "check", "{ds}"], code=1,
     needle="[data.pages] data/chunk-000/file-000.parquet: column 'sim.state'", setup=_damaged_page("raw", DATA))
case("check-quick-data-page-damaged", ["dataset", "check", "{ds}", "--quick"], code=0, needle="OK",
     setup=_damaged_page("raw", DATA))
case("bake-data-page-damaged", ["bake", "{ds}", "--out", "{out}"],
     needle="{ds}/data/chunk-000/file-000.parquet: unreadable parquet (Corrupt snappy",
     setup=_damaged_page("raw", DATA))
case("doctor-data-page-damaged", ["doctor", "{ds}"], code=1,
     needle="episode 0: data rows unreadable (data/chunk-000/file-000.parquet: row group 0 does not decode",
     setup=_damaged_page("raw", DATA))
case("gen-robot-card-joint-left-out", GEN + ["--robot", "{card}"],
     needle="robot card {card}: robot card 'panda' does not match its model:\n  arm_joints leaves out ['joint7']",
     setup=_six_joint_card)
case("gen-sidecar-window-too-narrow", GEN_P, needle="p.scene.json: invalid scene sidecar:\nplacement_x_m: the widest "
     "window is 0.01 m wide", setup=_windows(placement_x_m=[[0.0, 0.01]]))
case("gen-sidecar-windows-unsatisfiable", GEN_P, needle="no free spot", setup=_windows(**IN_REGION))
case("gen-rerun-after-sidecar-fixed", GEN_P, code=0, needle="1/1 episodes", setup=_failed_then_fixed)

# issue 38: user policy errors
_POLICY = """from demoforge.policy import PolicySpaces


class P:
    spaces = PolicySpaces({"observation.state": (8,)}, (8,))

    def reset(self, slot, start):
        pass

    def act(self, observations):
        {act}


def make():
    {make}
"""


def _policy(act="return observations['observation.state'] * 0", make="return P()", head=""):
    """A user's policy file, pol.py, whose act and factory bodies (lines 11 and 15) are given."""
    return _file("pol.py", head + _POLICY.replace("{act}", act).replace("{make}", make))


UP = ["rollout", "--policy", "{f}:make", "--problems", "{problem}", "--out", "{out}", "--max-ticks", "5"]
UE = ["eval", "--policy", "{f}:make", "--from-dataset", "{raw}", "--out", "{out}", "--max-ticks", "5"]
case("rollout-policy-import-raises", UP, needle="{f}:1", setup=_policy(head="raise RuntimeError('no weights')\n"))
case("rollout-policy-syntax-error", UP, needle="{f}:1", setup=_policy(head="def (:\n"))
case("rollout-policy-import-missing-dep", UP, needle="nosuchdep_x", setup=_policy(head="import nosuchdep_x\n"))
case("rollout-policy-exits-on-import", UP, needle="sys.exit", setup=_policy(head="import sys\nsys.exit(0)\n"))
case("rollout-policy-factory-raises", UP, needle="{f}:15", setup=_policy(make="raise ValueError('bad')"))
case("rollout-policy-factory-exits", UP, needle="sys.exit", setup=_policy(make="raise SystemExit(1)"))
case("rollout-policy-act-raises", UP, needle="{f}:11", setup=_policy(act="raise KeyError('obs')"))
case("rollout-policy-act-exits", UP, needle="{f}:11", setup=_policy(act="raise SystemExit(0)"))
case("eval-policy-factory-raises", UE, needle="{f}:15", setup=_policy(make="raise ValueError('bad')"))
case("eval-policy-act-raises", UE, needle="{f}:11", setup=_policy(act="1 / 0"))

# issue 34, set B
# A finished run of bake, merge or export, rerun with the same inputs, is a no-op that says so
# (test_case checks OUT is unchanged byte for byte); other inputs are still refused.
DONE = "is already complete with these inputs; nothing to do"
case("bake-rerun-finished", BAKE, code=0, needle=DONE, setup=_run_first(BAKE), out_may_exist=True)
case("bake-rerun-other-inputs", BAKE + ["--crf", "30"], needle="not empty", setup=_run_first(BAKE),
     out_may_exist=True)
case("merge-rerun-finished", MERGE + ["{out}"], code=0, needle=DONE, setup=_run_first(MERGE + ["{out}"]),
     out_may_exist=True)
case("merge-rerun-other-inputs", ["dataset", "merge", "{raw}", "{raw}", "--out", "{out}"], needle="not empty",
     setup=_run_first(MERGE + ["{out}"]), out_may_exist=True)
case("export-rerun-finished", EXPORT, code=0, needle=DONE, setup=_run_first(EXPORT), out_may_exist=True)
case("export-rerun-other-inputs", EXPORT + ["--action-horizon", "10"], needle="not empty",
     setup=_run_first(EXPORT), out_may_exist=True)


def _extra_blocks(n: int):
    """The shared problem with `n` block objects its sidecar does not describe."""
    def setup(world, tmp):
        names = " ".join(f"extra{i:03d}" for i in range(n))
        return _problem(pddl=world["problem"].read_text().replace("(:objects", f"(:objects {names} - block", 1))(
            world, tmp)
    return setup


# 500 blocks missing from the sidecar: each named once (not again for its missing drawn size), 20 shown
case("gen-500-blocks-missing", ["generate", "{p}", "--episodes-per-problem", "1", "--out", "{out}"],
     needle="... and 480 more", setup=_extra_blocks(500))
# PyYAML reads 1e300 (no dot) as a string: the message says so, and how to write the number
case("gen-spec-jitter-yaml-string", GEN + ["--randomization", "{f}"],
     needle="spawn_jitter: must be a finite number, got the string '1e300' (YAML reads 1e300 as text; write 1.0e+300)",
     setup=_file("s.yaml", "spawn_jitter: 1e300\n"))
case("run-config-int-yaml-string", RUN[:5] + ["--config", "{f}"],
     needle="must be an integer in [1, 100000], got the string '1e3' (YAML reads 1e3 as text; write 1000)",
     setup=_file("c.yaml", "problems: 1e3\n"))


@pytest.mark.parametrize("argv, code, needle, setup, out_may_exist", C)
def test_case(world, world_hashes, tmp_path, argv, code, needle, setup, out_may_exist):
    tmp = tmp_path / "case"
    tmp.mkdir()
    extra = setup(world, tmp) if setup else {}
    names = _names(world, tmp, extra)
    args = [a.format(**names) for a in argv]
    before = tree_hash(tmp)
    out_existed = (tmp / "out").exists()
    result = CliRunner().invoke(app, args)
    output = result.output
    if os.environ.get("DEMOFORGE_SHOW_CATALOGUE"):  # review the messages: DEMOFORGE_SHOW_CATALOGUE=1 pytest -s
        print(f"\n$ demoforge {' '.join(args)}\n[{result.exit_code}] {output.strip()}")
    assert result.exit_code == code, f"exit {result.exit_code}, wanted {code}: demoforge {' '.join(args)}\n{output}"
    assert "Traceback" not in output and "internal error" not in output, output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if needle is not None:
        assert needle.format(**names) in output, f"{needle.format(**names)!r} not in:\n{output}"
    assert tree_hash(world["base"]) == world_hashes, "a shared input changed"
    after = tree_hash(tmp)
    if code == 0 and out_existed:  # a finished run, rerun with the same inputs: nothing to do, nothing written
        assert after == before, "a rerun of a finished command changed its output"
    if code == 2:
        if not out_existed:
            assert not (tmp / "out").exists(), "a refused command created its output"
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        assert not changed, f"a refused command changed files: {sorted(changed)[:5]}"
    left = [p for p in (*tmp.rglob(".*"), *world["base"].rglob(".*")) if any(m in p.name for m in TEMP_MARKS)]
    assert not left, f"half-written leftovers: {left}"


def test_catalogue_is_large_and_covers_every_command():
    ids = [p.id for p in C]
    assert len(ids) >= 150 and len(set(ids)) == len(ids)
    import typer.main

    group = typer.main.get_command(app)
    commands = {(name, sub) for name, cmd in group.commands.items()  # every command and group subcommand
                for sub in (getattr(cmd, "commands", None) or {None: None})}
    covered = {(p.values[0][0], p.values[0][1] if p.values[0][0] in group.commands and
                hasattr(group.commands[p.values[0][0]], "commands") else None) for p in C}
    missing = commands - covered
    assert not missing, f"commands without cases: {sorted(missing)}"


def test_debug_flag_prints_the_traceback(world, tmp_path):
    for argv in (["generate", str(tmp_path / "none.pddl"), "--episodes-per-problem", "1", "--out", str(tmp_path)],
                 ["dataset", "info", str(tmp_path / "none")], ["doctor", str(world["raw"]), "--checks", "D999"]):
        quiet = CliRunner().invoke(app, argv)
        assert quiet.exit_code == 2 and "Traceback" not in quiet.output and quiet.output.startswith("error: ")
        loud = CliRunner().invoke(app, ["--debug", *argv])
        assert loud.exception is not None and not isinstance(loud.exception, SystemExit), argv


def test_environment_faults_exit_2_naming_the_file(world, tmp_path, monkeypatch):
    """A full disk and a refused permission while writing: exit 2 with the file and a fix."""
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out" / "x.parquet"))

    monkeypatch.setattr("demoforge.tasks.families._write", full)
    res = CliRunner().invoke(app, ["tasks", "gen", "pnp", "--problems", "1", "--task-seed", "0", "--out",
                                   str(tmp_path / "out")])
    assert res.exit_code == 2 and "No space left on device" in res.output and "x.parquet" in res.output
    assert "free space" in res.output and "Traceback" not in res.output

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "out2" / "x.pddl"))

    monkeypatch.setattr("demoforge.tasks.families._write", refused)
    res = CliRunner().invoke(app, ["tasks", "gen", "pnp", "--problems", "1", "--task-seed", "0", "--out",
                                   str(tmp_path / "out2")])
    assert res.exit_code == 2 and "Permission denied" in res.output and "x.pddl" in res.output
    assert "permissions" in res.output and "Traceback" not in res.output
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not os.access(locked, os.W_OK):  # a real refusal (root ignores permissions)
            monkeypatch.undo()
            res = CliRunner().invoke(app, ["tasks", "gen", "pnp", "--problems", "1", "--task-seed", "0", "--out",
                                           str(locked / "t")])
            assert res.exit_code == 2 and "ermission denied" in res.output and "Traceback" not in res.output
    finally:
        locked.chmod(0o700)


def test_help_keeps_defaults_and_units():
    """Plain help: "[s]" and "[default: ...]" written in help texts are printed, not read as markup."""
    lint = CliRunner().invoke(app, ["sim", "lint", "--help"], terminal_width=200).output
    assert "Simulated settle time [s] [default: 1.0]. Range: (0.0, 60.0]." in lint
    run = CliRunner().invoke(app, ["run", "--help"], terminal_width=200).output
    assert "Parent of run folders [default: runs]." in run
    top = CliRunner().invoke(app, ["--help"]).output
    assert "--debug" in top and "2 bad input" in top


def test_lint_errors_are_not_wrapped(tmp_path):
    """A long path in an error stays on one line whatever the terminal width."""
    deep = tmp_path / ("d" * 120) / "broken.xml"
    deep.parent.mkdir()
    deep.write_text("<mujoco><worldbody>")
    res = CliRunner().invoke(app, ["sim", "lint", str(deep)], terminal_width=40)
    assert res.exit_code == 2 and str(deep) in res.output
