"""LeRobot v3.0 dataset I/O: layout, writer, reader, stats, video, merge and check."""

from demoforge.dataset.layout import DatasetInfo, Feature, read_info
from demoforge.dataset.video import VideoSettings
from demoforge.dataset.writer import DatasetWriter

__all__ = ["DatasetInfo", "DatasetWriter", "Feature", "VideoSettings", "read_info"]
