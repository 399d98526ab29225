"""Rules the engine's and policies' docstrings state, each pinned on a workload small enough to follow
by hand: which request a full cache evicts, where it goes and what it recomputes, the order requests
are admitted in and decoders step in, what a skipped decoder does and what a finished one frees.
Each test quotes the sentence it pins, and the last one checks that the sources still say it;
test_engine.py, test_kv.py, test_policies.py and test_properties.py pin the other rules."""

import re
from dataclasses import replace
from pathlib import Path

import numpy as np

import sim.serving.engine
from sim import run
from sim.cost.iteration import CostModel
from sim.presets.hardware import custom_gpu, get_gpu
from sim.presets.models import get_model
from sim.serving.engine import kv_capacity_tokens, simulate
from sim.serving.policies import Batch, Limits, get_policy
from sim.serving.workloads import make_workload

TIGHT = CostModel(custom_gpu(150, 1, 18.2), get_model("dense-8b"))   # 2,899 KV tokens


def first_chunks(trace) -> list[tuple[int, int]]:
    """(iteration, request) of every admission, in the order the engine ran them: a request's
    chunk from prompt position 0 (again after a preemption)."""
    admitted = trace.chunk_start == 0
    return list(zip(trace.chunk_iteration[admitted].tolist(), trace.chunk_request[admitted].tolist()))


def test_a_full_cache_evicts_the_newest_request_which_goes_back_to_the_head_of_the_queue():
    """engine.py: "Free a running request's KV (`_victim`); it goes back to the head of the queue
    and its prompt plus generated tokens are recomputed."; "the newest holder (the pool's)".

    vLLM V1 on 2,896 KV tokens (181 blocks of 16; 10% of memory kept back), at most 2 running:
    A and B (1,000-token prompts, 63 blocks each, 1,000 tokens out) are admitted in that order
    and both decode; C (10 tokens) waits for a seat. Each takes a new block every 16 steps, from
    step 9 on; after 27 rounds the 55 free blocks are down to 1, so the decode step of iteration
    441 (two new blocks) does not fit: B, admitted last, is evicted with the 441 tokens it
    emitted. It goes back ahead of C and blocks it (1,441 tokens to recompute do not fit beside
    A) until A finishes in iteration 999. Prefix caching off: with it, B finds its blocks
    cached again (tests/sim/serving/test_prefix_caching.py)."""
    assert kv_capacity_tokens(TIGHT) == 2899
    w = make_workload([0.0, 0.0, 0.0], [1000, 1000, 10], [1000, 1000, 1])
    trace = simulate(w, get_policy("vllm-v1"), TIGHT, budget=4096,
                     limits=Limits(max_seqs=2, prefix_caching="off"), reserve_fraction=0.1)
    assert trace.preemption_request.tolist() == [1] and trace.preemption_iteration.tolist() == [441]
    # its KV is freed: after iteration 441 only A's 91 blocks are held
    assert trace.kv_used_tokens[440:442].tolist() == [2 * 90 * 16, 91 * 16]
    # back at the head of the queue: readmitted before C, which had waited longer
    assert first_chunks(trace) == [(0, 0), (0, 1), (1000, 1), (1000, 2)]
    # recomputed: its prompt plus the 441 tokens it had generated, then it goes on from token 442
    emitted_before = int(np.sum(trace.tokens_of(1) <= trace.end_s[440]))
    assert emitted_before == 441
    again = (trace.chunk_request == 1) & (trace.chunk_iteration >= 441)
    assert trace.chunk_length[again].sum() == 1000 + emitted_before == trace.recomputed_tokens[1]
    assert [len(trace.tokens_of(r)) for r in range(3)] == [1000, 1000, 1]
    assert trace.preemptions.tolist() == [0, 1, 0]


def test_requests_are_admitted_in_arrival_order():
    """engine.py: "arrive (requests whose time has come join the queue)"; policies.py: "Admit
    waiting requests first-come-first-served".

    Sarathi-Serve at budget 100: a 1,000-token prompt takes iterations 0-9; three shorter ones
    arrive during the first, longest first, and are admitted together in iteration 10, in the
    order they came (not shortest first, not last come first)."""
    w = make_workload([0.0, 1e-6, 2e-6, 3e-6], [1000, 30, 20, 10], [2, 1, 1, 1])
    trace = run(w, "sarathi", 100)
    assert trace.end_s[0] > 3e-6                        # all three are waiting after iteration 0
    assert first_chunks(trace) == [(0, 0), (10, 1), (10, 2), (10, 3)]


def test_a_skipped_decoder_takes_no_kv_emits_nothing_and_its_last_token_moves_a_step_later():
    """engine.py: "The first `k` running decoders emit a token and take one more token of KV; any
    the budget skipped do not advance."

    vLLM V1 at budget 3 with four 112-token streams (7 full blocks of 16 each) that each emit 3
    more tokens: streams 0-2 step in iterations 0-2, taking an eighth block each in iteration 0,
    and finish; stream 3, skipped three times, holds its 7 blocks, takes its eighth in
    iteration 3 and emits its 3 tokens at the ends of iterations 3, 4 and 5."""
    w = make_workload(np.zeros(4), np.full(4, 112), np.full(4, 3), np.ones(4, bool))
    trace = run(w, "vllm-v1", 3)
    assert trace.decode_tokens.tolist() == [3, 3, 3, 1, 1, 1]
    assert trace.kv_used_tokens.tolist() == [3 * 128 + 112, 3 * 128 + 112, 112, 128, 128, 0]
    for stream in range(3):
        np.testing.assert_array_equal(trace.tokens_of(stream)[1:], trace.end_s[[0, 1, 2]])
    np.testing.assert_array_equal(trace.tokens_of(3)[1:], trace.end_s[[3, 4, 5]])


def test_a_completed_prompt_keeps_its_kv_as_context_and_a_finished_request_frees_it():
    """engine.py: "Completed prompts emit their first token, then start decoding (their KV stays,
    as context) or, with nothing more to emit, finish and free it"; "Decoders under `mask`
    finish: they stop running and free their KV".

    SGLang (KV by the token): a 100-token prompt with 3 tokens to emit holds 100 tokens after
    its prefill, 101 after its first decode step and none after its last; one with a single
    token to emit frees its KV in the iteration that computed it, beside a 50-token one that
    keeps its own."""
    trace = run(make_workload([0.0], [100], [3]), "sglang", 512)
    assert trace.kv_used_tokens.tolist() == [100, 101, 0]
    np.testing.assert_array_equal(trace.tokens_of(0), trace.end_s)
    trace = run(make_workload([0.0, 0.0], [100, 50], [1, 2]), "sglang", 512)
    assert trace.kv_used_tokens.tolist() == [50, 0]


def ten_prompt_tokens_and_one_decode(state, budget, limits, whole_prompt):
    """A test policy: every prompt advances 10 tokens a step, so a short prompt admitted second
    completes before a long one admitted first; only the head of the running list decodes."""
    batch = Batch(decodes=min(state.decoding, 1))
    for request in state.partial:
        batch.add_chunk(request, min(10, state.prefill_left(request)), 0)
    for request in state.waiting:
        left = state.prefill_left(request)
        batch.admit(request, min(10, left), left)
    return batch


def test_decoders_run_in_admission_order_whatever_order_their_prompts_complete_in():
    """engine.py: "Running decoders live in numpy arrays in admission order"; policies.py: decodes are
    always "the first `decodes` of the running list" (admission order).

    A (30-token prompt) and B (10 tokens) are admitted in that order; B completes first and
    decodes alone, A completes in iteration 2 and then steps ahead of B until it is done."""
    spec = replace(get_policy("orca"), name="ten-tokens", build=ten_prompt_tokens_and_one_decode)
    w = make_workload([0.0, 0.0], [30, 10], [3, 5])
    trace = simulate(w, spec, CostModel(get_gpu("illustrative"), get_model("dense-8b")), budget=100)
    assert [trace.decode_rows(i).tolist() for i in range(trace.iterations)] == [
        [], [1], [1], [0], [0], [1], [1]]
    np.testing.assert_array_equal(trace.tokens_of(0), trace.end_s[[2, 3, 4]])
    np.testing.assert_array_equal(trace.tokens_of(1), trace.end_s[[0, 1, 2, 5, 6]])


STREAMS_BEHIND_A_PROMPT = make_workload(
    np.r_[0.0, np.full(8, 1e-6)], np.r_[100, np.full(8, 50)], np.r_[1, np.full(8, 3)],
    np.r_[False, np.ones(8, bool)])


def test_decoders_that_fill_the_budget_starve_a_prompt_half_way_through_its_prefill():
    """engine.py: "Decodes used the whole shared budget while prompts wait" counts the prompts
    already part-way through their prefill too.

    Sarathi-Serve at budget 8: a 100-token prompt runs its first chunk in iteration 0; eight
    streams arrive meanwhile and take the whole budget for the 3 iterations they decode; then
    the prompt goes on."""
    trace = run(STREAMS_BEHIND_A_PROMPT, "sarathi", 8)
    assert trace.prefill_tokens[:5].tolist() == [8, 0, 0, 0, 8]
    assert trace.starved_iterations == 3


def test_vllm_v1_runs_a_prompt_admitted_first_ahead_of_streams_that_joined_after_it():
    """policies.py, vLLM V1: "a partial prefill admitted before a decoder runs before it"
    (vllm/v1/core/sched/scheduler.py:795 walks `self.running`, appended at admission, :1549, at
    v0.33.0). The same run under vLLM V1: the prompt, ahead of the streams in the running list,
    keeps the whole budget until its 100 tokens are done (13 iterations), the streams behind it
    skip those steps. The lab used to step every stream first, as Sarathi-Serve does."""
    trace = run(STREAMS_BEHIND_A_PROMPT, "vllm-v1", 8)
    assert trace.prefill_tokens[:13].tolist() == [8] * 12 + [4]
    assert trace.decode_tokens[:14].tolist() == [0] * 12 + [4, 8]
    assert trace.starved_iterations == 0


def test_every_sentence_quoted_here_is_still_in_the_docstrings():
    """A rule reworded in engine.py, kv.py or policies.py sends its maintainer here, to the test
    that pins it, instead of leaving a test that quotes a rule nobody states any more."""
    serving = Path(sim.serving.engine.__file__).parent   # the module's file, as mutmut copies it
    sources = " ".join(" ".join((serving / name).read_text().split())
                       for name in ("engine.py", "kv.py", "policies.py"))
    this = test_every_sentence_quoted_here_is_still_in_the_docstrings
    rule_tests = {name: f for name, f in globals().items() if name.startswith("test_") and f is not this}
    quotes = {name: re.findall(r'"([^"]+)"', f.__doc__) for name, f in rule_tests.items()}
    assert [name for name, quoted in quotes.items() if not quoted] == []
    assert [q for quoted in quotes.values() for q in quoted if " ".join(q.split()) not in sources] == []


def test_sglangs_new_token_ratio_falls_after_decode_batches_only():
    """"SGLang's new_token_ratio falls after a decode batch only, not after a prefill batch its
    decodes ride with (--enable-mixed-chunk)": decay_step is in update_running_batch
    (python/sglang/srt/managers/scheduler.py:4542 at v0.5.23). Four streams and a 1,000-token
    prompt at budget 104: the prompt's 10 mixed iterations leave the ratio where it was; each of
    the other iterations lowers it one step."""
    from sim.serving.engine import _Engine
    from sim.serving.policies import MIN_NEW_TOKEN_RATIO, NEW_TOKEN_RATIO, NEW_TOKEN_RATIO_DECAY
    workload = make_workload([0.0] * 5, [50] * 4 + [1000], [30] * 4 + [2], [True] * 4 + [False])
    cost = CostModel(get_gpu("h100-sxm"), get_model("dense-8b"))
    engine = _Engine(workload, get_policy("sglang"), 104, Limits(mixed_chunk=True), cost, 0.1)
    trace = engine.run()
    with_chunks = len(np.unique(trace.chunk_iteration))
    assert with_chunks == 10
    decode_only = int(np.count_nonzero(trace.decode_tokens)) - with_chunks
    assert abs(engine.ratio.value - (NEW_TOKEN_RATIO - decode_only * NEW_TOKEN_RATIO_DECAY)) < 1e-12
    assert engine.ratio.value > MIN_NEW_TOKEN_RATIO
