"""LeRobot v3.0 dataset I/O: layout, writer, reader, stats, video, merge and check."""

from demoforge.dataset.check import check_dataset
from demoforge.dataset.layout import DatasetInfo, Feature, read_info
from demoforge.dataset.merge import DatasetMerger, merge_datasets
from demoforge.dataset.problem import Problem
from demoforge.dataset.reader import DatasetReader, open_dataset
from demoforge.dataset.remux import EncodedVideo
from demoforge.dataset.video import VideoSettings
from demoforge.dataset.writer import DatasetWriter

__all__ = [
    "DatasetInfo", "DatasetMerger", "DatasetReader", "DatasetWriter", "EncodedVideo", "Feature", "Problem", "VideoSettings",
    "check_dataset", "merge_datasets", "open_dataset", "read_info",
]
