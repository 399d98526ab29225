"""Prefill on some GPUs, decode on others (sim/serving/disaggregated.py): the hand-off's price
reaches TTFT, a decode instance never runs a prefill, requests wait for decode KV, and the
routing rules."""

import numpy as np
import pytest

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import custom_gpu, get_gpu
from sim.presets.links import get_link, price_transfer
from sim.presets.models import get_model
from sim.serving.disaggregated import Disaggregation, parse_split, pool_summaries, transfer_times
from sim.serving.metrics import request_times, token_gaps
from sim.serving.policies import DEFAULT_LIMITS, Limits, get_policy
from sim.serving.run import Run
from sim.serving.workloads import make_workload, poisson, textbook_scenario

H100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))
SARATHI = get_policy("sarathi")


def run(workload, split, limits=DEFAULT_LIMITS, budget=512):
    return Run(workload=workload, policy=SARATHI, cost=H100, budget=budget, limits=limits,
               disaggregation=split).simulate()


def test_with_a_free_link_and_room_to_spare_no_decoder_ever_waits_on_a_prefill():
    """Stall-free by construction: prefill instances only prefill, decode instances only decode,
    so every gap between two decode tokens is one decode-only iteration."""
    trace = run(poisson(200, 4, seed=1, lengths="sharegpt"), Disaggregation(1, 1, link="free"))
    assert all(not t.decode_tokens.any() for t in trace.prefill)     # no decode on a prefill GPU
    for decode in trace.decode:
        assert not decode.prefill_tokens.any()                        # no prefill on a decode GPU
        gaps, _ = token_gaps(decode)
        assert gaps.max() <= decode.duration_s.max() + 1e-12
    moved = trace.decode_instance >= 0
    assert moved.sum() == np.sum(trace.output > 1)
    assert not transfer_times(trace).any()                           # the link costs nothing
    # the decode KV never fills: a finished prompt waits at most for the iteration its decode
    # instance is running to end (a request joins a batch between iterations)
    longest = max(t.duration_s.max() for t in trace.decode)
    assert trace.decode_wait_s[moved].max() <= longest
    assert trace.preemptions.sum() == 0


def test_a_slow_link_adds_each_transfer_to_ttft():
    spaced = make_workload([0.0, 10.0, 20.0], [2000, 4000, 8000], [50, 50, 50])
    free = run(spaced, Disaggregation(1, 1, link="free"))
    slow = run(spaced, Disaggregation(1, 1, link="100gbe"))
    grew = request_times(slow).ttft_s - request_times(free).ttft_s
    # 131,072 KV bytes a token over 12.5 GB/s, plus 10 us: 2,000 tokens take 21 ms
    by_hand = [price_transfer(p, 131_072, get_link("100gbe")).seconds for p in (2000, 4000, 8000)]
    assert grew == pytest.approx(by_hand, rel=1e-9)
    assert by_hand[0] == pytest.approx(2000 * 131_072 / 12.5e9 + 10e-6)
    assert slow.transfer_s == pytest.approx(by_hand)
    assert slow.kv_bytes.tolist() == [p * 131_072 for p in (2000, 4000, 8000)]


def test_a_request_waits_on_its_prefill_gpu_while_the_decode_pool_is_full():
    together = make_workload([0.0, 0.0], [1000, 1000], [200, 200])
    trace = run(together, Disaggregation(1, 1, link="free"), limits=Limits(max_seqs=1))
    first, second = np.argsort(trace.prefill_end_s)
    last_token = trace.token_s[trace.token_offsets[first + 1] - 1]
    assert trace.send_start_s[second] == pytest.approx(last_token)   # accepted once a seat freed
    assert trace.decode_wait_s[second] > 0 == trace.decode_wait_s[first]
    assert trace.decode[0].running_decoders.max() == 1


def test_prompts_go_round_robin_and_each_to_the_decode_instance_with_the_most_free_kv():
    trace = run(poisson(40, 8, seed=2, lengths="sharegpt"), Disaggregation(2, 2, link="free"))
    assert trace.prefill_instance.tolist() == [i % 2 for i in range(40)]
    moved = np.flatnonzero(trace.decode_instance >= 0)
    order = moved[np.argsort(trace.prefill_end_s[moved], kind="stable")]
    assert trace.decode_instance[order[:2]].tolist() == [0, 1]
    assert set(trace.decode_instance[moved]) == {0, 1}


def test_each_pool_says_how_busy_it_was_and_how_long_requests_queued():
    trace = run(poisson(100, 4, seed=1, lengths="sharegpt"), Disaggregation(1, 2, link="nvlink4"))
    pools = pool_summaries(trace)
    assert pools["prefill"].instances == 1 and pools["decode"].instances == 2
    assert 0 < pools["prefill"].utilisation < 1 and 0 < pools["decode"].utilisation < 1
    assert pools["decode"].iterations == sum(t.iterations for t in trace.decode)
    assert pools["prefill"].queue_s.p50 >= 0


@pytest.mark.parametrize("text, message", [
    ("2", "--disaggregate takes PREFILL_GPUS:DECODE_GPUS, two whole numbers such as 2:1, "
          "got '2'"),
    ("a:b", "two whole numbers such as 2:1, got 'a:b'"),
    ("0:1", "--disaggregate 0:1: 0 prefill GPUs; each pool takes 1 to 64 GPUs"),
    ("1:65", "--disaggregate 1:65: 65 decode GPUs; each pool takes 1 to 64 GPUs"),
])
def test_a_bad_split_is_refused_with_what_would_work(text, message):
    with pytest.raises(InputError) as error:
        parse_split(text)
    assert message in str(error.value)


def test_pools_that_do_not_split_into_instances_and_streams_are_refused():
    with pytest.raises(InputError, match="3 prefill GPUs do not split into instances of tp 2; "
                                         "give a multiple of 2 prefill GPUs"):
        Disaggregation(3, 2, prefill_tp=2).instances(1)
    with pytest.raises(InputError, match="serves new prompts only"):
        run(textbook_scenario(4, 100, 500), Disaggregation(1, 1))
    with pytest.raises(InputError, match="unknown link 'x'"):
        Disaggregation(1, 1, link="x")


def test_a_prompts_kv_stays_held_on_its_prefill_gpu_until_sent():
    """A GPU whose KV holds one 8,000-token prompt (21 GB less 16 GB of weights and the
    engine's reserve: about 14,000 tokens): the second prompt's prefill starts only once the first's
    KV has crossed the slow link."""
    small = CostModel(custom_gpu(989, 3.35, 21), get_model("llama-3.1-8b"))
    two = make_workload([0.0, 0.0], [8000, 8000], [10, 10])
    trace = Run(workload=two, policy=SARATHI, cost=small, budget=512,
                disaggregation=Disaggregation(1, 1, link="100gbe")).simulate()
    scheduled = two.arrival_s + request_times(trace).queue_s
    assert trace.transfer_s[0] == pytest.approx(8000 * 131_072 / 12.5e9 + 10e-6)
    assert scheduled[1] == pytest.approx(trace.send_end_s[0])


def test_a_layer_by_layer_send_adds_only_what_the_prefill_did_not_hide():
    """8,000 tokens over 100 GbE take 84 ms; sent layer by layer during a prefill of 16 chunks,
    only max(84 ms / 32 layers, 84 ms - the prefill's span) is left once it ends; a prompt that
    waits for decode KV cannot have sent early, and pays the whole transfer."""
    one = make_workload([0.0], [8000], [20])
    free = run(one, Disaggregation(1, 1, link="free"))
    after = run(one, Disaggregation(1, 1, link="100gbe"))
    layered = run(one, Disaggregation(1, 1, link="100gbe", layerwise_send=True))
    whole = 8000 * 131_072 / 12.5e9 + 10e-6
    span = free.prefill_end_s[0] - free.prefill[0].start_s[0]    # first chunk -> prompt done
    assert after.transfer_s[0] == pytest.approx(whole)
    assert layered.transfer_s[0] == pytest.approx(max(whole / 32, whole - span))
    ttft = request_times(layered).ttft_s[0] - request_times(free).ttft_s[0]
    assert ttft == pytest.approx(layered.transfer_s[0])
    waited = run(make_workload([0.0, 0.0], [8000, 8000], [50, 50]),
                 Disaggregation(1, 1, link="100gbe", layerwise_send=True),
                 limits=Limits(max_seqs=1))
    late = int(np.argmax(waited.decode_wait_s))
    assert waited.decode_wait_s[late] > 0 and waited.transfer_s[late] == pytest.approx(whole)


def test_every_share_keeps_the_requests_classes_and_shared_prefixes():
    """Prefill instances, colocated instances and a pipeline's virtual engines serve their
    requests with every column (a share used to drop the prefix, so a split run found no hit)."""
    from sim.serving.disaggregated import round_robin_shares
    from sim.serving.pipeline import dealt
    from sim.serving.workloads import MIXES, mixed, poisson

    shared = poisson(9, 4.0, seed=1, prompt=600, output=5, prefix_tokens=400, prefix_share=1.0)
    for share in (*Disaggregation(3, 1).prefill_shares(shared, 1),
                  *round_robin_shares(shared, 3), *(w for _, w in dealt(shared, 3))):
        assert share.prefix_tokens is not None and (share.prefix_tokens == 400).all()
    prefill = Disaggregation(3, 1).prefill_shares(shared, 1)[0]
    assert (prefill.output == 1).all() and len(prefill) == 3
    classes = mixed(12, 4.0, MIXES["chat+documents"], seed=2)
    for share in round_robin_shares(classes, 2):
        assert share.classes == classes.classes and share.request_class is not None
