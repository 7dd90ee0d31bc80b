"""The bake's config: one record whose fields are the options of `demoforge bake`, of the run
config's `bake:` mapping and of `demoforge run` (`demoforge.fields`), and what a library caller
passes to `bake`.

    bake(["raw/"], "train/", BakeConfig(control_space="joint_vel", control_freq=15))
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from demoforge.convert.conventions import CONVENTIONS, DEFAULT_CONVENTION
from demoforge.convert.filters import IdleFilter
from demoforge.dataset.layout import DEFAULT_VIDEO_FILE_DURATION_S
from demoforge.dataset.video import VideoSettings
from demoforge.errors import DemoforgeError
from demoforge.fields import option, workers_option
from demoforge.tasks.package import task_packages_option

FORMATS = ("v3.0", "v2.1")
KEEP_ALL = "all"  # --keep all: every source per-tick column the bake does not write itself
AUTO_CODEC = "auto"  # --vcodec auto: copy the sources' own encoding where every frame is kept (`encoding.auto_video`)


def _conventions() -> tuple[str, ...]:
    return tuple(sorted(CONVENTIONS))


@dataclass(frozen=True)
class BakeConfig:
    """The two decisions (control space, rate) and everything else a bake is told."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the scenes rebuilt may be a package's
    control_space: str | None = option(DEFAULT_CONVENTION, "Action convention: joint_target, joint_pos, joint_vel, "
                                                           "raw_cmd, or as_recorded (the source's own action "
                                                           "column); run: none = no bake.", kind="str",
                                       choices=_conventions, run_default=None, optional=True)
    control_freq: int | None = option(None, "Output rate [Hz]; must divide the native rate [default: native].",
                                      kind="int", range=(1, 10_000))
    cams: tuple[str, ...] | None = option(None, "Camera views (front) or keys to keep: --cams front --cams wrist, "
                                                "or --cams front,wrist [default: all].", kind="list")
    task: str | None = option(None, "Task string for every episode [default: each episode's own].", kind="str")
    include_failures: bool = option(False, "Bake failed episodes too.")
    filter_idle: bool = option(False, "Drop dead ticks (robot and objects static, no command intent); keeps each "
                                      "run's first (`filters.dead_ticks`).")
    idle: IdleFilter = field(default_factory=IdleFilter)  # tolerances of the dead-tick test (library only)
    vcodec: str = option(AUTO_CODEC, "Video codec: auto (the sources' own encoding, their packets copied, when every "
                                     "frame is kept at the native rate; else h264), h264, hevc or av1.")
    crf: int = option(VideoSettings.crf, "Constant rate factor of the encoder (h264 and hevc take 0-51, av1 0-63).",
                      range=(0, 63))
    gop_seconds: float = option(VideoSettings.gop_s, "Keyframe interval [s].", range=(0.0, 60.0), low_open=True)
    pix_fmt: str = option(VideoSettings.pix_fmt, "Pixel format of the output videos.")
    preset: str | None = option(None, "Encoder speed preset (x264: ultrafast ... veryslow; av1: 0-13) [default: the "
                                      "encoder's].", kind="str")
    max_video_file_seconds: float = option(DEFAULT_VIDEO_FILE_DURATION_S, "Start a new mp4 before this length [s].",
                                           range=(0.0, 1000.0), low_open=True)
    lerobot_format: str = option("v3.0", "Output layout: v3.0 or v2.1.", choices=FORMATS)
    environment_state: bool = option(False, "Add observation.environment_state: the task's object poses, as the "
                                            "demoforge lerobot env observes them (raw demoforge sources).")
    environment_state_kind: str = option("objects", "What --environment-state holds: objects (every goal object's "
                                                    "and distractor's pose) or goal (only the regions the goal names: "
                                                    "the task, not its state, for a policy that sees the objects).",
                                         choices=("objects", "goal"))
    std_floor: float = option(0.0, "Floor the spread meta/stats.json gives each numeric observation (the inputs; "
                                   "not cameras, not actions): std to >= this, [min, max] to >= twice this around "
                                   "its middle, the exact statistics kept in meta/stats.exact.json; for inputs the "
                                   "demos barely move (README: near-constant inputs). v3.0 only; 0 = exact, as "
                                   "lerobot computes them.",
                              range=(0.0, None))
    keep: tuple[str, ...] = option((), "Source per-tick columns to carry through, comma-separated (e.g. "
                                       "next.reward,goal.position), or 'all': every one the bake does not write "
                                       "itself. Columns left behind are named in a note.")
    workers: int | str = workers_option()  # processes; the output does not depend on it

    @property
    def video(self) -> VideoSettings:
        """The encoder a re-encode uses: the codec asked for, h264 under `auto` (where the sources
        cannot be copied); `make_plan` resolves `auto` into `BakePlan.video`."""
        return VideoSettings(codec=VideoSettings.codec if self.vcodec == AUTO_CODEC else self.vcodec, crf=self.crf,
                             gop_s=self.gop_seconds, pix_fmt=self.pix_fmt, preset=self.preset)

    @property
    def video_auto(self) -> bool:
        return self.vcodec == AUTO_CODEC

    @property
    def reads_models(self) -> bool:
        """Whether the bake reads raw episodes' rebuilt MuJoCo models (--filter-idle,
        --environment-state), which its caller passes in (`convert.seams.EpisodeModels`)."""
        return self.filter_idle or self.environment_state

    def stamp(self, video: VideoSettings | None = None) -> dict[str, Any]:
        """The settings that shape the output under meta/bake.json's keys, with `video` the encoder
        the plan chose (default: `self.video`); workers excluded: it must not matter."""
        return {"convention": self.control_space, "control_freq": self.control_freq,
                "cams": list(self.cams) if self.cams is not None else None, "task": self.task,
                "include_failures": self.include_failures, "filter_idle": self.filter_idle, "idle": asdict(self.idle),
                "video": (video or self.video).to_json(), "max_video_file_s": self.max_video_file_seconds,
                "lerobot_format": self.lerobot_format, "environment_state": self.environment_state,
                "environment_state_kind": self.environment_state_kind, "keep": list(self.keep),
                **({"std_floor": self.std_floor} if self.std_floor else {})}  # absent: exact, as before it existed

    def refusals(self) -> list[str]:
        """What a bake would refuse that no one field shows."""
        problems = []
        if self.environment_state_kind != "objects" and not self.environment_state:
            problems.append(f"--environment-state-kind {self.environment_state_kind} needs --environment-state "
                            "(without it no environment state is written)")
        if self.std_floor and self.lerobot_format != "v3.0":
            problems.append(f"--std-floor {self.std_floor} with --lerobot-format {self.lerobot_format}: lerobot reads "
                            "a v2.1 dataset's statistics from meta/episodes_stats.jsonl, which the floor does not "
                            "change; bake v3.0 or leave --std-floor at 0")
        try:  # checked even when a run does not bake (control_space none): it was given for a reason
            self.video
        except DemoforgeError as exc:
            problems.append(str(exc))
        return problems
