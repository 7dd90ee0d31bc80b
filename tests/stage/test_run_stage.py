"""run_stage: a stage killed inside an item resumes from its finished shards to the bytes of an
uninterrupted run, any worker count gives the same bytes, a work folder of another run is
replaced (beside OUT) or refused (a folder the user named); bake and annotate resume; the Ray
executor runs a non-execute stage with every setting it carries."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.convert.bake import BakeStage
from demoforge.dataset import open_dataset
from demoforge.errors import DemoforgeError
from demoforge.pipeline.annotate import AnnotateStage, annotate_dataset
from demoforge.stage import LocalExecutor, MergeAtEnd, ProgressEvent, StageError, chunks, run_stage
from demoforge.stage.runner import STAMP_DIR
from tests.convert._sources import JOINTS, N_ARM, N_STATE, law, raw_columns, write_raw


class Killed(Exception):
    pass


def kill_at(monkeypatch, stage_cls, item: int | None, ran: list | None = None) -> None:
    """Make `stage_cls.run_item` raise Killed at item `item` (never when None), recording the
    items it is asked to run in `ran`."""
    real = stage_cls.run_item

    def run_item(self, k, shard, progress):
        if ran is not None:
            ran.append(k)
        if k == item:
            raise Killed
        return real(self, k, shard, progress)

    monkeypatch.setattr(stage_cls, "run_item", run_item)


@dataclass(frozen=True)
class Words:
    """A toy stage: item k writes `word * (k + 1)` into its shard; the merge joins them."""

    word: str
    n: int = 5
    name: ClassVar[str] = "words"
    error: ClassVar[type] = StageError

    def fingerprint(self) -> dict:
        return {"word": self.word, "n": self.n}

    def items(self) -> list[str]:
        return [f"w{k}" for k in range(self.n)]

    def total(self) -> int:
        return self.n

    def run_item(self, k: int, shard: Path, progress) -> dict:
        (shard / "text").write_text(self.word * (k + 1), encoding="utf-8")
        with open(shard.parent.parent / "calls", "a", encoding="utf-8") as f:  # which items ran (this run folder)
            f.write(f"{k}\n")
        if progress is not None:
            progress(ProgressEvent("words", "episode", f"w{k}"))
        return {"episodes": 1}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: out.write_text(
            "|".join((s / "text").read_text(encoding="utf-8") for s in shards), encoding="utf-8"))


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_chunks_cover_in_order_and_ignore_workers():
    assert chunks(5, most=2, least=1) in ([range(0, 2), range(2, 5)], [range(0, 3), range(3, 5)])
    assert [i for r in chunks(37, least=1) for i in r] == list(range(37)) and len(chunks(37, least=1)) == 16
    assert chunks(0) == []
    # items of at least 4 episodes where there are that many (each item pays a start and a merge share),
    # as many as a power of two, so two slots share them evenly (5 of 4 left one slot idle a fifth)
    assert [len(r) for r in chunks(3)] == [3] and [len(r) for r in chunks(20)] == [5] * 4
    assert [len(r) for r in chunks(12)] == [6, 6] and len(chunks(44)) == 8
    assert [i for r in chunks(101) for i in r] == list(range(101)) and len(chunks(101)) == 16


def test_a_killed_run_resumes_from_its_finished_items(tmp_path, monkeypatch):
    stage, out = Words("ab"), tmp_path / "out.txt"
    work = tmp_path / ".out.txt.words-shards"
    kill_at(monkeypatch, Words, 3)
    with pytest.raises(Killed):
        run_stage(stage, out)
    monkeypatch.undo()
    assert not out.exists()
    assert sorted(p.name for p in (work / ".shards").iterdir()) == ["0000-w0", "0001-w1", "0002-w2", "0003-w3"]
    assert not (work / ".shards" / "0003-w3" / "done.json").exists()
    events = []
    run_stage(stage, out, progress=events.append)
    assert out.read_text() == "|".join("ab" * (k + 1) for k in range(5))
    assert not work.exists()  # merged: the work folder is gone
    # the rerun ran only the unfinished items, and counted the finished ones as done
    assert [e.done for e in events if e.kind == "episode"] == [4, 5]
    assert {e.total for e in events} == {5}


def test_another_runs_work_folder_is_replaced_beside_out_and_refused_when_named(tmp_path, monkeypatch):
    out = tmp_path / "out.txt"
    monkeypatch.setattr(Words, "run_item", lambda self, k, shard, progress: (_ for _ in ()).throw(Killed))
    with pytest.raises(Killed):
        run_stage(Words("ab"), out)
    monkeypatch.undo()
    run_stage(Words("cd", n=2), out)  # other settings: the stale shards are not continued
    assert out.read_text() == "cd|cdcd"
    named = tmp_path / "run"
    run_stage(Words("ab", n=1), named / "out.txt", work=named)
    with pytest.raises(StageError, match="other inputs .*differing: word"):
        run_stage(Words("xy", n=1), named / "out2.txt", work=named)


def test_one_and_two_workers_give_the_same_bytes(tmp_path):
    with LocalExecutor(2) as two:
        run_stage(Words("ab", n=6), tmp_path / "two.txt", executor=two)
    run_stage(Words("ab", n=6), tmp_path / "one.txt")
    assert (tmp_path / "one.txt").read_bytes() == (tmp_path / "two.txt").read_bytes()


def test_stage_errors_are_demoforge_errors():
    assert issubclass(StageError, DemoforgeError)
    with pytest.raises(StageError, match="workers"):
        LocalExecutor(0)


def test_bake_resumes_from_its_finished_shards(tmp_path, monkeypatch):
    src = write_raw(tmp_path / "raw", lengths=(8, 6, 7, 5) * 4)  # 16 episodes: 4 items of 4
    cfg = BakeConfig(control_space="joint_vel", control_freq=30)
    ref = bake([src], tmp_path / "ref", cfg)
    ran = []
    kill_at(monkeypatch, BakeStage, 2, ran)
    with pytest.raises(Killed):
        bake([src], tmp_path / "out", cfg)
    assert ran == [0, 1] + [2] and not (tmp_path / "out").exists()
    shards = tmp_path / ".out.bake-shards" / ".shards"
    assert [(p / "done.json").is_file() for p in sorted(shards.iterdir())] == [True, True, False]
    ran.clear()
    monkeypatch.undo()
    kill_at(monkeypatch, BakeStage, None, ran)
    bake([src], tmp_path / "out", cfg)
    assert ran == [2, 3]  # only the unfinished items ran again
    assert _tree(tmp_path / "out") == _tree(ref)
    assert not list(tmp_path.glob(".*-shards"))


def _raw_with_plans(root: Path, lengths) -> Path:
    """A state-only raw dataset (write_raw's columns) whose episodes record a two-step plan."""
    from demoforge.dataset import DatasetWriter
    from demoforge.raw import schema

    features = schema.raw_features(n_arm=N_ARM, n_command=N_ARM, n_state=N_STATE, atoms=["(on a b)"],
                                   joint_names=JOINTS)
    with DatasetWriter.create(root, fps=60, features=features, robot_type="test_arm") as w:
        for e, n in enumerate(lengths):
            plan = [{"operator": "pick-up", "args": ["a"], "ticks": [0, 2]},
                    {"operator": "stack", "args": ["a", "b"], "ticks": [2, n]}]
            w.add_episode(raw_columns(n, seed=e, cams=()), task="stack", extra={"outcome": "success", "plan": plan})
        w.write_meta_file(schema.CONTROLLER_META, law().to_json())
    return root


def test_annotate_resumes_and_gives_the_same_bytes(tmp_path, monkeypatch):
    src = _raw_with_plans(tmp_path / "raw", lengths=(5, 4, 6, 3) * 4)  # 4 items of 4; no camera: goal.action
    ref = tmp_path / "ref"
    run_stage(AnnotateStage(src, ()), ref)
    kill_at(monkeypatch, AnnotateStage, 1)
    with pytest.raises(Killed):
        run_stage(AnnotateStage(src, ()), tmp_path / "out")
    monkeypatch.undo()
    assert (tmp_path / ".out.annotate-shards" / ".shards" / "0000-episodes-0-3" / "done.json").is_file()
    with LocalExecutor(2) as two:
        run_stage(AnnotateStage(src, ()), tmp_path / "out", executor=two)
    assert _tree(tmp_path / "out") == _tree(ref)


def test_annotate_labels_a_source_without_a_camera_with_goal_action_only(tmp_path):
    src = _raw_with_plans(tmp_path / "raw", lengths=(5, 4, 6))
    lines: list[str] = []
    out = tmp_path / "out"
    assert annotate_dataset(src, out, warn=lines.append) == {"annotated": True, "episodes": 3, "cameras": [],
                                                               "rows": "every tick"}
    assert "has no camera video" in lines[0] and "goal.action only" in lines[0]
    ds = open_dataset(out)
    assert "goal.position" not in ds.info.features and ds.num_frames == 15
    assert ds.read_episode(1, ["goal.action"])["goal.action"].tolist() == ["pick a"] * 2 + ["stack a on b"] * 2
    # the source's records come along (the controller law a bake of the annotated dataset needs)
    assert (out / "meta" / "demoforge" / "controller.json").read_bytes() == \
        (src / "meta" / "demoforge" / "controller.json").read_bytes()
    assert json.loads((out / STAMP_DIR / "annotate.json").read_text())["stage"] == "annotate"
    with pytest.raises(DemoforgeError, match="episode 0: no demoforge/plan record"):
        annotate_dataset(write_raw(tmp_path / "planless", lengths=(3,), cams=()), tmp_path / "x", warn=lambda s: None)


_RAY_CHILD = """
import hashlib, json, sys
from pathlib import Path
from demoforge.convert import BakeConfig, bake
from demoforge.stage.ray import RayExecutor
from tests.convert._sources import JOINTS, N_ARM, N_STATE, law, raw_columns, write_raw

tmp = Path(sys.argv[1])
src = write_raw(tmp / "raw", lengths=(8, 6, 7))
cfg = BakeConfig(control_space="joint_vel", control_freq=20, task="a task set here")
local = bake([src], tmp / "local", cfg, workers=2)
try:
    executor = RayExecutor()
except Exception as e:
    print(json.dumps({"skip": str(e)}))
    raise SystemExit(0)
with executor:
    on_ray = bake([src], tmp / "ray", cfg, executor=executor)
tree = lambda root: {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                     for p in sorted(root.rglob("*")) if p.is_file()}
import demoforge.stage.ray as on
on._item = lambda run, k: "elsewhere"  # a node that wrote the shard to its own disk, not this machine's
try:
    bake([src], tmp / "apart", cfg, executor=RayExecutor())
    apart = "no error"
except Exception as e:
    apart = str(e)
print(json.dumps({"same": tree(on_ray) == tree(local), "stamp": json.loads((on_ray / "meta" / "bake.json").read_text()),
                  "left": [str(p) for p in (tmp / ".ray.bake-shards").glob("*")], "apart": apart}))
"""


@pytest.mark.slow
def test_ray_executor_bakes_with_every_setting_as_the_local_pool_does(tmp_path):
    """In a child process: a Ray session of its own left in a pytest worker made a later Ray
    cluster test in the same worker fail to fetch the objects it put (OwnerDiedError)."""
    import os
    import subprocess
    import sys

    from tests.timeouts import SUBPROCESS_S

    pytest.importorskip("ray")
    repo = Path(__file__).resolve().parents[2]
    child = subprocess.run([sys.executable, "-c", _RAY_CHILD, str(tmp_path)], cwd=repo, capture_output=True, text=True,
                           env={**os.environ, "MUJOCO_GL": "egl"}, timeout=SUBPROCESS_S, check=False)
    assert child.returncode == 0, child.stderr[-3000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    if "skip" in result:  # a machine where Ray cannot start skips cleanly
        pytest.skip(f"ray cannot start here: {result['skip']}")
    assert result["same"]
    assert result["stamp"]["control_freq"] == 20 and result["stamp"]["task_override"] == "a task set here"
    assert result["left"] == []  # merged and removed
    assert "is not on this machine" in result["apart"] and "Ray node elsewhere" in result["apart"], result["apart"]


def test_a_second_live_run_into_the_same_output_is_refused_and_leaves_the_first_intact(tmp_path):
    """The work folder beside OUT is held by its live run: a second run of the same stage into the
    same OUT is refused (it would otherwise replace or mix into the first one's shards)."""
    from demoforge.dataset.guard import hold_folder, release_temp

    stage = Words("ab", n=3)
    out = tmp_path / "out.txt"
    work = out.parent / f".{out.name}.{stage.name}-shards"
    fd = hold_folder(work)  # as a live run holds it
    (work / "marker").write_text("the first run's")
    try:
        with pytest.raises(Exception, match="another run of this command is writing it"):
            run_stage(stage, out)
        assert (work / "marker").read_text() == "the first run's"
        assert not out.exists()
    finally:
        release_temp(fd)
    run_stage(stage, out)  # once the first run is gone, the folder is ours
    assert out.read_text() == "ab|abab|ababab" and not work.exists()


def test_every_stage_stamps_what_it_wrote_with_its_fingerprint(tmp_path):
    """run_stage's stages leave `meta/demoforge/stages/<stage>.json` (name, version, fingerprint)
    in each dataset they publish, written before the dataset is moved into place."""
    from demoforge.stage.merge import MergeStage

    src = write_raw(tmp_path / "raw", lengths=(5, 4), cams=())
    cfg = BakeConfig(control_space="joint_vel", control_freq=30)
    baked = bake([src], tmp_path / "baked", cfg)
    record = json.loads((baked / STAMP_DIR / "bake.json").read_text())
    assert record["stage"] == "bake" and record["fingerprint"]["stage"] == "bake"
    annotate_dataset(_raw_with_plans(tmp_path / "planned", (5, 4)), tmp_path / "annotated", warn=lambda s: None)
    assert json.loads((tmp_path / "annotated" / STAMP_DIR / "annotate.json").read_text())["stage"] == "annotate"
    stage = MergeStage((src, src))
    run_stage(stage, tmp_path / "merged")
    merged = json.loads((tmp_path / "merged" / STAMP_DIR / "merge.json").read_text())
    assert merged["fingerprint"] == json.loads(json.dumps(stage.fingerprint()))


def test_a_finished_output_is_known_by_its_own_stamp_not_by_one_copied_from_its_source(tmp_path):
    """`finished_output` (a rerun with the same inputs has nothing to do) holds for the stage that
    published OUT; a stamp a later stage copied from its source (`after`) does not count."""
    from demoforge.stage import finished_output, stamp_dataset

    src = write_raw(tmp_path / "raw", lengths=(5, 4), cams=())
    cfg = BakeConfig(control_space="joint_vel", control_freq=30)
    baked = bake([src], tmp_path / "baked", cfg)
    fingerprint = json.loads((baked / STAMP_DIR / "bake.json").read_text())["fingerprint"]
    assert finished_output(baked, "bake", fingerprint)
    assert not finished_output(baked, "bake", {**fingerprint, "config": {}})
    assert not finished_output(tmp_path / "none", "bake", fingerprint)
    later = tmp_path / "later"
    shutil.copytree(baked, later)
    stamp_dataset(later, "export", {"stage": "export"})  # as export, which carries its source's stamps
    assert json.loads((later / STAMP_DIR / "export.json").read_text())["after"] == ["bake"]
    assert not finished_output(later, "bake", fingerprint) and finished_output(later, "export", {"stage": "export"})


def test_the_merge_stage_reports_each_episode_it_merges(tmp_path):
    from demoforge.stage.merge import MergeStage

    a = write_raw(tmp_path / "a", lengths=(5, 4), cams=())
    b = write_raw(tmp_path / "b", lengths=(6,), cams=())
    events = []
    run_stage(MergeStage((a, b), progress=events.append), tmp_path / "out")
    merged = [(e.stage, e.done, e.total) for e in events]
    assert merged == [("merge", k, 3) for k in (1, 2, 3)]
    assert open_dataset(tmp_path / "out").num_episodes == 3


def test_a_cluster_gets_the_task_packages_loaded_here(monkeypatch):
    """Workers on a cluster do not inherit the driver's environment: the executor hands them the
    DEMOFORGE_* settings (the task packages a run loaded by path among them)."""
    from demoforge.stage.ray import cluster_env
    from demoforge.tasks.package import ENV_VAR

    monkeypatch.setenv(ENV_VAR, "/shared/tasks/kitchen_task.py")
    monkeypatch.setenv("UNRELATED_SETTING", "x")
    env = cluster_env()
    assert env[ENV_VAR] == "/shared/tasks/kitchen_task.py" and env["MUJOCO_GL"] == "egl"
    assert "UNRELATED_SETTING" not in env
