"""Workloads are seeded, reproducible and shaped as documented."""

import numpy as np
import pytest

from sim.errors import InputError
from sim.serving.length_traces import sharegpt_lengths, sharegpt_trace
from sim.serving.workloads import (
    SHAREGPT_MAX_OUTPUT,
    SHAREGPT_MAX_TOTAL,
    burst,
    make_workload,
    poisson,
    textbook_scenario,
)


def test_textbook_scenario_shape():
    w = textbook_scenario(decodes=64, context=4000, prompt=8192)
    assert len(w) == 65
    assert w.prefilled[:64].all() and not w.prefilled[64]
    assert w.prompt[64] == 8192 and (w.prompt[:64] == 4000).all()


def test_poisson_is_reproducible_and_at_the_rate():
    a = poisson(4000, 5, seed=11)
    b = poisson(4000, 5, seed=11)
    np.testing.assert_array_equal(a.arrival_s, b.arrival_s)
    assert 1 / np.mean(np.diff(a.arrival_s)) == pytest.approx(5, rel=0.05)
    assert not np.array_equal(a.arrival_s, poisson(4000, 5, seed=12).arrival_s)


# The ShareGPT-like lengths against the trace they imitate: each quantile within 3% of the
# trace's (50,000 requests: a quantile's sampling error is under 1%). P99 is where clipping
# shows: clipped prompts pile up at 8,191 tokens (P99 8,191 against the trace's 7,434) and
# outputs run past the trace's 1,024.
QUANTILE_TOLERANCE = 0.03


@pytest.mark.parametrize("seed", [1, 2])
def test_sharegpt_like_lengths_have_the_traces_quantiles(seed):
    w = poisson(50_000, 10, seed=seed, lengths="sharegpt")
    trace_prompt, trace_output = sharegpt_trace()
    for q in (50, 90, 99):
        assert np.percentile(w.prompt, q) == pytest.approx(np.percentile(trace_prompt, q),
                                                           rel=QUANTILE_TOLERANCE), f"prompt P{q}"
        assert np.percentile(w.output, q) == pytest.approx(np.percentile(trace_output, q),
                                                           rel=QUANTILE_TOLERANCE), f"output P{q}"


def test_sharegpt_like_lengths_stay_within_the_traces_limits_without_piling_up_there():
    w = poisson(50_000, 10, seed=3, lengths="sharegpt")
    assert w.output.max() <= SHAREGPT_MAX_OUTPUT and w.output.min() >= 1
    assert (w.prompt + w.output).max() <= SHAREGPT_MAX_TOTAL and w.prompt.min() >= 1
    # no length is a tenth of a percent of the requests (clipping made 8,191 tokens 4.8%)
    assert np.bincount(w.prompt).max() < 50 and np.bincount(w.output).max() < 0.01 * len(w)


def test_the_trace_lengths_are_consecutive_rows_of_the_trace():
    w = poisson(300, 2, seed=5, lengths="sharegpt-trace")
    prompt, output = sharegpt_lengths(300, 5)
    np.testing.assert_array_equal(w.prompt, prompt)
    np.testing.assert_array_equal(w.output, output)
    assert w.name == "poisson-sharegpt-trace"
    assert not np.array_equal(poisson(300, 2, seed=6, lengths="sharegpt-trace").prompt, prompt)


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
    lambda: textbook_scenario(prompt=0), lambda: textbook_scenario(decodes=-1),
    lambda: make_workload([0.0], [0], [1]),
])
def test_bad_workloads(call):
    with pytest.raises(InputError):
        call()
