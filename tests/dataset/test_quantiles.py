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
