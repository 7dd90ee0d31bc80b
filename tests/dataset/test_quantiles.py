import numpy as np
import pytest

import demoforge.dataset.quantiles as Q


@pytest.fixture
def values():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(size=(3000, 3)), -np.abs(rng.normal(size=(500, 3))) * 1e-300,
                        np.zeros((10, 3)), np.full((7, 3), 1e100)])
    x[::7, 1] = np.round(x[::7, 1], 1)  # many ties
    return x


def chunked(x, size=700):
    return lambda: [x[i:i + size] for i in range(0, len(x), size)]


def test_radix_selection_matches_numpy_exactly(values, monkeypatch):
    monkeypatch.setattr(Q, "IN_MEMORY_VALUES", 10)  # force the bounded-memory path
    s = Q.streaming_stats(chunked(values), 3)
    for name, q in Q.QUANTILES.items():
        np.testing.assert_array_equal(s[name], np.quantile(values, q, axis=0))
    np.testing.assert_allclose(s["mean"], values.mean(0), rtol=1e-12)
    np.testing.assert_allclose(s["std"], values.std(0), rtol=1e-12)
    assert s["count"] == [len(values)]
    np.testing.assert_array_equal(s["min"], values.min(0))


def test_both_paths_agree_bitwise(values, monkeypatch):
    small = Q.streaming_stats(chunked(values), 3)
    monkeypatch.setattr(Q, "IN_MEMORY_VALUES", 10)
    radix = Q.streaming_stats(chunked(values), 3)
    assert small == radix


def test_single_value_and_1d_chunks():
    s = Q.streaming_stats(lambda: [np.array([2.5])], 1)
    assert s["q01"] == [2.5] and s["q99"] == [2.5] and s["std"] == [0.0]


@pytest.mark.parametrize("gather, groups", [(10**9, 64), (50, 64), (0, 1), (700, 2)])
def test_every_pass_schedule_gives_numpys_quantiles(values, monkeypatch, gather, groups):
    """Gathered buckets, counted buckets and counting deferred to later passes all agree."""
    x = np.concatenate([values, np.full((len(values), 1), 3.25), np.round(values[:, :1] * 1e6) / 1e6], axis=1)
    monkeypatch.setattr(Q, "IN_MEMORY_VALUES", 10)
    monkeypatch.setattr(Q, "GATHER_VALUES", gather)
    monkeypatch.setattr(Q, "HISTOGRAM_GROUPS", groups)
    s = Q.streaming_stats(chunked(x), x.shape[1])
    for name, q in Q.QUANTILES.items():
        np.testing.assert_array_equal(s[name], np.quantile(x, q, axis=0))


def test_values_that_differ_only_in_the_last_bits(monkeypatch):
    """Keys equal in their first 48 bits need all four digits counted to tell apart."""
    x = (1.0 + np.arange(5000) % 97 * np.finfo(np.float64).eps)[:, None]
    monkeypatch.setattr(Q, "IN_MEMORY_VALUES", 10)
    monkeypatch.setattr(Q, "GATHER_VALUES", 0)
    s = Q.streaming_stats(chunked(x), 1)
    for name, q in Q.QUANTILES.items():
        np.testing.assert_array_equal(s[name], np.quantile(x, q, axis=0))


def test_constant_dimensions_in_memory_match_numpy():
    """Constant dimensions skip the partition; their quantiles are their value (also -0.0 and huge values)."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(size=(900, 2)), np.full((900, 1), -2.5), np.full((900, 1), 1e100)], axis=1)
    s = Q.streaming_stats(chunked(x, 250), 4)
    for name, q in Q.QUANTILES.items():
        np.testing.assert_array_equal(s[name], np.quantile(x, q, axis=0))
    np.testing.assert_array_equal(s["min"], x.min(0))
    np.testing.assert_array_equal(s["max"], x.max(0))


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 1000])
def test_flag_stats_from_counts_match_numpy(n):
    """Bool features: stats from the count of true flags equal numpy's over the flags as 0.0/1.0."""
    from demoforge.dataset.stats import numeric_stats

    rng = np.random.default_rng(n)
    flags = rng.random((n, 12)) < np.linspace(0, 1, 12)
    flags[:, 0], flags[:, -1] = False, True
    got, want = numeric_stats(flags), numeric_stats(flags.astype(np.float64))
    for name in want:
        if name == "std":
            np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-15)
        else:
            assert got[name] == want[name], name


def test_dataset_stats_of_flags_are_exact(tmp_path):
    """A bool feature's dataset-wide stats (counted, not sorted) equal numpy's over all frames."""
    import json

    from demoforge.dataset import DatasetWriter, Feature

    rng = np.random.default_rng(0)
    features = {"flags": Feature("bool", (5,)), "x": Feature("float32", (2,))}
    episodes = [{"flags": rng.random((n, 5)) < [0.0, 0.1, 0.5, 0.9, 1.0], "x": rng.normal(size=(n, 2)).astype(np.float32)}
                for n in (7, 30, 12)]
    with DatasetWriter.create(tmp_path / "d", fps=10, features=features) as w:
        for cols in episodes:
            w.add_episode(cols, task="t")
    stats = json.loads((tmp_path / "d" / "meta" / "stats.json").read_text())["flags"]
    allf = np.concatenate([e["flags"] for e in episodes]).astype(np.float64)
    for name, q in Q.QUANTILES.items():
        np.testing.assert_array_equal(stats[name], np.quantile(allf, q, axis=0))
    np.testing.assert_array_equal(stats["mean"], allf.mean(0))
    np.testing.assert_allclose(stats["std"], allf.std(0), rtol=1e-12, atol=1e-15)
    assert stats["min"] == allf.min(0).tolist()
    assert stats["max"] == allf.max(0).tolist() and stats["count"] == [49]
