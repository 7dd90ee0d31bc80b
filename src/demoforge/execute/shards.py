"""One work item's shards: its success and failure datasets, written in episode order.

Both writers are opened lazily (a split without episodes has no shard) and resumed when
an interrupted run left staging behind. Episodes are added in index order, so the two
shards' episode counts together are the next episode to run.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from demoforge.dataset import DatasetWriter, open_dataset
from demoforge.dataset.keys import episode_extras
from demoforge.dataset.layout import write_json_atomic
from demoforge.dataset.writer import STAGING_DIR
from demoforge.execute.layout import RunLayout
from demoforge.execute.problems import ExecuteError
from demoforge.execute.expert_episode import EpisodeResult
from demoforge.raw import EpisodeRecord, FailureCause, schema
from demoforge.replay import record_scene

SPLITS = ("success", "failure")


@dataclass(frozen=True)
class InlineVideo:
    """Cameras rendered while generating (`generate --record-videos`), as the render stage
    would render them from the recorded states: each episode's frames come from its own
    recorded sim.state rows, so retried attempts leave no frames behind."""

    cameras: tuple[str, ...]  # scene cameras, e.g. ("front", "wrist")
    look: str = "plain"  # shipped look name or a look YAML path
    seed: int = 0  # run seed; each episode's look draw derives from it, the problem and the episode


@dataclass
class ProblemTally:
    """Episodes of one problem by outcome."""

    success: int = 0
    failure: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # failure kind -> count

    def add(self, ok: bool, kind: str | None) -> None:
        if ok:
            self.success += 1
        else:
            self.failure += 1
            self.kinds[kind] = self.kinds.get(kind, 0) + 1


class ShardWriters:
    """The two shard writers of one work item, opened lazily, resumed if interrupted."""

    def __init__(self, folder: Path, layout: RunLayout, *, videos: InlineVideo | None = None,
                 problems: dict | None = None):
        self.folder, self.layout = folder, layout
        self.videos, self.problems = videos, problems or {}
        self._recorder = None
        self.writers: dict[str, DatasetWriter] = {}
        self.done: dict[str, int] = {}
        for split in SPLITS:
            root = folder / split
            if (root / STAGING_DIR).is_dir():
                self.writers[split] = DatasetWriter.resume(root)
                self.done[split] = self.writers[split].num_episodes
            elif (root / "meta" / "info.json").is_file():
                self.done[split] = open_dataset(root).num_episodes
            else:
                self.done[split] = 0

    @property
    def next_episode(self) -> int:
        return sum(self.done.values())

    def add(self, result: EpisodeResult) -> None:
        split = "success" if result.success else "failure"
        w = self.writers.get(split)
        if w is None:
            if (self.folder / split / "meta" / "info.json").is_file():
                raise ExecuteError(f"{self.folder / split}: shard already final but episode {result.episode} "
                                   "belongs to it; remove the item folder and rerun")
            features = self.layout.features()
            if self.videos is not None:
                features = {**features, **self._bind_recorder(result)[0].features()}
            w = DatasetWriter.create(self.folder / split, fps=self.layout.fps, features=features,
                                     robot_type=self.layout.robot_type)
            self.writers[split] = w
        if self.videos is None:
            w.add_episode(result.columns, task=result.task, extra=result.extra)
        else:
            rec, draw = self._bind_recorder(result)
            cols = result.columns
            for t, state in enumerate(cols[schema.SIM_STATE]):
                w.add_frame({**{k: v[t] for k, v in cols.items()}, **rec.render_state(state)}, task=result.task)
            w.save_episode(extra={**result.extra, "look": draw})
        self.done[split] += 1

    def _bind_recorder(self, result: EpisodeResult):
        """The camera recorder set to this episode's scene and look draw."""
        # lazy: render (looks, GL canvas) loads only for a run that records videos inline
        from demoforge.render import CameraRecorder, draw_look, load_look, look_seed, look_targets

        scene, _ = record_scene(self.problems[result.problem], EpisodeRecord.from_extras(result.extra))
        look = load_look(self.videos.look)
        seed = self.videos.seed ^ zlib.crc32(result.problem.encode())
        draw = draw_look(look, look_seed(seed, look.name, result.episode, 0), look_targets(scene))
        if self._recorder is None:
            self._recorder = CameraRecorder(scene, draw, self.videos.cameras)
        else:
            self._recorder.bind(scene, draw)
        return self._recorder, draw

    def finalize(self, tally: ProblemTally) -> None:
        for w in self.writers.values():
            if w.num_episodes:
                w.finalize()
            else:  # resumed from a kill inside its first episode, and no episode of the split came since
                w.discard()
        self._close_recorder()
        write_json_atomic(self.folder / "done.json", asdict(tally))

    def close(self) -> None:
        for w in self.writers.values():
            w.__exit__(RuntimeError, None, None)  # unlock, keep staging for a resume
        self._close_recorder()

    def _close_recorder(self) -> None:
        if self._recorder is not None:
            self._recorder.close()
            self._recorder = None


def tally_of(w: ShardWriters) -> ProblemTally:
    """Tally of the episodes already in an interrupted item's shards (read back from them): from
    the staging of a shard still open, and from the episodes table of one already final (a run
    killed after finalizing it, before its done.json)."""
    t = ProblemTally()
    for split in SPLITS:
        if split in w.writers:
            extras = list(w.writers[split].episode_extras())
        elif w.done[split]:
            extras = [episode_extras(row) for row in open_dataset(w.folder / split).episodes_table.to_pylist()]
        else:
            continue
        for extra in extras:
            failure = extra.get("failure")
            t.add(split == "success", None if failure is None else FailureCause.from_json(failure).kind.value)
    return t
