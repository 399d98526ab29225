"""Workloads are seeded, reproducible and shaped as documented."""

import numpy as np
import pytest

from sim.errors import InputError
from sim.serving.workloads import burst, make_workload, poisson, seed_scenario


def test_seed_scenario_shape():
    w = seed_scenario(decodes=64, context=4000, prompt=8192)
    assert len(w) == 65
    assert w.prefilled[:64].all() and not w.prefilled[64]
    assert w.prompt[64] == 8192 and (w.prompt[:64] == 4000).all()


def test_poisson_is_reproducible_and_at_the_rate():
    a = poisson(4000, 5, seed=11)
    b = poisson(4000, 5, seed=11)
    np.testing.assert_array_equal(a.arrival_s, b.arrival_s)
    assert 1 / np.mean(np.diff(a.arrival_s)) == pytest.approx(5, rel=0.05)
    assert not np.array_equal(a.arrival_s, poisson(4000, 5, seed=12).arrival_s)


def test_sharegpt_lengths_match_the_published_fit():
    w = poisson(20_000, 10, seed=1, lengths="sharegpt")
    assert np.median(w.prompt) == pytest.approx(1730, rel=0.05)
    assert np.percentile(w.prompt, 90) == pytest.approx(5696, rel=0.05)
    assert np.median(w.output) == pytest.approx(415, rel=0.05)
    assert np.percentile(w.output, 90) == pytest.approx(834, rel=0.06)
    assert (w.prompt + w.output).max() <= 8192 and w.output.min() >= 1


def test_uniform_lengths_stay_in_range():
    w = poisson(2000, 10, seed=2, lengths="uniform", prompt_range=(100, 200), output_range=(5, 9))
    assert w.prompt.min() >= 100 and w.prompt.max() <= 200
    assert set(np.unique(w.output)) == {5, 6, 7, 8, 9}


def test_burst_arrives_together_behind_streams():
    w = burst(10, prompt=8192, decodes=64)
    assert len(w) == 74 and (w.arrival_s == 0).all() and w.prefilled.sum() == 64


def test_make_workload_sorts_by_arrival():
    w = make_workload([2.0, 1.0], [10, 20], [1, 2])
    assert list(w.arrival_s) == [1.0, 2.0] and list(w.prompt) == [20, 10]


@pytest.mark.parametrize("call", [
    lambda: poisson(0, 5), lambda: poisson(10, -1), lambda: poisson(10, 5, lengths="zipf"),
    lambda: poisson(10, 5, lengths="uniform", prompt_range=(9, 3)),
    lambda: seed_scenario(prompt=0), lambda: seed_scenario(decodes=-1),
    lambda: make_workload([0.0], [0], [1]),
])
def test_bad_workloads(call):
    with pytest.raises(InputError):
        call()
