"""run_stage guards its output (`guard_output`): never into or over a stage's inputs, never a
file or under one, a non-empty OUT only when it is this same run, published; each refusal is the
stage's error, names the path and the fix, and leaves nothing written."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from demoforge.dataset.layout import INFO_PATH
from demoforge.stage import MergeAtEnd, StageError, run_stage, stamp_dataset


@dataclass(frozen=True)
class Reads:
    """A toy stage that reads `source` and publishes OUT as a folder holding one file per item."""

    source: Path
    n: int = 2
    name: ClassVar[str] = "reads"
    error: ClassVar[type] = StageError

    def fingerprint(self) -> dict:
        return {"source": str(self.source), "n": self.n}

    def inputs(self) -> tuple[Path, ...]:
        return (self.source,)

    def items(self) -> list[str]:
        return [f"r{k}" for k in range(self.n)]

    def total(self) -> int:
        return self.n

    def run_item(self, k: int, shard: Path, progress) -> dict:
        (shard / "part").write_text(str(k), encoding="utf-8")
        return {"episodes": 1}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        def merge(shards, results):
            out.mkdir(exist_ok=True)  # a run folder the stage names (work=out) is there already
            for k, s in enumerate(shards):
                (out / f"{k}.txt").write_text((s / "part").read_text(encoding="utf-8"), encoding="utf-8")
            return "merged"

        return MergeAtEnd(merge)


@dataclass(frozen=True)
class Finishing(Reads):
    """`Reads`, saying what a rerun on its own published OUT returns."""

    def finished(self, out: Path) -> tuple[str, Path]:
        return ("finished", out)


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_an_output_over_or_in_an_input_is_refused_before_anything_is_written(tmp_path):
    src = tmp_path / "in" / "src"
    src.mkdir(parents=True)
    (src / "keep.txt").write_text("precious")
    before = _files(tmp_path)
    for out, relation in ((src, "is"), (src / "new", "lies inside"), (tmp_path / "in", "contains")):
        fix = re.escape(f"--out {out}: {relation} the input {src}; ") + ".*" + re.escape(f"choose an output outside {src}")
        with pytest.raises(StageError, match=fix):
            run_stage(Reads(src), out)
        assert _files(tmp_path) == before  # no work folder beside OUT, nothing in the input


def test_a_file_a_path_under_a_file_and_a_foreign_folder_are_refused(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (tmp_path / "f").write_text("a file")
    with pytest.raises(StageError, match=re.escape(f"--out {tmp_path / 'f'}: is a file, not a folder")):
        run_stage(Reads(src), tmp_path / "f")
    with pytest.raises(StageError, match=re.escape(f"{tmp_path / 'f'} is a file, so no folder can be made under it")):
        run_stage(Reads(src), tmp_path / "f" / "out")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("precious")
    with pytest.raises(StageError, match="exists and is not empty .*; choose a new --out"):
        run_stage(Reads(src), tmp_path / "full")
    assert _files(tmp_path) == ["f", "full", "full/keep.txt", "src"]


def test_a_published_run_is_returned_by_its_stage_or_refused_without_one(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    out = tmp_path / "out"
    assert run_stage(Finishing(src), out) == "merged"
    (out / INFO_PATH).parent.mkdir(parents=True)
    (out / INFO_PATH).write_text("{}")  # a dataset root, as every real stage publishes
    stamp_dataset(out, Finishing.name, Finishing(src).fingerprint())
    assert run_stage(Finishing(src), out) == ("finished", out)  # the same run: nothing to do
    with pytest.raises(StageError, match="exists and is not empty"):
        run_stage(Finishing(src, n=3), out)  # other settings: another run
    with pytest.raises(StageError, match="exists and is not empty"):
        run_stage(Reads(src), out)  # a stage that says nothing of a finished rerun refuses it


def test_a_run_folder_the_stage_names_is_guarded_against_its_inputs_only(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    with pytest.raises(StageError, match="lies inside the input"):
        run_stage(Reads(src), src / "run", work=src / "run")
    out = tmp_path / "run"
    assert run_stage(Reads(src), out, work=out) == "merged"  # its own run folder (generate's): open_work's to judge


@dataclass(frozen=True)
class InFolder(Reads):
    """`Reads` whose OUT is a run folder: it publishes OUT/data beside OUT/summary.txt (a roll-out's
    shape), resumes what the rule `resumable` accepts, and logs when `prepare` runs."""

    fail: int | None = None  # the item that raises (a run that stops there)
    log: Path | None = None
    dataset: ClassVar[str] = "data"

    def resumable(self, out: Path) -> bool:
        return (out / "killed-before-the-stage").exists()

    def prepare(self) -> None:
        if self.log is not None:
            self.log.write_text("prepared", encoding="utf-8")

    def finished(self, out: Path) -> str:
        return (out / "summary.txt").read_text(encoding="utf-8")

    def run_item(self, k: int, shard: Path, progress) -> dict:
        if k == self.fail:
            raise StageError(f"item {k} failed")
        return super().run_item(k, shard, progress)

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        def merge(shards, results):
            data = out / self.dataset
            (data / INFO_PATH).parent.mkdir(parents=True)
            (data / INFO_PATH).write_text("{}")
            stamp_dataset(data, self.name, self.fingerprint())
            (out / "summary.txt").write_text(f"{len(shards)} items", encoding="utf-8")
            return "merged"

        return MergeAtEnd(merge)


def test_a_run_folder_stage_is_guarded_as_a_whole_before_anything_is_written(tmp_path):
    src, log = tmp_path / "src", tmp_path / "prepared"
    src.mkdir()
    with pytest.raises(StageError, match=re.escape(f"--out {src / 'run'}: lies inside the input {src}")):
        run_stage(InFolder(src, log=log), src / "run")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("precious")
    with pytest.raises(StageError, match=re.escape(f"--out {tmp_path / 'full'}: exists and is not empty")):
        run_stage(InFolder(src, log=log), tmp_path / "full")
    assert _files(tmp_path) == ["full", "full/keep.txt", "src"]  # not even prepared
    out = tmp_path / "out"
    with pytest.raises(StageError, match="item 0 failed"):
        run_stage(InFolder(src, fail=0, log=log), out)
    assert log.exists() and not out.exists()  # nothing to resume: the folder the run made is gone


def test_a_run_folder_a_killed_run_left_resumes_and_a_finished_one_is_returned(tmp_path):
    src, log = tmp_path / "src", tmp_path / "prepared"
    src.mkdir()
    out = tmp_path / "out"
    with pytest.raises(StageError, match="item 1 failed"):
        run_stage(InFolder(src, fail=1), out)
    assert [p.name for p in out.iterdir()] == [".data.reads-shards"]  # item 0, final, kept for the rerun
    assert run_stage(InFolder(src), out) == "merged"
    assert _files(out) == ["data", "data/meta", "data/meta/demoforge", "data/meta/demoforge/stages",
                           "data/meta/demoforge/stages/reads.json", "data/meta/info.json", "summary.txt"]
    (out / ".data.reads-shards").mkdir()  # as a kill after publishing leaves it
    assert run_stage(InFolder(src, log=log), out) == "2 items"  # finished: the stage says what it returns
    assert not log.exists() and not (out / ".data.reads-shards").exists()
    with pytest.raises(StageError, match="exists and is not empty"):
        run_stage(InFolder(src, n=3), out)  # other settings: another run


def test_a_run_folder_the_stage_rule_accepts_is_gone_on_with(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "killed-before-the-stage").write_text("")
    assert run_stage(InFolder(src), out) == "merged"


def test_a_refused_output_starts_no_worker(tmp_path):
    """The local executor's workers start once the guard has let the run go on: a refused OUT
    spawns none (each would import demoforge only to be stopped); an accepted OUT runs on two slots."""
    import multiprocessing

    from demoforge.stage import LocalExecutor

    source = tmp_path / "in"
    source.mkdir()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "file").write_text("x", encoding="utf-8")
    with LocalExecutor(2) as local:
        with pytest.raises(StageError, match="not empty"):
            run_stage(Reads(source), foreign, executor=local)
        assert multiprocessing.active_children() == []
    with LocalExecutor(2) as local:
        assert run_stage(Reads(source, n=3), tmp_path / "out", executor=local) == "merged"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["0.txt", "1.txt", "2.txt"]
