"""Policy contracts: a stub state in, the exact `Batch` out, one test per rule each policy's
docstring states. Requests 1, 2, ... are partial prefills or waiting prompts; `left` is what each
still has to prefill."""

from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import GIB, get_gpu
from sim.presets.models import get_model
from sim.serving.engine import kv_capacity_tokens, policy_reserve
from sim.serving.engines import prefill_graph_sizes, sglang_reserve
from sim.serving.policies import (
    POLICIES,
    Batch,
    Limits,
    default_max_seqs,
    get_policy,
    in_words,
    names_in_prose,
)
from sim.serving.workloads import make_workload, textbook_scenario

NO_CAP = Limits()


@dataclass
class Stub:
    """The engine's state as a policy reads it."""
    decoding: int = 0
    partial: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    free_kv: int = 1_000_000
    kv_watermark: int = 0
    preempted_this_step: bool = False
    left: dict[int, int] = field(default_factory=dict)
    reserved_kv: float = 0.0
    future: dict[int, int] = field(default_factory=dict)    # SGLang: output still to come
    ahead: dict[int, int] = field(default_factory=dict)     # decoders before a partial prefill

    @property
    def decode_kv(self) -> int:   # KV counted token by token: one slot per stepping decoder
        return self.decoding

    def prefill_left(self, request: int) -> int:
        return self.left[request]

    def kv_slots(self, request: int, tokens: int) -> int:
        return tokens

    def future_kv(self, request: int) -> int:
        return self.future.get(request, 0)

    def decoders_before(self, request: int) -> int:
        """By default every partial prefill comes after every decoder."""
        return self.ahead.get(request, self.decoding)


def plan(policy: str, state: Stub, budget: int, limits: Limits = NO_CAP) -> Batch:
    return get_policy(policy).plan(state, budget, limits)


# --- Sarathi-Serve -------------------------------------------------------------------------------
@pytest.mark.parametrize("policy, decodes", [("sarathi", 10), ("vllm-v1", 4)])
def test_the_budget_caps_decodes_for_vllm_v1_but_never_for_sarathi(policy, decodes):
    state = Stub(decoding=10, waiting=[1], left={1: 100})
    assert plan(policy, state, budget=4) == Batch(decodes=decodes)


def test_sarathi_order_is_decodes_then_partial_prefills_then_new_requests():
    state = Stub(decoding=2, partial=[1], waiting=[2], left={1: 100, 2: 50})
    assert plan("sarathi", state, budget=200) == Batch(
        decodes=2, chunks=[(1, 100), (2, 50)], admitted=[2], kv=[(2, 50)])
    # a partial prefill that fills the budget leaves nothing for new requests
    assert plan("sarathi", state, budget=64) == Batch(decodes=2, chunks=[(1, 62)])


def test_sarathi_chunks_a_new_prompt_to_the_leftover_budget_and_reserves_all_of_it():
    state = Stub(decoding=3, waiting=[1], left={1: 1000})
    assert plan("sarathi", state, budget=10) == Batch(
        decodes=3, chunks=[(1, 7)], admitted=[1], kv=[(1, 1000)])


def test_sarathi_partial_prefills_take_no_more_kv():
    state = Stub(partial=[1], left={1: 500})
    assert plan("sarathi", state, budget=100) == Batch(chunks=[(1, 100)])


def test_sarathi_admits_only_what_fits_beside_the_watermark_and_the_decodes_next_tokens():
    fits = 1000 + 3 + 10                    # the prompt, one token per decode, the watermark
    state = Stub(decoding=3, waiting=[1], left={1: 1000}, free_kv=fits, kv_watermark=10)
    assert plan("sarathi", state, budget=100).admitted == [1]
    state.free_kv = fits - 1
    assert plan("sarathi", state, budget=100) == Batch(decodes=3)


def test_sarathi_and_vllm_v0_keep_one_percent_of_kv_free():
    """Sarathi-Serve's block managers keep 1% of blocks free (watermark = 0.01,
    sarathi/core/block_space_manager/base_block_space_manager.py:57 on osdi-sarathi-serve), its
    vLLM baseline too; its Orca sets 0 (orca_block_space_manager.py:13); vLLM V1's watermark
    defaults to 0.0 (vllm/config/scheduler.py:196 at v0.33.0), SGLang has none."""
    assert {name: p.kv_watermark for name, p in POLICIES.items()} == {
        "sarathi": 0.01, "vllm-v0": 0.01, "vllm-v1": 0.0, "sglang": 0.0, "orca": 0.0}


def test_sarathi_admits_first_come_first_served_without_skipping():
    """A prompt that does not fit stops admission: a smaller one behind it waits too."""
    state = Stub(waiting=[1, 2], left={1: 900, 2: 10}, free_kv=500)
    assert plan("sarathi", state, budget=100) == Batch()


def test_sarathi_decodes_that_fill_the_budget_leave_prefills_waiting():
    state = Stub(decoding=4, partial=[1], waiting=[2], left={1: 10, 2: 10})
    assert plan("sarathi", state, budget=4) == Batch(decodes=4)


def test_sarathi_admits_several_new_requests_until_the_budget_is_spent():
    state = Stub(waiting=[1, 2, 3], left={1: 30, 2: 30, 3: 30})
    assert plan("sarathi", state, budget=70) == Batch(
        chunks=[(1, 30), (2, 30), (3, 10)], admitted=[1, 2, 3], kv=[(1, 30), (2, 30), (3, 30)])


def test_sarathi_caps_running_requests():
    state = Stub(decoding=2, partial=[1], waiting=[2, 3], left={1: 10, 2: 10, 3: 10})
    assert plan("sarathi", state, 100, Limits(max_seqs=4)) == Batch(
        decodes=2, chunks=[(1, 10), (2, 10)], admitted=[2], kv=[(2, 10)])


@pytest.mark.parametrize("policy", ["sarathi", "vllm-v1", "sglang"])
def test_chunked_policies_cap_partial_prefills(policy):
    state = Stub(partial=[1], waiting=[2, 3], left={1: 10, 2: 10, 3: 10})
    assert plan(policy, state, 100, Limits(max_concurrent_prefills=2)).admitted == [2]
    assert plan(policy, state, 100, Limits(max_concurrent_prefills=1)).admitted == []


# --- vLLM V1 -------------------------------------------------------------------------------------
def test_vllm_v1_takes_kv_chunk_by_chunk():
    state = Stub(decoding=2, partial=[1], waiting=[2], left={1: 30, 2: 1000})
    assert plan("vllm-v1", state, budget=100) == Batch(
        decodes=2, chunks=[(1, 30), (2, 68)], admitted=[2], kv=[(1, 30), (2, 68)])


def test_vllm_v1_admits_only_if_the_whole_prompt_fits_then_takes_kv_for_the_chunk():
    """vLLM V1 0.33 admits a waiting request only if its whole prompt's KV is free
    (scheduler_reserve_full_isl = True, vllm/config/scheduler.py:190; kv_cache_manager.py:531-547),
    then allocates the chunk it runs. The lab used to check the first chunk only."""
    state = Stub(decoding=2, waiting=[1], left={1: 1000}, free_kv=2 + 50)
    assert plan("vllm-v1", state, budget=50) == Batch(decodes=2)
    state.free_kv = 2 + 1000
    assert plan("vllm-v1", state, budget=50) == Batch(
        decodes=2, chunks=[(1, 48)], admitted=[1], kv=[(1, 48)])


def test_vllm_v1_new_prompts_need_kv_beside_the_decodes_and_the_partial_chunks():
    state = Stub(decoding=2, partial=[1], waiting=[2], left={1: 30, 2: 1000},
                 free_kv=2 + 30 + 1000)
    assert plan("vllm-v1", state, budget=100).admitted == [2]
    state.free_kv -= 1
    assert plan("vllm-v1", state, budget=100) == Batch(decodes=2, chunks=[(1, 30)], kv=[(1, 30)])


def test_vllm_v1_walks_the_running_list_in_admission_order():
    """vLLM V1 schedules `self.running` in order (vllm/v1/core/sched/scheduler.py:795 at
    v0.33.0), and requests join it when admitted (:1549): a partial prefill admitted before
    some decoders takes its chunk before them, and the decoders behind it get what the budget
    leaves. The lab used to step every decoder first."""
    state = Stub(decoding=4, partial=[1], left={1: 100}, ahead={1: 1})
    assert plan("vllm-v1", state, budget=50) == Batch(decodes=1, chunks=[(1, 49)], kv=[(1, 49)])
    state.left[1] = 10   # a short last chunk leaves room for the decoders behind it
    assert plan("vllm-v1", state, budget=50) == Batch(decodes=4, chunks=[(1, 10)], kv=[(1, 10)])


def test_vllm_v1_counts_each_decoder_once_between_partial_prefills():
    """Two partial prefills in the running list, one decoder before the first and two more
    before the second: each partial runs the decoders ahead of it that have not run yet, then
    its chunk; a partial the budget has nothing left for gets no chunk at all."""
    state = Stub(decoding=3, partial=[1, 2], left={1: 5, 2: 100}, ahead={1: 1, 2: 3})
    assert plan("vllm-v1", state, budget=20) == Batch(
        decodes=3, chunks=[(1, 5), (2, 12)], kv=[(1, 5), (2, 12)])
    state = Stub(partial=[1, 2], left={1: 50, 2: 10}, ahead={1: 0, 2: 0})
    assert plan("vllm-v1", state, budget=20) == Batch(chunks=[(1, 20)], kv=[(1, 20)])


def test_vllm_v1_admits_nothing_in_a_step_that_preempted():
    state = Stub(decoding=1, partial=[1], waiting=[2], left={1: 10, 2: 10},
                 preempted_this_step=True)
    assert plan("vllm-v1", state, budget=100) == Batch(decodes=1, chunks=[(1, 10)], kv=[(1, 10)])


# vLLM V1 --long-prefill-token-threshold, vllm/v1/core/sched/scheduler.py at v0.33.0
def test_vllm_v1_has_no_long_prefill_threshold_by_default():
    """`long_prefill_token_threshold: int = Field(default=0, ge=0)`, "0 disables the cap"
    (vllm/config/scheduler.py:79-84)."""
    assert Limits().long_prefill_token_threshold == 0
    state = Stub(decoding=1, waiting=[1], left={1: 1000})
    assert plan("vllm-v1", state, 512).chunks == [(1, 511)]


def test_vllm_v1_long_prefill_threshold_caps_a_long_requests_chunk():
    """`if 0 < long_prefill_token_threshold < num_new_tokens: num_new_tokens =
    long_prefill_token_threshold`, for a running request (:844-845) and a waiting one
    (:1332-1333), before the budget's min: two long prompts each get 256 of a budget of 1,000."""
    limits = Limits(long_prefill_token_threshold=256)
    state = Stub(decoding=1, waiting=[1], left={1: 1000})
    assert plan("vllm-v1", state, 512, limits) == Batch(
        decodes=1, chunks=[(1, 256)], admitted=[1], kv=[(1, 256)])
    state = Stub(decoding=1, partial=[1], waiting=[2], left={1: 1000, 2: 1000})
    assert plan("vllm-v1", state, 1000, limits) == Batch(
        decodes=1, chunks=[(1, 256), (2, 256)], admitted=[2], kv=[(1, 256), (2, 256)])
    # a prompt shorter than the threshold, and the budget below it, are left as they are
    state = Stub(partial=[1], waiting=[2], left={1: 100, 2: 1000})
    assert plan("vllm-v1", state, 200, limits).chunks == [(1, 100), (2, 100)]


def test_vllm_v1_long_prefill_threshold_is_skipped_when_only_one_request_is_eligible():
    """num_eligible_reqs = running + waiting; the threshold is 0 unless it is > 1 ("when it is
    the only request there is nobody to starve", :754-763): alone, a prompt takes the whole
    budget, waiting or part-way through its prefill."""
    limits = Limits(long_prefill_token_threshold=256)
    assert plan("vllm-v1", Stub(waiting=[1], left={1: 1000}), 512, limits).chunks == [(1, 512)]
    assert plan("vllm-v1", Stub(partial=[1], left={1: 1000}), 512, limits).chunks == [(1, 512)]


def test_vllm_v1_at_v0_19_capped_a_lone_request_too():
    """At v0.19.0, the release PR 41399 measured against, the threshold had no exemption:
    `if 0 < threshold < num_new_tokens` alone (vllm/v1/core/sched/scheduler.py:409-410 for the
    running requests, 666-668 for the waiting ones there). `cap_lone_prefill` puts that rule back:
    a lone prompt takes threshold-sized chunks, waiting or part-way through its prefill."""
    limits = Limits(long_prefill_token_threshold=256, cap_lone_prefill=True)
    assert plan("vllm-v1", Stub(waiting=[1], left={1: 1000}), 512, limits).chunks == [(1, 256)]
    assert plan("vllm-v1", Stub(partial=[1], left={1: 1000}), 512, limits).chunks == [(1, 256)]
    with pytest.raises(InputError, match="needs a long prefill token threshold"):
        Limits(cap_lone_prefill=True)
    with pytest.raises(InputError, match="on \\(True\\) or off"):
        Limits(long_prefill_token_threshold=256, cap_lone_prefill="yes")


def test_vllm_v1_long_prefill_threshold_counts_a_waiting_request_it_cannot_admit():
    """get_request_counts counts the whole waiting queue (:2920-2922), admissible or not: a
    prompt KV memory keeps waiting still holds its neighbour to the threshold."""
    state = Stub(partial=[1], waiting=[2], left={1: 1000, 2: 1000}, free_kv=10)
    assert plan("vllm-v1", state, 512, Limits(long_prefill_token_threshold=256)).chunks == [(1, 256)]


def test_a_long_prompt_past_the_long_partial_prefills_cap_lets_a_shorter_one_go_first():
    """The what-if max_long_partial_prefills (vLLM V0's `PartialPrefillMetadata.can_schedule`,
    PR 10235; proposed for V1 by PRs 41399 and 49075): with one long prompt (more prompt tokens
    left than the threshold) mid-prefill and the cap at 1, a waiting long prompt is skipped and
    the short one behind it admitted; without the cap, first come first served."""
    state = Stub(partial=[1], waiting=[2, 3], left={1: 1000, 2: 2000, 3: 100})
    threshold = Limits(long_prefill_token_threshold=256)
    capped = Limits(long_prefill_token_threshold=256, max_long_partial_prefills=1)
    assert plan("vllm-v1", state, 1000, threshold).admitted == [2, 3]
    assert plan("vllm-v1", state, 1000, capped) == Batch(
        chunks=[(1, 256), (3, 100)], admitted=[3], kv=[(1, 256), (3, 100)])
    # a partial prefill with fewer tokens left than the threshold is not long
    state = Stub(partial=[1], waiting=[2, 3], left={1: 200, 2: 2000, 3: 100})
    assert plan("vllm-v1", state, 1000, capped).admitted == [2, 3]
    with pytest.raises(InputError, match="needs a long prefill token threshold"):
        Limits(max_long_partial_prefills=1)


# --- SGLang --------------------------------------------------------------------------------------
def test_sglang_a_new_request_needs_its_prompt_and_its_output_beside_the_running_reserve():
    """SGLang 0.5.23 admits a request only if its prompt + min(max_new_tokens, 4096) fits in
    what the running requests' reserve leaves (python/sglang/srt/managers/schedule_policy.py:
    785-794 and 1407-1412). The lab used to reserve the prompt only."""
    state = Stub(waiting=[1], left={1: 100}, future={1: 50}, free_kv=149)
    assert plan("sglang", state, budget=1000) == Batch()
    state.free_kv = 150
    assert plan("sglang", state, budget=1000).admitted == [1]
    state.reserved_kv = 0.5   # the running requests' share of their future tokens
    assert plan("sglang", state, budget=1000) == Batch()


def test_sglang_decodes_wait_behind_a_prefill():
    state = Stub(decoding=3, waiting=[1], left={1: 10})
    assert plan("sglang", state, budget=1000) == Batch(chunks=[(1, 10)], admitted=[1],
                                                       kv=[(1, 10)])


def test_sglang_chunks_the_prefill_batch_to_the_budget_and_reserves_whole_prompts():
    state = Stub(partial=[1], waiting=[2], left={1: 30, 2: 500})
    assert plan("sglang", state, budget=100) == Batch(
        chunks=[(1, 30), (2, 70)], admitted=[2], kv=[(2, 500)])


def test_sglang_decodes_when_no_prefill_can_run():
    assert plan("sglang", Stub(decoding=5), budget=2) == Batch(decodes=5)   # not capped by budget
    full = Stub(decoding=5, waiting=[1], left={1: 100}, free_kv=50)
    assert plan("sglang", full, budget=100) == Batch(decodes=5)
    assert plan("sglang", Stub(decoding=5), 100, Limits(max_seqs=3)) == Batch(decodes=3)


# SGLang --enable-mixed-chunk, python/sglang/srt at v0.5.23
MIXED = Limits(mixed_chunk=True)


def test_sglang_mixed_chunk_is_off_by_default():
    """`enable_mixed_chunk: ... = False` (arg_groups/fields/schedule.py:208-211): the lab's
    default limits leave the decodes waiting behind the prefill batch."""
    assert Limits().mixed_chunk is False
    state = Stub(decoding=10, waiting=[1], left={1: 1000})
    assert plan("sglang", state, 100).decodes == 0


def test_sglang_mixed_chunk_runs_the_decodes_beside_a_chunk_of_budget_less_decodes():
    """The chunk size less the running requests (`running_bs if self.is_mixed_chunk else 0`,
    managers/scheduler.py:4165, off rem_chunk_tokens at managers/schedule_policy.py:654-655),
    and they decode in the prefill batch (`mix_with_running`, managers/scheduler.py:4375-4395)."""
    state = Stub(decoding=10, waiting=[1], left={1: 1000})
    assert plan("sglang", state, 100, MIXED) == Batch(
        decodes=10, chunks=[(1, 90)], admitted=[1], kv=[(1, 1000)])
    # the chunked request's next chunk, and new requests after it, share what is left
    state = Stub(decoding=10, partial=[1], waiting=[2], left={1: 50, 2: 1000})
    assert plan("sglang", state, 100, MIXED) == Batch(
        decodes=10, chunks=[(1, 50), (2, 40)], admitted=[2], kv=[(2, 1000)])
    # the decodes are at most max running requests, as in a decode batch
    assert plan("sglang", Stub(decoding=10, partial=[1], left={1: 1000}), 100,
                Limits(mixed_chunk=True, max_seqs=4)) == Batch(decodes=4, chunks=[(1, 96)])


def test_sglang_mixed_chunk_forms_no_prefill_batch_when_the_decodes_fill_the_chunk():
    """rem_chunk_tokens <= 0 ends the prefill batch before it starts (managers/
    schedule_policy.py:890-891): every running request decodes, past the budget too."""
    state = Stub(decoding=100, partial=[1], waiting=[2], left={1: 50, 2: 50})
    assert plan("sglang", state, 100, MIXED) == Batch(decodes=100)
    assert plan("sglang", Stub(decoding=120), 100, MIXED) == Batch(decodes=120)


# --- the unchunked baselines ---------------------------------------------------------------------
def test_vllm_v0_runs_whole_prompts_alone_up_to_the_budget():
    state = Stub(decoding=4, waiting=[1, 2, 3], left={1: 60, 2: 40, 3: 1})
    assert plan("vllm-v0", state, budget=100) == Batch(
        chunks=[(1, 60), (2, 40)], admitted=[1, 2], kv=[(1, 60), (2, 40)])


def test_vllm_v0_never_splits_a_prompt_larger_than_the_budget():
    state = Stub(waiting=[1, 2], left={1: 5000, 2: 1})
    assert plan("vllm-v0", state, budget=100) == Batch(chunks=[(1, 5000)], admitted=[1],
                                                       kv=[(1, 5000)])


def test_vllm_v0_decodes_when_no_prompt_fits():
    state = Stub(decoding=4, waiting=[1], left={1: 100}, free_kv=4 + 99)
    assert plan("vllm-v0", state, budget=1000) == Batch(decodes=4)
    state.free_kv = 4 + 100                  # the decodes' next tokens come first
    assert plan("vllm-v0", state, budget=1000).admitted == [1]


def test_orca_runs_every_decode_with_whole_prompts_and_no_budget():
    state = Stub(decoding=3, waiting=[1, 2], left={1: 500, 2: 600})
    assert plan("orca", state, budget=1) == Batch(
        decodes=3, chunks=[(1, 500), (2, 600)], admitted=[1, 2], kv=[(1, 500), (2, 600)])


@pytest.mark.parametrize("policy", ["vllm-v0", "orca"])
def test_unchunked_policies_admit_whole_prompts_while_kv_lasts(policy):
    """Each prompt needs all its KV, beside the watermark and those admitted before it."""
    state = Stub(waiting=[1, 2], left={1: 60, 2: 50}, free_kv=10 + 60 + 50, kv_watermark=10)
    assert plan(policy, state, budget=1000).admitted == [1, 2]
    state.free_kv -= 1
    assert plan(policy, state, budget=1000).admitted == [1]
    state.free_kv = 10 + 59
    assert plan(policy, state, budget=1000).admitted == []


@pytest.mark.parametrize("policy", ["vllm-v0", "orca"])
def test_unchunked_policies_cap_running_requests(policy):
    state = Stub(decoding=1, waiting=[1, 2], left={1: 5, 2: 5})
    assert plan(policy, state, 100, Limits(max_seqs=2)).admitted == [1]


# --- what every policy shares ----------------------------------------------------------------
def test_the_reservation_rule_lives_in_the_spec():
    """Sarathi-Serve and SGLang reserve the whole prompt at admission, vLLM V1 each chunk; the
    unchunked policies run whole prompts, so either rule reserves all of it."""
    assert {name: p.reserve_whole_prompt for name, p in POLICIES.items()} == {
        "sarathi": True, "vllm-v1": False, "sglang": True, "vllm-v0": True, "orca": True}


@pytest.mark.parametrize("limits", [NO_CAP, Limits(mixed_chunk=True)], ids=["default", "mixed"])
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_what_a_spec_declares_is_what_its_policy_does(policy, limits):
    """The work estimator reads these fields instead of asking the policy: each one matches the
    function's behaviour on a state that tells it apart, under limits that change them (SGLang's
    mixed chunk) as `under` declares."""
    spec = POLICIES[policy].under(limits)
    long_prompt = plan(policy, Stub(waiting=[1], left={1: 100}), 10, limits)
    assert spec.chunked == (sum(t for _, t in long_prompt.chunks) < 100)
    beside = plan(policy, Stub(decoding=3, waiting=[1], left={1: 100}), 10, limits)
    assert spec.decodes_take_budget == (
        beside.decodes > 0 and sum(t for _, t in beside.chunks) == 10 - beside.decodes)
    small_prompt = plan(policy, Stub(decoding=1, waiting=[1], left={1: 1}), 100, limits)
    assert spec.prefill_with_decodes == (small_prompt.decodes > 0 and bool(small_prompt.chunks))
    many_decoders = plan(policy, Stub(decoding=10), 4, limits)
    assert spec.budget_caps_decodes == (many_decoders.decodes < 10)


def test_only_sglangs_mixed_chunk_changes_what_a_policy_declares():
    mixed = Limits(mixed_chunk=True)
    assert POLICIES["sglang"].under(NO_CAP) is POLICIES["sglang"]
    sglang = POLICIES["sglang"].under(mixed)
    assert sglang.prefill_with_decodes and sglang.decodes_take_budget
    assert all(POLICIES[name].under(mixed) is POLICIES[name] for name in POLICIES if name != "sglang")


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_an_idle_state_gives_an_empty_batch(policy):
    assert plan(policy, Stub(), budget=100) == Batch()


@pytest.mark.parametrize("names, prose", [
    ([], ""), (["A"], "A"), (["A", "B"], "A and B"), (["A", "B", "C"], "A, B and C")])
def test_names_read_as_prose_lists_them(names, prose):
    assert names_in_prose(iter(names)) == prose


def test_policies_in_words_are_their_specs_summaries():
    assert in_words(["orca", "sglang"]) == (
        f"orca: {POLICIES['orca'].summary}; sglang: {POLICIES['sglang'].summary}.")


def test_an_unknown_policy_names_the_known_ones():
    with pytest.raises(InputError) as error:
        get_policy("fifo")
    assert str(error.value) == "unknown policy 'fifo'; choose one of sarathi, vllm-v1, sglang, vllm-v0, orca"


@pytest.mark.parametrize("bad, message", [
    (dict(max_seqs=0), "max sequences must be ≥ 1, got 0"),
    (dict(max_seqs=1_000_001), "max sequences must be ≤ 1,000,000, got 1000001"),
    (dict(max_seqs=1.5), "max sequences must be a whole number"),
    (dict(max_concurrent_prefills=0), "max concurrent prefills must be ≥ 1, got 0"),
    (dict(max_concurrent_prefills=1_000_001), "max concurrent prefills must be ≤ 1,000,000"),
    (dict(max_iterations=5_000_001), "iteration cap must be ≤ 5,000,000, got 5000001"),
    (dict(max_iterations=float("nan")), "iteration cap must be a finite number")])
def test_limits_refuse_bad_values(bad, message):
    with pytest.raises(InputError, match=f"^{message}"):
        Limits(**bad)


def test_limits_allow_their_largest_values():
    limits = Limits(max_seqs=1_000_000, max_concurrent_prefills=1_000_000, max_iterations=5_000_000)
    assert (limits.max_seqs, limits.max_concurrent_prefills, limits.max_iterations) == (
        1_000_000, 1_000_000, 5_000_000)


def test_limits_are_named_never_positional():
    """The budget is not a limit here: `Limits(576, 128)` must not quietly mean max_seqs=576."""
    with pytest.raises(TypeError):
        Limits(576, 128)


def test_limits_keep_whole_numbers():
    limits = Limits(max_seqs=8.0, max_concurrent_prefills=2.0, max_iterations=1e6)
    assert (limits.max_seqs, limits.max_concurrent_prefills, limits.max_iterations) == (8, 2, 1_000_000)
    assert all(type(v) is int for v in (limits.max_seqs, limits.max_concurrent_prefills,
                                        limits.max_iterations))


# --- the engines' defaults by GPU tier -------------------------------------------------------------
@pytest.mark.parametrize("gpu, budget, seqs", [
    ("b200", 16384, 1024), ("mi300x", 16384, 1024),          # >= 160 GiB
    ("h100-sxm", 8192, 1024), ("h200", 8192, 1024),          # >= 70 GiB, not an A100
    ("a100-80gb", 2048, 256), ("a100-40gb", 2048, 256), ("l40s", 2048, 256), ("l4", 2048, 256)])
def test_vllm_v1_defaults_by_gpu_tier(gpu, budget, seqs):
    """`vllm serve` 0.33.0 (vllm/engine/arg_utils.py:2973-3006): max_num_batched_tokens and
    max_num_seqs 16,384 / 1,024 with >= 160 GiB, 8,192 / 1,024 with >= 70 GiB and not an A100,
    2,048 / 256 otherwise. The lab used to mark 8,192 on B200 and MI300X and keep 1,024 running
    requests everywhere."""
    profile, g = POLICIES["vllm-v1"].profile, get_gpu(gpu)
    cost = CostModel(g, get_model("dense-8b"))
    assert (profile.budget(g), profile.max_seqs(cost, budget)) == (budget, seqs)


@pytest.mark.parametrize("gpu, chunk", [
    ("l4", 4096), ("rtx-4090", 4096), ("a100-40gb", 4096), ("l40s", 4096),
    ("a100-80gb", 8192), ("h100-sxm", 8192), ("h200", 8192), ("b200", 16384), ("mi300x", 16384)])
def test_sglang_chunk_size_by_gpu_memory(gpu, chunk):
    """SGLang 0.5.23's --chunked-prefill-size (srt/arg_groups/memory_hook.py:90-177): 2,048
    below 20 GiB, 4,096 below 60 GiB (the 20-35 GiB tier was 2,048 before), 8,192 below 160
    GiB, 16,384 above. The lab used to give L4 and RTX 4090 (24 GB) 2,048."""
    assert POLICIES["sglang"].profile.budget(get_gpu(gpu)) == chunk


def gpu_of(gib: float, like: str = "h100-sxm"):
    """A GPU like `like` with exactly `gib` GiB of memory, to put one on a tier's edge (the
    presets sit well inside their tiers)."""
    return replace(get_gpu(like), memory_bytes=int(gib * GIB))


@pytest.mark.parametrize("gib, budget", [(160, 16384), (159.9, 8192), (70, 8192), (69.9, 2048)])
def test_vllm_v1_tiers_begin_at_their_edges(gib, budget):
    """">= 160 GiB" and ">= 70 GiB" include the edge itself (vllm/engine/arg_utils.py:2973-3006)."""
    assert POLICIES["vllm-v1"].profile.budget(gpu_of(gib)) == budget


@pytest.mark.parametrize("gib, chunk", [
    (19.9, 2048), (20, 4096), (59.9, 4096), (60, 8192), (159.9, 8192), (160, 16384)])
def test_sglang_chunk_size_tiers_end_below_their_edges(gib, chunk):
    """"below 20 GiB" and the rest exclude the edge (srt/arg_groups/memory_hook.py:90-177)."""
    assert POLICIES["sglang"].profile.budget(gpu_of(gib)) == chunk


@pytest.mark.parametrize("gib, budget, tp, reserved_mib", [
    # 512 MiB + 1.5 MiB x max(chunk, 2,048) + tp/8 GiB + 2 MiB x decode graphs (by tier and tp)
    # + 8 MiB x prefill graphs (37 sizes up to 1,000 tokens, 42 to 2,048, 50 to 4,096, 74 to 16,384)
    (19, 1000, 1, 512 + 1.5 * 2048 + 128 + 2 * 8 + 8 * 37),     # below 20 GiB: 8; 2,048 at least
    (20, 4096, 2, 512 + 1.5 * 4096 + 256 + 2 * 48 + 8 * 50),    # below 35 GiB: 48
    (34, 4096, 4, 512 + 1.5 * 4096 + 512 + 2 * 160 + 8 * 50),   # ... 160 from tp 4
    (35, 2048, 1, 512 + 1.5 * 2048 + 128 + 2 * 32 + 8 * 42),    # below 60 GiB: 32
    (59, 2048, 4, 512 + 1.5 * 2048 + 512 + 2 * 160 + 8 * 42),   # ... 160 from tp 4
    (60, 2048, 1, 512 + 1.5 * 2048 + 128 + 2 * 256 + 8 * 42),   # below 160 GiB: 256; 60 is not above 60
    (100, 16384, 4, 512 + 1.5 * 16384 + 512 + 2 * 512 + 8 * 74),  # ... 512 from tp 4
    (159, 16384, 8, 512 + 1.5 * 16384 + 1024 + 2 * 512 + 8 * 74),  # above the 10 GiB floor
    (61, 2048, 1, 10 * 1024),                                   # above 60 GiB: at least 10 GiB
    (160, 2048, 1, 10 * 1024),
    (160, 16384, 1, 512 + 1.5 * 16384 + 128 + 2 * 512 + 8 * 74)])  # 160 GiB and up: 512
def test_sglang_keeps_back_its_reserve_by_memory_tier_chunk_and_tp(gib, budget, tp, reserved_mib):
    """SGLang 0.5.23's memory kept back from its KV pool (srt/arg_groups/memory_hook.py:305-326,
    reserve_for_graph_mb :357-386), and the share of the GPU it leaves out of
    mem_fraction_static, (memory - reserve) / memory in MiB rounded to 3 places (:325)."""
    reserve = sglang_reserve(CostModel(gpu_of(gib), get_model("dense-8b"), tp=tp), budget)
    assert reserve.reserved_mib == reserved_mib
    assert reserve.share == pytest.approx(1 - round((gib * 1024 - reserved_mib) / (gib * 1024), 3))


@pytest.mark.parametrize("chunk, sizes", [
    (2048, 42), (4096, 50), (8192, 58), (16384, 74), (576, 31), (4, 1), (3, 0)])
def test_sglang_captures_a_prefill_graph_for_each_size_up_to_its_chunk(chunk, sizes):
    """generate_prefill_cuda_graph_batch_sizes (srt/arg_groups/cuda_graph_hook.py:480-497):
    4-32 by 4, 48-256 by 16, 288-512 by 32, 576-1,024 by 64, 1,280-4,096 by 256, then by 512;
    each adds 8 MiB to the reserve (memory_hook.py:386). The lab used to count none."""
    assert len(prefill_graph_sizes(chunk)) == sizes
    assert prefill_graph_sizes(8192)[-3:] == [7168, 7680, 8192]


def test_sglang_caps_llama_2_prefill_graphs_at_4096_and_captures_none_on_rocm():
    """Llama-2 models capture up to 4,096 tokens (memory_hook.py:260-263); prefill graphs are on
    by default on CUDA only (model_executor/cuda_graph_config.py:119-123)."""
    h100 = get_gpu("h100-sxm")
    assert sglang_reserve(CostModel(h100, get_model("llama-2-7b")), 8192).prefill_graphs == 50
    assert sglang_reserve(CostModel(h100, get_model("llama-3.1-8b")), 8192).prefill_graphs == 58
    assert sglang_reserve(CostModel(get_gpu("mi300x"), get_model("llama-3.1-8b")),
                          16384).prefill_graphs == 0


def test_sglang_keeps_back_at_most_nine_tenths_of_a_small_gpu():
    """On a 4 GiB GPU the sum is 4,064 MiB (99%): the lab keeps back 90% at most."""
    assert POLICIES["sglang"].profile.reserve(
        CostModel(gpu_of(4), get_model("dense-8b")), 2048) == 0.9


def test_the_sarathi_serve_artifact_chunks_at_512_on_every_gpu():
    """Its default chunk is its strict-SLO runs' 512, whatever the GPU."""
    assert {POLICIES["sarathi"].profile.budget(gpu_of(gib)) for gib in (16, 80, 192)} == {512}


@pytest.mark.parametrize("params, seqs", [(60e9, 8), (59.9e9, 16)])
def test_orca_halves_its_batch_from_60b_params(params, seqs):
    """8 from 60 B parameters on (the 70B and 180B runs), 16 below."""
    model = replace(get_model("dense-8b"), nominal_params=params)   # its parameter count
    assert POLICIES["orca"].profile.max_seqs(CostModel(gpu_of(80), model), 4096) == seqs


@pytest.mark.parametrize("policy, model, seqs", [
    ("sarathi", "dense-8b", 128), ("orca", "dense-8b", 16), ("orca", "llama-3.1-70b", 8),
    ("vllm-v0", "dense-8b", 128),
    # SGLang: 419,023 KV tokens / 131,072 of context x 512 = 1,636, raised to 2,048; the textbook
    # model's 8,192 of context gives 26,188, lowered to 4,096
    ("sglang", "llama-3.1-8b", 2048), ("sglang", "dense-8b", 4096)])
def test_max_running_requests_by_engine(policy, model, seqs):
    """Sarathi-Serve's runs cap the batch at 128 and Orca's at 16, 8 for the 70B and 180B
    models, and its vLLM baseline at 128 (osdi-experiments/figure-5-6/*.yml on
    osdi-sarathi-serve); SGLang's max running requests by its KV cache. The lab used 1,024 for
    every engine, then 1,024 for SGLang, a figure with no source."""
    cost = CostModel(get_gpu("h100-sxm"), get_model(model))
    assert POLICIES[policy].profile.max_seqs(cost, 8192) == seqs


@pytest.mark.parametrize("gib, seqs", [
    (80, 2048),     # 450,912 KV tokens / 131,072 of context x 512 = 1,761: the floor
    (100, 2401),    # 614,752 KV tokens: 2,401, between the floor and the ceiling
    (400, 4096),    # 3,072,352 KV tokens: 12,001, the ceiling
    (19.3, 1503)])  # 3,007 KV tokens: the floor is more than half of them, so half
def test_sglang_sizes_its_running_requests_by_its_kv_cache(gib, seqs):
    """max(min(KV tokens / context_len x 512, 4,096), 2,048), at most KV tokens / 2
    (srt/mem_cache/kv_cache_configurator.py:3119-3132 at v0.5.23), for Llama-3.1-8B (context
    131,072) at a chunk of 2,048. The lab used to seat 1,024, a figure with no source."""
    cost = CostModel(gpu_of(gib), get_model("llama-3.1-8b"))
    tokens = kv_capacity_tokens(cost, policy_reserve(POLICIES["sglang"], cost, 2048))
    assert seqs == min(max(min(int(tokens / 131072 * 512), 4096), 2048), tokens // 2)
    assert POLICIES["sglang"].profile.max_seqs(cost, 2048) == seqs


def test_the_default_max_seqs_seats_the_streams_a_run_starts_with():
    orca, cost = POLICIES["orca"], CostModel(get_gpu("h100-sxm"), get_model("dense-8b"))
    assert default_max_seqs(orca, cost) == 16
    assert default_max_seqs(orca, cost, workload=textbook_scenario(decodes=64)) == 65
    assert default_max_seqs(orca, cost, workload=textbook_scenario(decodes=4)) == 16
    # the streams arriving with the first request only: 1 at 0 s, not the 30 at 0.5 s
    later = make_workload([0.0] + [0.5] * 30, [10] * 31, [5] * 31, [True] * 31)
    assert default_max_seqs(orca, cost, workload=later) == 16
    # vLLM V1's by the GPU's memory tier
    assert [default_max_seqs(POLICIES["vllm-v1"], CostModel(get_gpu(g), get_model("dense-8b")))
            for g in ("l4", "h100-sxm")] == [256, 1024]


def test_every_profile_citation_has_a_public_address_and_docs_sources_lists_each():
    """Each cited figure's source is a public address (a file at the release tag or branch, with its
    lines, or the paper), and docs/sources.md, "Engine profiles", gives the same addresses."""
    sources = (Path(__file__).parents[3] / "docs" / "sources.md").read_text()
    releases = ("/blob/v0.33.0/", "/blob/v0.4.0.post1/", "/blob/v0.5.23/", "/blob/osdi-sarathi-serve/")
    for spec in POLICIES.values():
        profile = spec.profile
        assert profile.engine and profile.version and profile.citations
        for citation in profile.citations:
            assert citation.sources, citation.what
            for address in citation.sources:
                assert address.startswith("https://"), address
                assert any(r in address for r in releases) or "arxiv.org" in address, address
                assert "github.com" not in address or "#L" in address, address   # its lines
                assert f"<{address}>" in sources, address


def test_a_policys_label_names_its_engine_and_release():
    """Wherever the lab names a policy it names the engine release its rules are read from."""
    assert POLICIES["vllm-v1"].label == "vLLM V1 0.33 (chunked prefill)"
    assert POLICIES["sglang"].label == "SGLang 0.5.23 (prefill-first)"
    assert POLICIES["sarathi"].label == "Sarathi-Serve OSDI'24 (stall-free)"
    assert all(p.label.startswith(f"{p.engine} {p.profile.release} (") for p in POLICIES.values())
