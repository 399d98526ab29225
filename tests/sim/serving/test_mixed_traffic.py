"""Mixed traffic: request classes with their shares and lengths (sim/serving/workloads.py), the
class each request carries, and each class's latencies and head-of-line wait
(sim/serving/metrics.py)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.metrics import class_metrics, head_of_line_waits
from sim.serving.policies import get_policy
from sim.serving.run import Run
from sim.serving.workloads import (
    MIXES,
    SHAREGPT_MAX_OUTPUT,
    SHAREGPT_MAX_TOTAL,
    Lengths,
    Mix,
    RequestClass,
    apportion,
    make_workload,
    mixed,
    parse_mix,
)


@given(st.integers(1, 5000), st.lists(st.integers(1, 100), min_size=1, max_size=6))
def test_apportioned_counts_add_up_and_each_is_within_one_of_its_share(total, weights):
    shares = [w / sum(weights) for w in weights]
    counts = apportion(total, shares)
    assert counts.sum() == total
    assert np.all(np.abs(counts - np.asarray(shares) * total) < 1)


@given(st.integers(2, 400), st.integers(0, 2**32 - 1))
def test_a_presets_classes_have_their_shares_lengths_and_times_and_a_seed_repeats_them(n, seed):
    for mix in MIXES.values():
        w = mixed(n, 4.0, mix, seed=seed)
        assert len(w) == n and w.classes == tuple(c.name for c in mix.classes)
        pinned = len(mix.pinned)
        counts = np.bincount(w.request_class, minlength=len(w.classes))
        for code, c in enumerate(mix.classes):
            mine = w.request_class == code
            if c.at_s is None:
                assert abs(counts[code] - c.share * (n - pinned)) < 1
            else:
                assert counts[code] == 1 and w.arrival_s[mine][0] == c.at_s
            for lengths, column in ((c.prompt, w.prompt[mine]), (c.output, w.output[mine])):
                if not lengths.sharegpt:
                    assert np.all((lengths.low <= column) & (column <= lengths.high))
            if c.prompt.sharegpt:   # within the trace's limits
                assert np.all(w.output[mine] <= SHAREGPT_MAX_OUTPUT)
                assert np.all(w.prompt[mine] + w.output[mine] <= SHAREGPT_MAX_TOTAL)
        again = mixed(n, 4.0, mix, seed=seed)
        assert again == w and np.array_equal(again.request_class, w.request_class)


def test_another_seed_draws_other_requests_and_the_classes_are_shuffled():
    mix = MIXES["chat+documents"]
    a, b = mixed(400, 4.0, mix, seed=1), mixed(400, 4.0, mix, seed=2)
    assert a.digest != b.digest and not np.array_equal(a.request_class, b.request_class)
    documents = np.flatnonzero(a.request_class == 1)
    assert len(documents) == 20 and documents[-1] - documents[0] > 100   # not all at one end


def test_the_presets_are_as_the_lab_describes_them():
    documents = MIXES["chat+documents"].classes[1]
    assert (documents.share, documents.prompt) == (0.05, Lengths(16_384, 32_768))
    assert MIXES["chat+documents"].classes[0].prompt.sharegpt
    w = mixed(50, 2.0, MIXES["chat+one-long"])
    long = w.request_class == w.classes.index("long")
    assert (w.prompt[long].tolist(), w.arrival_s[long].tolist()) == ([100_000], [1.0])


def test_a_class_spec_reads_shares_as_fractions_or_percentages_and_at_for_one_request():
    mix = parse_mix("chat:95%:sharegpt:sharegpt, docs:0.05:16384-32768:64-256,big:@2.5:9000:10")
    assert mix.name == "chat+docs+big"
    assert mix.classes == (RequestClass("chat", 0.95, Lengths(sharegpt=True), Lengths(sharegpt=True)),
                           RequestClass("docs", 0.05, Lengths(16384, 32768), Lengths(64, 256)),
                           RequestClass("big", 0.0, Lengths(9000, 9000), Lengths(10, 10), at_s=2.5))
    assert parse_mix("chat+documents") is MIXES["chat+documents"]


@pytest.mark.parametrize("spec, named", [
    ("no-such-mix", "'chat+documents', 'chat+one-long'"),
    ("chat:1:sharegpt", "4 fields"),
    ("chat:0.5:100:10", "add up to 0.5"),
    ("chat:1:100:10,chat:@1:5:5", "repeat"),
    ("c h:1:100:10", "class name"),
    ("chat:half:100:10", "share 'half'"),
    ("chat:1:300-200:10", "prompt '300-200'"),
    ("chat:1:100:ten", "output 'ten'"),
    ("chat:1:\u00b2:10", "prompt '\u00b2'"),   # a digit to str.isdigit, not to int()
    ("chat:@1:100:10", "no class with a share"),
    ("chat:1:100:10,long:@-1:5:5", "arrival"),
])
def test_a_bad_class_spec_is_refused_naming_what_was_wrong(spec, named):
    with pytest.raises(InputError, match=named.replace("+", r"\+").replace("(", r"\(")):
        parse_mix(spec)


def test_a_mix_needs_a_drawn_request_beside_its_pinned_ones():
    with pytest.raises(InputError, match="at least 2 requests"):
        mixed(1, 1.0, MIXES["chat+one-long"])


def test_a_workloads_classes_are_in_its_digest_and_follow_its_rows_when_sorted():
    rows = ([0.2, 0.1], [10, 20], [1, 1])
    a = make_workload(*rows, request_class=["x", "y"])
    assert a.class_labels().tolist() == ["y", "x"] and a.classes == ("y", "x")
    b = make_workload(*rows, request_class=["x", "x"])
    assert a.digest != b.digest != make_workload(*rows).digest
    with pytest.raises(InputError, match="not one of"):
        make_workload(*rows, request_class=["x", "z"], classes=("x", "y"))


# --- the head-of-line wait, on a run whose every iteration is known -------------------------
# vLLM V0 at a budget that holds every prompt, in the simple cost mode (a prefill costs
# 2 x 8e9 parameters x tokens / 400 TFLOP/s; no CPU time): iteration 0 prefills doc0's 4,096
# tokens in [0, 0.16384) s; chat1 arrives at 0.001 s and waits for it; iteration 1 prefills
# chat1's 2,048 in [0.16384, 0.24576); chat2 and doc3 arrive at 0.2 s during it, and
# iteration 2 prefills them both.
T0, T1 = 2 * 8e9 * 4096 / 400e12, 2 * 8e9 * (4096 + 2048) / 400e12


def hand_built_run():
    workload = make_workload([0.0, 0.001, 0.2, 0.2], [4096, 2048, 16, 16], [2, 2, 2, 2],
                             request_class=["doc", "chat", "chat", "doc"])
    run = Run(workload=workload, policy=get_policy("vllm-v0"), budget=8192,
              cost=CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple", None, 1))
    return workload, run.simulate()


def test_the_head_of_line_wait_counts_only_another_class_s_prefill_in_the_queue():
    workload, trace = hand_built_run()
    assert trace.end_s[:2] == pytest.approx([T0, T1])
    assert trace.chunk_iteration.tolist() == [0, 1, 2, 2]
    waits = head_of_line_waits(trace, workload.request_class)
    # doc0 never waits; chat1 waits behind doc0 from its arrival on; chat2 waits behind its own
    # class (none of it counts); doc3 waits behind chat1 from its arrival on
    assert waits == pytest.approx([0.0, T0 - 0.001, 0.0, T1 - 0.2])
    per_class = class_metrics(trace, workload)
    assert list(per_class) == ["doc", "chat"]
    assert per_class["chat"].requests == 2
    assert per_class["chat"].hol_wait_s.max == pytest.approx(T0 - 0.001)
    assert per_class["doc"].hol_wait_s.max == pytest.approx(T1 - 0.2)


def test_requests_already_streaming_never_queue_and_a_workload_without_classes_has_none():
    workload = make_workload([0.0, 0.0], [100, 50], [3, 3], prefilled=[True, False],
                             request_class=["stream", "new"])
    trace = Run(workload=workload, policy=get_policy("sarathi"), budget=512,
                cost=CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple", None,
                               1)).simulate()
    assert np.isnan(head_of_line_waits(trace, workload.request_class)[0])
    assert class_metrics(trace, workload)["stream"].requests == 1
    assert class_metrics(trace, make_workload([0.0], [10], [1])) == {}


def test_a_mix_needs_classes_with_a_share_to_add_up():
    with pytest.raises(InputError, match="add up to 1.1"):
        Mix("m", (RequestClass("a", 0.6, Lengths(1, 2), Lengths(1, 1)),
                  RequestClass("b", 0.5, Lengths(1, 2), Lengths(1, 1))))
