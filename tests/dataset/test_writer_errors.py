"""Bad input: one DatasetError naming feature, episode, frame and the fix, before anything is written."""

import numpy as np
import pytest

from demoforge.dataset import DatasetWriter, Feature
from demoforge.errors import DatasetError, EmptyDatasetError
from tests.dataset._synth import FEATURES, episode


@pytest.fixture
def writer(tmp_path):
    w = DatasetWriter.create(tmp_path / "ds", fps=30, features=FEATURES)
    yield w
    if w.num_episodes:
        w.finalize()
    else:  # every add was refused: there is no dataset to finalize
        w.discard()


def staged_files(w):
    return sorted(p.name for p in (w.root / ".demoforge-staging").rglob("*") if p.is_file() and p.name != "lock")


@pytest.mark.parametrize("features, match", [
    ({"x": Feature("float16", (3,))}, "dtype 'float16' is not supported; use one of"),
    ({"cam": Feature("video", (32, 48, 4))}, r"must be \(height, width, 3\)"),
    ({"cam": Feature("video", (31, 48, 3))}, "even height and width"),
    ({"m": Feature("float32", (2, 3))}, r"flatten it to \(6,\)"),
    ({"timestamp": Feature("float32", (1,))}, "index feature"),
    ({"s": Feature("float32", (3,), ["a", "b"])}, "2 names for shape"),
])
def test_bad_feature_declarations(tmp_path, features, match):
    with pytest.raises(DatasetError, match=match):
        DatasetWriter.create(tmp_path / "ds", fps=30, features=features)
    assert not (tmp_path / "ds").exists()


def test_unknown_dtype_in_info_json_is_named():
    with pytest.raises(DatasetError, match="feature 'x': dtype 'complex64'"):
        Feature.from_json("x", {"dtype": "complex64", "shape": [2]})


def test_wrong_shape(writer):
    cols = episode(0)
    cols["observation.state"] = cols["observation.state"][:, :3]
    with pytest.raises(DatasetError, match=r"episode 0: .*'observation.state': shape \(3,\) per frame, expected \(4,\)"):
        writer.add_episode(cols, task="t")
    assert staged_files(writer) == ["config.json"]


def test_nan_names_feature_episode_and_frame(writer):
    cols = episode(0)
    cols["action"][7, 2] = np.nan
    with pytest.raises(DatasetError, match=r"episode 0: feature 'action': non-finite value nan at frame 7"):
        writer.add_episode(cols, task="t")
    cols["action"][7, 2] = np.inf
    with pytest.raises(DatasetError, match="non-finite value inf at frame 7"):
        writer.add_episode(cols, task="t")
    assert staged_files(writer) == ["config.json"]


def test_wrong_frame_size(writer):
    cols = episode(0)
    cols["observation.images.front"] = np.zeros((20, 32, 40, 3), np.uint8)
    with pytest.raises(DatasetError, match=r"frames of shape \(32, 40, 3\), expected \(32, 48, 3\)"):
        writer.add_episode(cols, task="t")


def test_frame_dtype_must_be_uint8(writer):
    cols = episode(0)
    cols["observation.images.front"] = cols["observation.images.front"].astype(np.float32)
    with pytest.raises(DatasetError, match="expected uint8"):
        writer.add_episode(cols, task="t")


def test_length_zero(writer):
    cols = {k: v[:0] for k, v in episode(0).items()}
    with pytest.raises(DatasetError, match="length 0"):
        writer.add_episode(cols, task="t")


@pytest.mark.parametrize("task", [3, None, "", ["pick"]])
def test_task_must_be_a_string(writer, task):
    with pytest.raises(DatasetError, match="episode 0: task .* must be a non-empty string"):
        writer.add_episode(episode(0), task=task)


def test_missing_extra_and_mismatched_lengths_reported_together(writer):
    cols = episode(0)
    del cols["action"]
    cols["reward"] = np.zeros(20)
    cols["observation.state"] = cols["observation.state"][:5]
    with pytest.raises(DatasetError) as err:
        writer.add_episode(cols, task="t")
    msg = str(err.value)
    assert "missing features ['action']" in msg and "unknown features ['reward']" in msg and "differ in length" in msg


def test_bad_frame_in_frame_mode_names_frame(writer):
    cols = episode(0)
    for t in range(3):
        writer.add_frame({k: v[t] for k, v in cols.items()}, task="t")
    bad = {k: v[3].copy() for k, v in cols.items()}
    bad["observation.state"][0] = np.nan
    with pytest.raises(DatasetError, match="episode 0, frame 3: feature 'observation.state': non-finite"):
        writer.add_frame(bad, task="t")
    writer.clear_episode()


def test_unsafe_cast_refused(tmp_path):
    with DatasetWriter.create(tmp_path / "ds", fps=30, features={"flag": Feature("bool", (1,))}) as w:
        with pytest.raises(DatasetError, match="dtype float64 cannot be stored as bool"):
            w.add_episode({"flag": np.zeros(4)}, task="t")
        w.add_episode({"flag": np.zeros(4, bool)}, task="t")


def test_extra_must_be_json(writer):
    with pytest.raises(DatasetError, match="extra 'draw' is not plain JSON"):
        writer.add_episode(episode(0), task="t", extra={"draw": np.float32(1.0)})
    with pytest.raises(DatasetError, match="extra 'x' is not plain JSON"):
        writer.add_episode(episode(0), task="t", extra={"x": float("nan")})


def test_state_only_features_accept_scalar_columns(tmp_path):
    """A (T,) column for a feature of shape (1,) is taken as (T, 1), cast to the feature's dtype."""
    from demoforge.dataset import open_dataset

    with DatasetWriter.create(tmp_path / "ds", fps=30, features={"r": Feature("float32", (1,))}) as w:
        w.add_episode({"r": np.arange(5, dtype=np.float64)}, task="t")
    back = open_dataset(tmp_path / "ds").read_episode(0, ["r"])["r"]
    assert back.dtype == np.float32 and back.reshape(5, -1).shape == (5, 1)
    np.testing.assert_array_equal(back.reshape(-1), np.arange(5, dtype=np.float32))


def test_a_writer_without_episodes_refuses_to_finalize_and_leaves_nothing(tmp_path):
    """An info.json without meta/episodes is no dataset: the writer refuses it, and what it staged
    (and the root it made) is gone, so the corrected run writes the same root."""
    root = tmp_path / "ds"
    with pytest.raises(EmptyDatasetError, match="no episode was added"):
        with DatasetWriter.create(root, fps=30, features=FEATURES) as w:
            w.write_meta_file("provenance.json", {"run": 1})
    assert not root.exists()
    with DatasetWriter.create(root, fps=30, features=FEATURES) as w:
        w.add_episode(episode(0), task="t")
    assert (root / "meta" / "episodes").is_dir()


def test_an_empty_root_given_stays_empty_and_a_resumed_empty_writer_is_refused_too(tmp_path):
    root = tmp_path / "ds"
    root.mkdir()
    DatasetWriter.create(root, fps=30, features=FEATURES).__exit__(RuntimeError, None, None)  # killed: staging kept
    w = DatasetWriter.resume(root)
    with pytest.raises(EmptyDatasetError, match=f"{root}: no episode was added"):
        w.finalize()
    assert root.is_dir() and not any(root.iterdir())


def test_discard_drops_the_episodes_and_a_later_finalize_does_nothing(tmp_path):
    root = tmp_path / "ds"
    with DatasetWriter.create(root, fps=30, features=FEATURES, data_as_added=True) as w:
        w.add_episode(episode(0), task="t")
        w.discard()
        with pytest.raises(DatasetError, match="discarded"):
            w.add_episode(episode(1), task="t")
    assert not root.exists()
