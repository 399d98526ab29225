"""sim.studies.stalls: the freezes percentiles hide, counted on the source's scenario."""

import math

import numpy as np
import pytest

import sim
from sim.errors import InputError
from sim.serving.metrics import token_gaps
from sim.studies.stalls import STALL_S, frozen_for, stalls

WHOLE_PROMPT_GAP_S = 8192 * 16e9 / 400e12 + 16e9 / 3e12   # the prefill, then a decode step


@pytest.fixture(scope="module")
def lanes():
    workload = sim.textbook_scenario()
    return (sim.run(workload, "vllm-v0", mode="simple"), sim.run(workload, "sarathi", mode="simple"))


def test_one_whole_prompt_freezes_every_decoder_once(lanes):
    unchunked, _ = lanes
    frozen = stalls(unchunked, STALL_S, unchunked.prefilled)
    assert (frozen.streams, frozen.frozen_streams, frozen.gaps_over) == (64, 64, 64)
    assert frozen.gaps == 64 * 256
    assert frozen.largest_gap_s == pytest.approx(WHOLE_PROMPT_GAP_S)
    assert frozen.frozen_per_stream_s == pytest.approx(WHOLE_PROMPT_GAP_S)
    # one freeze in each stream's 256 gaps: the p99 is the 5.333 ms decode step
    assert frozen.steady_gap_s == pytest.approx(16e9 / 3e12)


def test_chunks_freeze_nobody(lanes):
    _, chunked = lanes
    frozen = stalls(chunked, STALL_S, chunked.prefilled)
    assert (frozen.frozen_streams, frozen.gaps_over, frozen.frozen_per_stream_s) == (0, 0, 0.0)
    assert frozen.largest_gap_s == pytest.approx(576 * 16e9 / 400e12)


def test_a_gap_must_be_longer_than_the_threshold(lanes):
    unchunked, _ = lanes
    gaps = np.diff(unchunked.tokens_of(0))
    at_the_gap = stalls(unchunked, float(gaps.max()), unchunked.prefilled)
    assert at_the_gap.frozen_streams == 0
    assert stalls(unchunked, float(gaps.max()) * 0.999, unchunked.prefilled).frozen_streams == 64


def test_every_request_by_default_and_none_without_gaps(lanes):
    unchunked, _ = lanes
    every = stalls(unchunked)
    assert every.streams == 65 and every.frozen_streams == 64   # the new request never waits long
    empty = stalls(unchunked, streams=np.zeros(len(unchunked.arrival_s), bool))
    assert empty.streams == 0 and math.isnan(empty.largest_gap_s)
    assert math.isnan(empty.frozen_per_stream_s)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), 1e9])
def test_a_bad_threshold_says_so(lanes, bad):
    with pytest.raises(InputError, match="stall threshold"):
        stalls(lanes[0], bad)


def test_a_stream_is_frozen_only_once_its_wait_passes_the_threshold_and_then_for_all_of_it():
    """The one definition: a 12 ms or a 100 ms wait is no freeze (0), a 333 ms wait is frozen
    for 333 ms, whole, not for the 233 ms past the threshold."""
    assert frozen_for(0.012) == 0.0 and frozen_for(STALL_S) == 0.0
    assert frozen_for(0.333) == 0.333
    assert list(frozen_for(np.array([0.003, 0.1001, 0.2]))) == [0.0, 0.1001, 0.2]


def test_the_frozen_time_of_a_lane_is_its_freezes_counted_whole(lanes):
    unchunked, chunked = lanes
    for trace in (unchunked, chunked):
        gaps, owner = token_gaps(trace)
        keep = trace.prefilled[owner]
        per_stream = np.bincount(owner[keep], weights=frozen_for(gaps[keep]),
                                 minlength=len(trace.arrival_s))[trace.prefilled]
        assert stalls(trace, STALL_S, trace.prefilled).frozen_per_stream_s == \
            pytest.approx(per_stream.mean())
