"""The writer encodes cameras on threads of their own: the bytes must not depend on scheduling.

The different x264 bytes once blamed on encoder threads reproduce with no thread at all:
PyAV's own RGB -> YUV conversion inside `encode` (replaced by `rgb_to_yuv420p`), and,
with fully written frames, libx264 itself, which picks some SIMD routines at run time (a
few distinct outputs per 100 identical sequential runs of a 64x48 clip, many more while
other threads worked). `cpu-independent=1` fixes that choice, so x264 cameras are threaded
too. These tests write the same episodes many times under CPU load, every codec, both
APIs, several cameras (the 64x48 one among them), and compare every byte.
"""

import hashlib
import threading

import numpy as np
import pytest

from demoforge.dataset import DatasetWriter, Feature, VideoSettings

# Unaligned widths on purpose: rows that are not a multiple of the SIMD width leave frame padding.
CAMERAS = {"observation.images.a": (48, 64, 3), "observation.images.b": (66, 90, 3),
           "observation.images.c": (32, 32, 3)}
FEATURES = {"observation.state": Feature("float32", (4,)),
            **{k: Feature("video", shape, ["height", "width", "channels"]) for k, shape in CAMERAS.items()}}
LENGTHS = (24, 19)  # not multiples of the writer's 16-frame batches
RUNS = 8  # per codec, half through each API


def _episodes() -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    episodes = []
    for length in LENGTHS:
        cols = {"observation.state": rng.normal(size=(length, 4)).astype(np.float32)}
        for key, (h, w, _) in CAMERAS.items():
            t = np.arange(length)[:, None, None, None]
            ramp = (np.arange(w)[None, None, :, None] * 3 + t * 5 + np.arange(3) * 60) % 256
            noise = rng.integers(0, 24, size=(length, h, w, 3))
            cols[key] = np.broadcast_to(ramp + noise, (length, h, w, 3)).clip(0, 255).astype(np.uint8)
        episodes.append(cols)
    return episodes


EPISODES = _episodes()


def _write(root, video: VideoSettings, api: str) -> dict[str, str]:
    with DatasetWriter.create(root, fps=30, features=FEATURES, video=video) as w:
        for cols in EPISODES:
            if api == "episode":
                w.add_episode(cols, task="t")
                continue
            # one buffer per key, overwritten every frame, as a renderer does
            frame = {k: np.empty_like(v[0]) for k, v in cols.items()}
            for t in range(len(cols["observation.state"])):
                for key, buf in frame.items():
                    buf[...] = cols[key][t]
                w.add_frame(frame, task="t")
            w.save_episode()
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def cpu_load():
    """Two threads of NumPy work competing with the encoder threads for the cores."""
    stop = threading.Event()

    def burn():
        rng = np.random.default_rng(0)
        while not stop.is_set():
            np.sort(rng.random(200_000))

    burners = [threading.Thread(target=burn) for _ in range(2)]
    for b in burners:
        b.start()
    yield
    stop.set()
    for b in burners:
        b.join()


@pytest.mark.parametrize("video", [VideoSettings(), VideoSettings.lerobot_default(), VideoSettings(codec="hevc")],
                         ids=["h264", "av1", "hevc"])
def test_threaded_writer_bytes_are_identical_run_to_run(tmp_path, cpu_load, video):
    digests = [_write(tmp_path / f"run{i}", video, "episode" if i % 2 == 0 else "frame") for i in range(RUNS)]
    assert any(name.endswith(".mp4") for name in digests[0])
    for i, d in enumerate(digests[1:], start=1):
        changed = sorted(name for name in d if d[name] != digests[0].get(name))
        assert d.keys() == digests[0].keys() and not changed, f"run {i} differs from run 0 in {changed}"


def test_lossless_map_bytes_are_identical_run_to_run(tmp_path, cpu_load):
    """Depth and segmentation maps (x265, lossless): x265's thread pool wrote other bytes about one
    run in sixty under load (now pools=none), and its weighted-prediction analysis changed P frames'
    bytes: 7 distinct outputs of 24 runs on CI (now weightp=0; `segmentation.X265_PARAMS`)."""
    from tests.dataset.test_lossless_maps import _write as write_maps

    digests = set()
    for i in range(24):
        root = tmp_path / f"run{i}"
        write_maps(root)
        videos = sorted(root.rglob("*.mp4"))
        assert len(videos) == 2  # the depth map and the segmentation map
        digests.add(tuple((v.relative_to(root).as_posix(), hashlib.sha256(v.read_bytes()).hexdigest())
                          for v in videos))
    assert len(digests) == 1
