"""WriterConfig: everything fixed when a dataset is created (stored in the writer's staging, so a
resumed writer needs only the root), and the info block each video feature gets from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from demoforge.dataset import segmentation
from demoforge.dataset.depth import DepthCoding, is_depth
from demoforge.dataset.layout import (
    DEFAULT_CHUNKS_SIZE, DEFAULT_DATA_FILE_SIZE_MB, DEFAULT_VIDEO_FILE_DURATION_S,
    DEFAULT_VIDEO_FILE_SIZE_MB, Feature, index_features,
)
from demoforge.dataset.video import VideoSettings


@dataclass(frozen=True)
class WriterConfig:
    """Everything fixed when a dataset is created; stored in staging so resume needs only the root."""

    fps: int  # frames per second [Hz]
    features: dict[str, Feature]  # user features (index features are added)
    robot_type: str | None = None
    video: VideoSettings = field(default_factory=VideoSettings)
    data_file_size_mb: float = DEFAULT_DATA_FILE_SIZE_MB  # start a new data file past this size
    video_file_size_mb: float = DEFAULT_VIDEO_FILE_SIZE_MB  # start a new mp4 past this size
    video_file_duration_s: float = DEFAULT_VIDEO_FILE_DURATION_S  # start a new mp4 before this length [s]
    chunks_size: int = DEFAULT_CHUNKS_SIZE  # files per chunk folder

    def all_features(self) -> dict[str, Feature]:
        """User features with video info blocks filled in, then the index features."""
        out = {}
        for key, ft in self.features.items():
            if ft.dtype == "video":
                ft = Feature("video", ft.shape, ["height", "width", "channels"],
                             video_info(key, ft, fps=self.fps, video=self.video))
            out[key] = ft
        out.update(index_features())
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "fps": self.fps, "features": {k: f.to_json() for k, f in self.features.items()},
            "robot_type": self.robot_type, "video": self.video.to_json(),
            "data_file_size_mb": self.data_file_size_mb, "video_file_size_mb": self.video_file_size_mb,
            "video_file_duration_s": self.video_file_duration_s, "chunks_size": self.chunks_size,
        }

    @staticmethod
    def from_json(raw: dict[str, Any]) -> "WriterConfig":
        raw = dict(raw)
        raw["features"] = {k: Feature.from_json(k, v) for k, v in raw["features"].items()}
        raw["video"] = VideoSettings.from_json(raw["video"])
        return WriterConfig(**raw)


def video_info(key: str, ft: Feature, *, fps: int, video: VideoSettings) -> dict[str, Any]:
    """The info block video feature `key` gets when written at `fps` with `video`: depth maps
    and segmentation maps have their own lossless coding, other cameras follow `video`; a
    complete block (one with `video.codec`, e.g. carried over by merge) is kept as it is."""
    given = dict(ft.info or {})
    if "video.codec" in given:
        return given
    height, width = ft.shape[0], ft.shape[1]
    if is_depth(given):
        return DepthCoding.from_info(given).info_block(fps=fps, height=height, width=width, g=video.gop(fps))
    if segmentation.is_segmentation(key, given):
        return segmentation.info_block(fps=fps, height=height, width=width, g=video.gop(fps))
    return video.info_block(fps=fps, height=height, width=width, is_depth_map=bool(given.get("is_depth_map", False)))
