"""The shipped ShareGPT trace is the one Sarathi-Serve replays, and samples of it keep a
conversation's turns together."""

import numpy as np
import pytest

from sim.errors import InputError
from sim.serving.length_traces import SHAREGPT_TRACE, sharegpt_lengths, sharegpt_trace


def test_the_shipped_trace_has_the_upstream_rows_and_figures():
    prompt, output = sharegpt_trace()
    assert len(prompt) == len(output) == 30_731
    # upstream's file order: one conversation's turns, each prompt carrying the last
    assert prompt[:4].tolist() == [74, 290, 1402, 2497]
    assert output[:4].tolist() == [918, 905, 711, 918]
    assert (np.median(prompt), np.percentile(prompt, 90)) == (1730, 5696)
    assert (np.median(output), np.percentile(output, 90)) == (415, 834)
    assert output.max() == 1024 and prompt.min() >= 1 and output.min() >= 1
    assert (prompt + output).max() <= 8192


def test_the_licence_and_the_source_travel_with_the_trace():
    folder = SHAREGPT_TRACE.parent
    assert "Apache License" in (folder / "LICENSE-Apache-2.0.txt").read_text(encoding="utf-8")
    notice = (folder / "README.md").read_text(encoding="utf-8")
    assert "microsoft/sarathi-serve" in notice and "72339db5b120" in notice


def test_a_sample_is_consecutive_rows_from_an_offset_the_seed_picks():
    prompt, output = sharegpt_trace()
    p, o = sharegpt_lengths(500, seed=3)
    starts = np.flatnonzero((prompt == p[0]) & (output == o[0]))
    assert any(np.array_equal(prompt[s:s + 500], p) and np.array_equal(output[s:s + 500], o)
               for s in starts)
    again = sharegpt_lengths(500, seed=3)
    np.testing.assert_array_equal(again[0], p)
    np.testing.assert_array_equal(again[1], o)
    offsets = {sharegpt_lengths(1, seed=s)[0][0] for s in range(20)}
    assert len(offsets) > 10


def test_a_sample_longer_than_the_rest_of_the_file_goes_on_from_its_first_row():
    rows = len(sharegpt_trace()[0])
    p, o = sharegpt_lengths(rows + 5, seed=0)
    assert len(p) == len(o) == rows + 5
    np.testing.assert_array_equal(p[rows:], p[:5])
    assert sorted(p[:rows].tolist()) == sorted(sharegpt_trace()[0].tolist())


def test_a_sample_is_the_callers_own_copy():
    p, _ = sharegpt_lengths(10, seed=1)
    p[:] = 0
    assert sharegpt_trace()[0].min() >= 1


@pytest.mark.parametrize("count, seed, words", [(0, 0, "requests must be ≥ 1"),
                                                (2.5, 0, "whole number"),
                                                (10, -1, "seed must be ≥ 0")])
def test_bad_counts_and_seeds_are_refused_with_a_message(count, seed, words):
    with pytest.raises(InputError, match=words):
        sharegpt_lengths(count, seed)
