"""The step engine and the policies on hand-checkable workloads."""

import types
from dataclasses import fields, replace

import numpy as np
import pytest

from sim import run
from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import custom_gpu, get_gpu
from sim.presets.models import get_model
from sim.serving.engine import SimulationLimitError, _Engine, kv_capacity_tokens, policy_reserve, simulate
from sim.serving.metrics import summarize, textbook_metrics
from sim.serving.policies import (
    POLICIES,
    Batch,
    Limits,
    NewTokenRatio,
    get_policy,
    lane_budget,
    lane_budget_note,
    unchunked_budget,
)
from sim.serving.workloads import burst, make_workload, poisson, textbook_scenario
from sim.studies.worked_example import worked_example

MS = 1e-3


def run_seed(policy="sarathi", budget=576, mode="simple", **scenario):
    """The textbook scenario (decoders streaming, one new prompt) in the source articles' simple cost mode."""
    return run(textbook_scenario(**scenario), policy, budget, mode=mode)


@pytest.mark.parametrize("budget", [576, 2048])
def test_engine_reproduces_the_worked_example(budget):
    """The simulated textbook scenario in simple mode equals the closed-form arithmetic."""
    row = worked_example(budgets=(budget,)).to_json()["budgets"][0]
    trace = run_seed("sarathi", budget)
    s = textbook_metrics(trace)
    assert s["new_request_ttft_s"] == pytest.approx(row["ttft_s"])
    assert s["decode_max_gap_s"] == pytest.approx(row["iteration_s"])
    assert trace.prefill_tokens[:row["iterations"]].sum() == 8192


def test_unchunked_prefill_freezes_every_decoder():
    trace = run_seed("vllm-v0", unchunked_budget(textbook_scenario()))
    assert trace.decode_tokens[0] == 0 and trace.prefill_tokens[0] == 8192   # prefill-only
    assert trace.duration_s[0] == pytest.approx(327.68 * MS)
    s = textbook_metrics(trace)
    assert s["new_request_ttft_s"] == pytest.approx(327.68 * MS)
    # decoders wait for the prefill and then for the next decode step
    assert s["decode_max_gap_s"] == pytest.approx(327.68 * MS + 16e9 / 3e12)


def test_vllm_v0_refuses_a_prompt_longer_than_its_budget_saying_what_vllm_does():
    """vLLM V0 ignores a prompt longer than its budget (prompt_limit = max_num_batched_tokens,
    FINISHED_IGNORED: vllm/core/scheduler.py:126-127 and 244-249 at v0.4.0.post1); the lab used
    to run it anyway, so budgets 576, 1,024 and 2,048 gave the same unchunked lane."""
    with pytest.raises(InputError) as error:
        run_seed("vllm-v0", 2048)
    assert str(error.value) == (
        "vLLM V0 0.4.0.post1 ignores a prompt longer than its token budget (prompt_limit = "
        "max_num_batched_tokens: the request ends at once with no output, status FINISHED_IGNORED), and 1 "
        "of these 1 prompts are longer than 2,048 tokens (the longest 8,192); give a budget of at "
        "least 8,192, or vLLM V0's own without chunking, max(max_model_len, 2,048) = 8,224")
    assert run_seed("vllm-v0", 8192).iterations > 0     # a budget the prompt fits runs
    assert unchunked_budget(make_workload([0.0], [100], [10])) == 2048


def test_orca_runs_decodes_with_the_whole_prompt():
    trace = run_seed("orca")
    assert trace.decode_tokens[0] == 64 and trace.prefill_tokens[0] == 8192
    assert textbook_metrics(trace)["decode_max_gap_s"] == pytest.approx(8256 * 16e9 / 400e12)


def test_sglang_is_prefill_first():
    trace = run_seed("sglang", 576)
    chunks = trace.prefill_tokens > 0
    assert np.all(trace.decode_tokens[chunks] == 0)          # prefill batches run alone
    assert trace.prefill_tokens.max() == 576                 # chunked to the chunk size
    assert textbook_metrics(trace)["decode_max_gap_s"] > 0.3     # so decoders still stall


def test_vllm_v1_budget_caps_decodes():
    trace = run_seed("vllm-v1", 32, decodes=64, decode_output=4, prompt=256)
    assert trace.decode_tokens.max() == 32
    assert np.all(trace.decode_tokens + trace.prefill_tokens <= 32)
    assert summarize(trace).requests == 65                   # everyone still finishes


def test_a_budget_equal_to_the_decodes_starves_prompts_too():
    trace = run_seed("sarathi", 64, decodes=64, decode_output=10, prompt=512)
    assert trace.starved_iterations == 10 and np.flatnonzero(trace.prefill_tokens)[0] == 10


def test_sarathi_budget_below_decodes_starves_without_crashing():
    trace = run_seed("sarathi", 32, decodes=64, decode_output=10, prompt=512)
    assert trace.decode_tokens[0] == 64                      # every decode still runs
    first_chunk = np.flatnonzero(trace.prefill_tokens)[0]
    assert first_chunk == 10                                 # only after the decoders finish
    assert trace.starved_iterations == 10
    assert "starvation" in trace.notes[0]


def test_arrivals_wait_for_the_running_iteration():
    w = make_workload([0.0, 0.001], [4096, 100], [2, 2])
    trace = run(w, "sarathi", 8192, mode="simple")
    first = trace.duration_s[0]
    assert trace.start_s[1] == pytest.approx(first)          # no iteration is interrupted
    assert trace.tokens_of(1)[0] - 0.001 > first - 0.001


def test_idle_gaps_jump_to_the_next_arrival():
    w = make_workload([0.0, 10.0], [100, 100], [1, 1])
    trace = run(w, "sarathi", 512)
    assert trace.start_s[1] == 10.0


def test_token_counts_and_order():
    trace = run(poisson(50, 20, prompt=300, output=7, seed=3), "sarathi", 256)
    for r in range(50):
        times = trace.tokens_of(r)
        assert len(times) == 7
        assert np.all(np.diff(times) > 0)


def test_preemption_recomputes_when_kv_runs_out():
    # L4 (24 GB) with Llama-3.1-8B leaves ~5.5 GB of KV = ~42k tokens; 60 requests that each grow
    # to 1,500 tokens cannot all fit, so vLLM V1 (KV per chunk) must preempt.
    cost_args = dict(gpu="l4", model="llama-3.1-8b")
    w = make_workload(np.zeros(60), np.full(60, 500), np.full(60, 1000))
    trace = run(w, "vllm-v1", 2048, **cost_args)
    capacity = trace.kv_capacity_tokens
    assert trace.preemptions.sum() > 0
    assert np.all(trace.kv_used_tokens <= capacity)
    per_request = np.bincount(trace.chunk_request, trace.chunk_length, minlength=60)
    np.testing.assert_array_equal(per_request, w.prompt + trace.recomputed_tokens)
    assert all(len(trace.tokens_of(r)) == 1000 for r in range(60))
    assert any("preempted" in n for n in trace.notes)


def test_kv_capacity_is_memory_less_weights_and_reserve():
    cost = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
    assert kv_capacity_tokens(cost) == int((80e9 * 0.9 - 16e9) // 131072)
    assert kv_capacity_tokens(cost, 0.5) == int((80e9 * 0.5 - 16e9) // 131072)
    trace = simulate(textbook_scenario(decodes=4), get_policy("sarathi"), cost, budget=576,
                     reserve_fraction=0.5)
    assert trace.kv_capacity_tokens == kv_capacity_tokens(cost, 0.5) // 16 * 16   # whole blocks


@pytest.mark.parametrize("policy, budget, reserve", [
    ("sarathi", 576, 0.15), ("vllm-v0", 8224, 0.15), ("orca", 576, 0.15),
    # vLLM V1: 8% + the estimated activations (MLP 576 tokens x 3 x 14,336 x 2 B, the sampler's
    # 576 rows x 2 x 128,256 x 4 B) and 0.5 GiB of CUDA graphs, of 80 GB
    ("vllm-v1", 576, 0.08 + (576 * 3 * 14336 * 2 + 576 * 2 * 128256 * 4 + 2**29) / 80e9),
    # SGLang: 1 - mem_fraction_static, (memory - reserve) / memory in MiB rounded to 3 places;
    # the reserve 512 + 1.5 x 2,048 + 1/8 x 1,024 + 2 x 256 + 8 x 31 prefill graphs MiB, at least
    # 10 GiB; at 8,192: 512 + 1.5 x 8,192 + 128 + 512 + 8 x 58
    ("sglang", 576, 1 - round((80e9 / 2**20 - 10240) / (80e9 / 2**20), 3)),
    ("sglang", 8192, 1 - round((80e9 / 2**20 - 13904) / (80e9 / 2**20), 3))])
def test_each_engine_keeps_its_own_memory_back(policy, budget, reserve):
    """vLLM V1 0.33 uses gpu_memory_utilization 0.92 (vllm/config/cache.py:215) less its profile
    run's activations and CUDA graphs (v1/worker/gpu_worker.py:683-757); SGLang 0.5.23 sizes its
    reserve from the chunk size and its CUDA graphs (srt/arg_groups/memory_hook.py:305-386); the
    Sarathi-Serve artifact runs its schedulers (Sarathi-Serve, vLLM, Orca) at 0.85
    (sarathi/engine/arg_utils.py:42). The lab used to keep 10% for every engine."""
    cost = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
    assert policy_reserve(get_policy(policy), cost, budget) == pytest.approx(reserve)
    trace = run_seed(policy, budget, decodes=4)
    block = get_policy(policy).profile.kv_block_tokens
    assert trace.kv_capacity_tokens == kv_capacity_tokens(cost, reserve) // block * block


@pytest.mark.parametrize("tp, message", [
    (1, "Llama-3.1-70B weights (141 GB) do not fit in L4 memory (24.2 GB less a 10% reserve); "
        "choose a larger GPU, more GPUs (tp) or a smaller model"),
    (2, "Llama-3.1-70B weights (70.6 GB (1/2 per GPU)) do not fit in L4 memory (24.2 GB less a 10% "
        "reserve); choose a larger GPU, more GPUs (tp) or a smaller model")])
def test_weights_that_do_not_fit_are_refused_with_their_sizes(tp, message):
    with pytest.raises(InputError) as error:
        kv_capacity_tokens(CostModel(get_gpu("l4"), get_model("llama-3.1-70b"), tp=tp))
    assert str(error.value) == message


def test_prompt_beyond_memory_is_refused():
    with pytest.raises(InputError, match="tokens of KV"):
        run(textbook_scenario(prompt=1_000_000), "sarathi", 576)


TIGHT = CostModel(custom_gpu(150, 1, 18.2), get_model("dense-8b"))   # 2,899 KV tokens at 10%


def tight(w, policy, budget=4096, **kwargs):
    """`w` on TIGHT with 10% of memory kept back, whatever the engine's own reserve."""
    return simulate(w, get_policy(policy), TIGHT, budget=budget, reserve_fraction=0.1, **kwargs)


def test_a_request_may_fill_the_kv_but_not_overflow_it():
    """vLLM V1 keeps no watermark: prompt + output up to all 2,896 tokens (181 blocks of 16 of
    the 2,899 that fit) runs; one more is refused, with both sizes in tokens and SI GB (131 kB
    per token)."""
    assert tight(make_workload([0.0], [2895], [1]), "vllm-v1").iterations == 1
    with pytest.raises(InputError) as error:
        tight(make_workload([0.0], [2896], [1]), "vllm-v1")
    assert str(error.value) == (
        "a request needs 2,897 tokens of KV (0.4 GB) but only 2,896 tokens (0.4 GB) fit beside "
        "the weights; shorten the prompt or pick a GPU with more memory")
    # 8,602 tokens x 131,072 B = 1.127 GB
    with pytest.raises(InputError, match=r"needs 8,602 tokens of KV \(1.1 GB\) but only 2,896"):
        tight(make_workload([0.0], [8601], [1]), "vllm-v1")


def test_running_decoders_must_fit_in_kv_and_in_max_sequences():
    """SGLang counts KV token by token (a page of one token), so its streams may fill all of
    it."""
    fits = textbook_scenario(decodes=2, context=1400, decode_output=49, prompt=10, prompt_output=1)
    assert tight(fits, "sglang", limits=Limits(max_seqs=3)).iterations > 0   # 2 x 1,449 = 2,898
    all_of_it = textbook_scenario(decodes=1, context=2850, decode_output=49, prompt=10, prompt_output=1)
    trace = tight(all_of_it, "sglang")   # 2,850 + 49 = all
    assert trace.kv_used_tokens.max() == 2898    # after its last step the decoder is gone
    too_long = textbook_scenario(decodes=2, context=1400, decode_output=50, prompt=10)
    with pytest.raises(InputError) as error:
        tight(too_long, "sglang")
    assert str(error.value) == ("the running streams need 2,900 tokens of KV (2 streams × (1,400 "
                                "of context + 50 each will emit)) but only 2,899 fit; use fewer "
                                "streams or a shorter context")
    with pytest.raises(InputError) as error:
        tight(fits, "sglang", limits=Limits(max_seqs=1))
    assert str(error.value) == "2 running streams exceed max sequences (1)"


def test_iteration_cap_is_a_clear_error():
    """The textbook scenario at budget 576 takes 256 iterations: a cap of 256 lets it finish."""
    assert run_seed("sarathi", 576, mode="roofline").iterations == 256
    assert run(textbook_scenario(), "sarathi", 576, max_iterations=256).iterations == 256
    with pytest.raises(SimulationLimitError) as error:
        run(textbook_scenario(), "sarathi", 576, max_iterations=255)
    assert error.value.cap == 255                     # which cap it hit: the CLI names it
    assert str(error.value) == ("the run needed more than 255 iterations (the cap); shorten the "
                                "workload or raise the iteration cap")


def test_burst_drain_matches_the_source_article():
    """Ten 8,192-token prompts behind 64 decoders at budget 576 drain in about 3.69 s. The closed
    form keeps the chunk at 512; in the engine each finished prompt becomes a decoder and takes one
    token of the budget, so the last prompt's first token comes 13 ms (0.4%) later."""
    w = burst(10, prompt=8192, decodes=64, decode_output=400)
    trace = run(w, "sarathi", 576, mode="simple")
    last = trace.tokens_of(73)[0]
    closed_form = worked_example().to_json()["burst_last_ttft_s"]
    assert closed_form == pytest.approx(3.6864)
    assert last == pytest.approx(3.69952)
    assert 0 < last - closed_form < 0.005 * closed_form


@pytest.mark.parametrize("bad, message", [
    (dict(budget=0), "budget must be ≥ 1, got 0"),
    (dict(budget=10_000_001), "budget must be ≤ 10,000,000, got 10000001"),
    (dict(budget=float("nan")), "budget must be a finite number"),
    (dict(reserve_fraction=-0.1), "reserve fraction must be ≥ 0, got −0.1"),
    (dict(reserve_fraction=0.995), "reserve fraction must be ≤ 0.99, got 0.995"),
    (dict(reserve_fraction=0.99), r"8B model .* weights \(16 GB\) do not fit .* less a 99% reserve")])
def test_bad_budget_and_reserve(bad, message):
    kwargs = dict(budget=576) | bad
    with pytest.raises(InputError, match=f"^{message}"):
        simulate(textbook_scenario(), get_policy("sarathi"),
                 CostModel(get_gpu("illustrative"), get_model("dense-8b")), **kwargs)


def test_the_largest_budget_and_no_reserve_are_allowed():
    cost = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
    trace = simulate(textbook_scenario(), get_policy("sarathi"), cost, budget=10_000_000,
                     reserve_fraction=0)
    assert trace.kv_capacity_tokens == int((80e9 - 16e9) // 131072) // 16 * 16


def assert_priced_like_the_cost_model(trace, w, cost):
    """Every iteration's times equal `CostModel.price` of its batch, rebuilt from the trace."""
    from sim.cost.iteration import Chunk, Composition
    for i in range(trace.iterations):
        contexts = []
        for r in trace.decode_rows(i):
            before = trace.tokens_of(r) <= trace.start_s[i]
            emitted = int(before.sum()) - int(trace.prefilled[r])   # tokens generated so far
            contexts.append(int(w.prompt[r]) + emitted - (0 if trace.prefilled[r] else 1))
        rows = trace.chunk_iteration == i
        chunks = tuple(Chunk(int(n), int(p), int(p + n) == int(w.prompt[r]))
                       for r, p, n in zip(trace.chunk_request[rows], trace.chunk_start[rows],
                                          trace.chunk_length[rows]))
        priced = cost.price(Composition(tuple(contexts), chunks))
        assert trace.duration_s[i] == pytest.approx(priced.time_s, rel=1e-12)
        assert trace.compute_s[i] == pytest.approx(priced.compute_s, rel=1e-12)
        assert trace.memory_s[i] == pytest.approx(priced.memory_s, rel=1e-12)


@pytest.mark.parametrize("model", ["mistral-7b", "llama-3.1-8b"])
def test_engine_prices_each_iteration_like_the_cost_model(model):
    """The engine's O(1) aggregation must equal `CostModel.price` of the same batch, sliding
    window included (decoder contexts and chunk prefixes straddling Mistral's 4,096-token
    window)."""
    w = make_workload([0.0, 0.0, 0.0, 0.01], [100, 8000, 3000, 9000], [20, 20, 20, 2],
                      [True, True, True, False])
    cost = CostModel(get_gpu("a100-80gb"), get_model(model))
    trace = run(w, "sarathi", 1024, gpu="a100-80gb", model=model)
    completes = trace.chunk_iteration[-1]            # the prompt's last chunk, beside 3 decodes
    assert trace.decode_tokens[completes] == 3 and trace.iterations > completes + 1
    assert_priced_like_the_cost_model(trace, w, cost)


@pytest.mark.parametrize("model", ["mistral-7b", "llama-3.1-8b"])
def test_engine_prices_the_head_of_the_running_list_when_the_budget_skips_the_rest(model):
    w = make_workload(np.zeros(6), [100, 8000, 3000, 5000, 200, 300], [4, 4, 4, 4, 4, 2],
                      [True] * 5 + [False])
    cost = CostModel(get_gpu("a100-80gb"), get_model(model))
    trace = run(w, "vllm-v1", 3, gpu="a100-80gb", model=model)
    assert np.any(trace.decode_tokens < trace.running_decoders)
    assert_priced_like_the_cost_model(trace, w, cost)


@pytest.mark.parametrize("policy", ["sarathi", "vllm-v1", "sglang", "vllm-v0", "orca"])
def test_admitting_a_prompt_never_evicts_a_running_decoder(policy):
    """The decodes' KV tokens come first: a prompt that fits only if the decoders got no KV this
    step waits instead of preempting them (schedulers.md: decodes are never refused)."""
    cost = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
    # SGLang's reserve grows with its chunk, vLLM V1's with the activations it profiles at its
    # budget: each gets one that still holds the prompt in one iteration
    budget = {"sglang": 16384, "vllm-v1": 300_000}.get(policy, 1_000_000)
    capacity = kv_capacity_tokens(cost, policy_reserve(get_policy(policy), cost, budget))
    decoders, context = 10, 1000
    prompt = capacity - decoders * context - 5      # fits beside the decoders' KV, not their growth
    w = make_workload(np.zeros(decoders + 1), np.r_[np.full(decoders, context), prompt],
                      np.r_[np.full(decoders, 6), 2], np.r_[np.ones(decoders, bool), False])
    trace = run(w, policy, budget)
    assert trace.preemptions.sum() == 0
    assert len(trace.tokens_of(decoders)) == 2


# --- KV: reservation rule, watermark ------------------------------------------------------------
@pytest.mark.parametrize("policy, prompt_kv", [("sarathi", 8192), ("sglang", 8192), ("vllm-v1", 512)])
def test_kv_of_the_first_iteration_follows_the_reservation_rule(policy, prompt_kv):
    """64 decoders hold 4,000 tokens each (250 full blocks of 16) and take one more, a new
    block each in vLLM and Sarathi-Serve (KV in 16-token blocks: vllm/config/cache.py:185 at
    v0.33.0), a token each in SGLang (page size 1); the new prompt holds all its 8,192 tokens
    from admission (Sarathi-Serve, SGLang) or only its first 512-token chunk (vLLM V1)."""
    trace = run_seed(policy, 576)
    decoders = 0 if policy == "sglang" else 64 * 16  # SGLang's decodes wait behind the prefill
    assert trace.kv_used_tokens[0] == 64 * 4000 + decoders + prompt_kv


def test_sarathi_admits_nothing_into_the_last_percent_of_kv():
    """On a GPU with 181 KV blocks of 16 tokens Sarathi-Serve keeps one (1%) free: a 2,784-token
    prompt (174 blocks) fits beside a 100-token one (7 blocks) only without that watermark, so it
    waits until the first request is done; vLLM V1, which keeps none, admits it at once."""
    assert kv_capacity_tokens(TIGHT) == 2899
    w = make_workload([0.0, 0.0], [100, 2784], [50, 1])
    sarathi = tight(w, "sarathi")
    first_chunk = sarathi.chunk_iteration[sarathi.chunk_request == 1][0]
    last_token = np.searchsorted(sarathi.end_s, sarathi.tokens_of(0)[-1])
    assert first_chunk == last_token + 1 and sarathi.preemptions.sum() == 0
    vllm = tight(w, "vllm-v1")
    assert vllm.chunk_iteration[vllm.chunk_request == 1][0] == 0


def test_sarathi_refuses_a_request_that_needs_the_watermark():
    """181 blocks of 16 tokens, one of them (1%) kept free: 2,880 tokens usable."""
    w = make_workload([0.0], [2880], [1])   # prompt + output = capacity - watermark + 1
    with pytest.raises(InputError, match="2,881 tokens of KV"):
        tight(w, "sarathi")
    assert len(tight(w, "vllm-v1").tokens_of(0)) == 1


# --- admission, decode rows, memory -------------------------------------------------------------
def test_admission_is_by_request_id():
    """A policy may admit from anywhere in the queue: the engine admits exactly the requests its
    batch names, and the others keep their place."""
    def last_come_first_served(state, budget, limits, whole_prompt):
        batch = Batch(decodes=state.decoding)
        if state.waiting:
            request = state.waiting[-1]
            batch.admit(request, state.prefill_left(request), state.prefill_left(request))
        return batch

    spec = replace(get_policy("orca"), name="lcfs", build=last_come_first_served)
    w = make_workload([0.0, 0.0, 0.0], [10, 20, 30], [1, 1, 1])
    trace = simulate(w, spec, CostModel(get_gpu("illustrative"), get_model("dense-8b")), budget=100)
    assert trace.chunk_request.tolist() == [2, 1, 0]
    assert trace.chunk_length.tolist() == [30, 20, 10]
    assert np.diff(trace.token_offsets).tolist() == [1, 1, 1]


def test_decode_rows_are_the_head_of_the_running_list():
    """vLLM V1 at budget 32 with 64 decoders: the first 32 (admission order) step; the trace
    keeps explicit rows only for such iterations."""
    trace = run_seed("vllm-v1", 32, decodes=64, decode_output=4, prompt=256)
    assert trace.running_decoders[0] == 64 and trace.decode_tokens[0] == 32
    assert trace.decode_rows(0).tolist() == list(range(32))
    # the skipped half does not advance: no token at the end of iteration 0, and in all still
    # exactly its 4 tokens (after the one it emitted before the run)
    assert all(trace.end_s[0] not in trace.tokens_of(r) for r in range(32, 64))
    assert np.diff(trace.token_offsets).tolist() == [5] * 64 + [32]
    partial = trace.decode_tokens < trace.running_decoders
    assert len(trace.partial_step_request) == trace.decode_tokens[partial].sum()
    full = np.flatnonzero(~partial & (trace.decode_tokens > 0))[0]
    assert len(trace.decode_rows(full)) == trace.running_decoders[full]
    assert len(trace.decode_rows(int(np.flatnonzero(trace.decode_tokens == 0)[0]))) == 0


def test_a_trace_grows_linearly_with_requests_and_tokens():
    """3,000 decoders joining one by one used to store 3,000 snapshots of the running list (4.5
    million entries); a trace now holds a few numbers per request, token and iteration."""
    trace = run(textbook_scenario(decodes=3000, context=1, decode_output=3, prompt=100), "sarathi", 8192,
                max_seqs=4000)
    held = 0
    for f in fields(trace):
        value = getattr(trace, f.name)
        held += value.size if isinstance(value, np.ndarray) else \
            sum(np.size(v) for v in value) if isinstance(value, list) else 0
    assert held <= 20 * (len(trace.arrival_s) + len(trace.token_s) + trace.iterations)
    assert len(trace.member_request) == 3001     # one stay in the running list each


def test_preemptions_are_recorded_with_their_victims():
    w = make_workload(np.zeros(60), np.full(60, 500), np.full(60, 1000))
    trace = run(w, "vllm-v1", 2048, gpu="l4", model="llama-3.1-8b")
    np.testing.assert_array_equal(np.bincount(trace.preemption_request, minlength=60),
                                  trace.preemptions)
    np.testing.assert_array_equal(np.bincount(trace.preemption_iteration,
                                              minlength=trace.iterations),
                                  trace.iteration_preemptions)


def test_a_partial_prefill_is_preempted_when_it_is_the_newest():
    """vLLM V1 at budget 10: two decoders grow while a new 850-token prompt takes KV 8 tokens at
    a time; when KV runs out, the prompt (admitted last) is evicted and its chunks are computed
    again. It comes back only once its whole prompt's KV is free again
    (scheduler_reserve_full_isl, vllm/config/scheduler.py:190 at v0.33.0): after the decoders
    finish, so it is evicted once (the lab, checking a chunk at a time, evicted it four times).
    Prefix caching off: with it, part of what it computed is found cached again
    (tests/sim/serving/test_prefix_caching.py)."""
    w = make_workload([0.0, 0.0, 0.0], [1000, 1000, 850], [300, 300, 2], [True, True, False])
    trace = tight(w, "vllm-v1", budget=10, limits=Limits(prefix_caching="off"))
    assert trace.preemption_request.tolist() == [2]
    assert trace.preemptions.tolist() == [0, 0, 1]
    assert trace.recomputed_tokens.tolist() == [0, 0, 704]
    assert trace.chunk_length[trace.chunk_request == 2].sum() == 850 + 704
    assert trace.notes == ("1 requests were preempted (KV full) and recomputed 704 tokens",)
    assert [len(trace.tokens_of(r)) for r in range(3)] == [301, 301, 2]
    back = trace.chunk_iteration[trace.chunk_request == 2][704 // 8 + 1]
    assert back > np.searchsorted(trace.end_s, trace.tokens_of(0)[-1])


def test_sglang_keeps_room_for_the_running_requests_future_tokens_so_it_does_not_preempt():
    """SGLang 0.5.23 admits a request only if its prompt + min(max_new_tokens, 4096) fits beside
    what the running requests keep for theirs (new_token_ratio from 0.7:
    python/sglang/srt/managers/schedule_policy.py:785-794 and 1407-1412). The lab used to reserve
    the prompt only, admit the 850-token prompt at once and preempt it when the decoders grew."""
    w = make_workload([0.0, 0.0, 0.0], [1000, 1000, 850], [300, 300, 2], [True, True, False])
    trace = tight(w, "sglang", budget=10)
    assert trace.preemptions.sum() == 0
    first_chunk = trace.chunk_iteration[trace.chunk_request == 2][0]
    assert first_chunk > 0     # it waited for room, instead of being admitted and evicted


def test_sglang_new_token_ratio_decays_so_a_waiting_request_fits_later():
    """new_token_ratio starts at 0.7 and loses (0.7 - 0.098) / 600 per decode step down to 0.098
    (srt/environ.py:646-648, new_token_ratio_tracker.py at v0.5.23). A stream of 100 tokens with
    2,000 to come keeps 1,400 at first, so a 1,500-token prompt does not fit beside it in 2,899
    tokens; at a fixed 0.7 it never would (each step the stream takes 1 and frees 0.7), but as
    the ratio decays it does, at the first step s where 2,899 - (100 + s) - ratio(s) x (2,000 -
    s) >= 1,500 + 1, long before the stream ends. That is the chat case, requests that may stop
    at EOS (--disable-ignore-eos); `test_sglang_keeps_kv_for_every_future_token_when_eos_is_ignored`
    is the benchmark's."""
    w = make_workload([0.0, 0.0], [100, 1500], [2000, 1], [True, False])
    trace = tight(w, "sglang", limits=Limits(disable_ignore_eos=True))
    first_chunk = trace.chunk_iteration[trace.chunk_request == 1][0]
    decay = (0.7 - 0.7 * 0.14) / 600
    due = next(s for s in range(2000) if 2899 - (100 + s) - (0.7 - s * decay) * (2000 - s) >= 1501)
    assert first_chunk == due and 0 < due < 100 and trace.preemptions.sum() == 0


def test_sglang_keeps_kv_for_every_future_token_when_eos_is_ignored():
    """SGLang's benchmark sends every request with ignore_eos (python/sglang/benchmark/
    serving.py:315-317 at v0.5.23), and a running request that ignores EOS keeps KV for all its
    tokens to come, ratio 1.0 (srt/managers/schedule_policy.py:787): the stream of 100 tokens
    with 2,000 to come keeps 2,000 - s at step s, so 2,899 - (100 + s) - (2,000 - s) = 799 free
    never holds the 1,500-token prompt, which waits until the stream has finished (its 2,000th
    iteration), however the ratio decays."""
    w = make_workload([0.0, 0.0], [100, 1500], [2000, 1], [True, False])
    trace = tight(w, "sglang")
    assert trace.chunk_iteration[trace.chunk_request == 1][0] == 2000
    assert trace.preemptions.sum() == 0


@pytest.mark.parametrize("outputs, finish_in, partial_generated, ratio", [
    # two decoders 10 and 50 steps from their last token, a partial prefill 5 tokens into its
    # output of 30: (90 + 150 + 5 decoded + 20 x 3) / (330 + 1)
    ([100, 200, 30], [10, 50], 5, (90 + 150 + 5 + 60) / 331),
    ([100, 200, 30], [99, 199], 0, (1 + 1 + 0 + 60) / 331),   # all just started
    ([100, 200, 30], [1, 1], 29, 1.0)])                        # (99 + 199 + 29 + 60) / 331 > 1
def test_sglang_sets_its_ratio_from_the_running_requests_after_a_retraction(
        outputs, finish_in, partial_generated, ratio):
    """policies.py: "SGLang after a retraction: (tokens decoded + 20 per request) / (their
    max_new_tokens + 1), at most 1, over the running requests". The rule on the engine's own
    state (decoders 0 and 1, partial prefill 2): a run shows the ratio only through when a later
    request is admitted."""
    clock = 1000
    engine = types.SimpleNamespace(
        dec_ids=np.array([0, 1]), dec_finish=clock + np.array(finish_in), clock=clock,
        partial=[2], output=np.array(outputs), generated=np.array([0, 0, partial_generated]))
    tracker = NewTokenRatio()
    tracker.value = 0.2
    tracker.after_retraction(*_Engine._running_outputs(engine))
    assert tracker.value == pytest.approx(ratio, rel=1e-12)


@pytest.mark.parametrize("output, generated, future", [(300, 0, 300), (300, 120, 180), (9000, 100, 4096)])
def test_sglang_keeps_kv_for_a_requests_output_still_to_come_at_most_4096(output, generated, future):
    """policies.py: "SGLang: the KV a request keeps for its output still to come, at most
    4,096": a retracted request that had generated tokens waits, and comes back, needing only
    the rest."""
    engine = types.SimpleNamespace(ratio=NewTokenRatio(), output=[output], generated=[generated])
    assert _Engine.future_kv(engine, 0) == future


def test_a_partial_prefill_holds_a_seat_that_an_arriving_stream_waits_for():
    """engine.py: streams that arrive join the running requests "while max_seqs and the free KV
    allow": at max_seqs 2, a stream arriving while one decoder streams and a prompt is half way
    through its prefill waits until the decoder's last token frees a seat."""
    w = make_workload([0.0, 0.0, 0.001], [100, 2000, 100], [20, 1, 5], [True, False, True])
    trace = tight(w, "sarathi", budget=32, limits=Limits(max_seqs=2))
    decoder_done = trace.tokens_of(0)[-1]
    assert trace.arrival_s[2] < decoder_done < trace.tokens_of(2)[1]   # [0]: its arrival
    assert trace.chunk_iteration[trace.chunk_request == 1][-1] > np.searchsorted(trace.end_s, decoder_done)


@pytest.mark.parametrize("prompts, streaming, limits", [
    ([2200, 400, 400], [False, True, True], Limits()),         # KV: a 2,200-token prompt holds most
    ([100, 100, 100], [True, True, True], Limits(max_seqs=2))])  # seats: one decoder holds one
def test_streams_that_arrive_together_join_first_come_while_kv_and_seats_allow(prompts, streaming, limits):
    """engine.py: streams "join the running decoders, their context already in KV, while
    max_seqs and the free KV allow (first come, first joined); the rest wait for a slot". Two
    streams arrive at once beside request 0: the first joins, the second waits until the
    first's last token frees its KV or its seat, and both stream every token."""
    w = make_workload([0.0, 0.001, 0.001], prompts, [50, 5, 5], streaming)
    trace = tight(w, "sarathi", budget=32, limits=limits)
    first, second = trace.tokens_of(1), trace.tokens_of(2)   # [0]: each one's arrival
    assert first[1] < 0.05 and first[-1] < second[1]
    assert [len(trace.tokens_of(r)) for r in range(3)] == [50 + streaming[0], 6, 6]


@pytest.mark.parametrize("prompts, streaming, budget, says", [
    ([4000, 3000, 5000], [False, True, False], 2048,
     "= 5,001 tokens, max_model_len the longest request: at 2,048 it would ignore the 2 prompts "
     "longer than that (each would end at once with no output), since it never splits a prompt"),
    ([100, 2048, 5000], [False, False, False], 2048,   # a prompt of the budget itself fits
     "= 5,001 tokens, max_model_len the longest request: at 2,048 it would ignore the 1 prompt "
     "longer than that (each would end at once with no output), since it never splits a prompt"),
    ([100, 200], [False, False], 8192, "= 2,048 tokens, max_model_len the longest request")])
def test_a_lane_at_a_budget_of_its_own_says_so_and_which_prompts_it_would_ignore(
        prompts, streaming, budget, says):
    """A stream's context is never a prompt to prefill, so it is never ignored."""
    w = make_workload([0.0] * len(prompts), prompts, [1] * len(prompts), streaming)
    assert lane_budget_note(get_policy("vllm-v0"), w, budget) == (
        "vLLM V0 runs at its own budget without chunking, max(max_model_len, 2,048) " + says)
    assert lane_budget_note(get_policy("sarathi"), w, budget) is None


def test_only_vllm_v0_runs_its_lane_at_a_budget_of_its_own():
    w = textbook_scenario()
    assert lane_budget(get_policy("vllm-v0"), w, 576) == unchunked_budget(w) != 576
    assert {lane_budget(get_policy(p), w, 576) for p in ("sarathi", "vllm-v1", "sglang", "orca")} == {576}


def test_the_starvation_note_counts_the_iterations():
    trace = run_seed("sarathi", 32, decodes=64, decode_output=10, prompt=512)
    assert trace.notes == (
        "starvation: in 10 iterations the running streams' decodes used the whole budget of 32 tokens and "
        "waiting prompts got none (budget <= streams: new requests wait until streams finish)",)


def test_a_trace_names_its_policy_budget_and_capacity():
    trace = run_seed("sglang", 1000)
    assert (trace.policy, trace.budget, trace.notes) == ("sglang", 1000, ())
    cost = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
    assert trace.kv_capacity_tokens == kv_capacity_tokens(
        cost, policy_reserve(get_policy("sglang"), cost, 1000))


def test_a_policy_that_schedules_nothing_is_an_error_not_a_hang():
    spec = replace(get_policy("sarathi"), build=lambda state, budget, limits, whole_prompt: Batch())
    with pytest.raises(RuntimeError, match="^the scheduler made no progress with work left$"):
        simulate(make_workload([0.0, 1.0], [10, 10], [1, 1]), spec,
                 CostModel(get_gpu("illustrative"), get_model("dense-8b")), budget=100)


def test_trace_columns_are_int64_or_float64():
    """Signed 64-bit counts (differences of them never wrap around) and float64 times."""
    trace = run(make_workload(np.zeros(60), np.full(60, 500), np.full(60, 1000)), "vllm-v1", 2048,
                gpu="l4", model="llama-3.1-8b")
    assert trace.preemptions.sum() and len(trace.partial_step_iteration) == 0
    for f in fields(trace):
        value = getattr(trace, f.name)
        if isinstance(value, np.ndarray) and value.dtype != bool:
            assert value.dtype in (np.int64, np.float64), f.name
    skipped = run_seed("vllm-v1", 32, decodes=64, decode_output=4, prompt=256)
    assert skipped.partial_step_iteration.dtype == skipped.partial_step_request.dtype == np.int64


def test_a_stream_arriving_mid_run_waits_for_a_seat_under_max_seqs():
    """max_seqs (vLLM max_num_seqs, SGLang max_running_requests) caps the running requests,
    streams that arrive mid-run included: with one seat, a stream arriving while a request runs
    starts only once it has finished. The lab used to let such streams join past the cap."""
    w = make_workload([0.0, 0.01], [100, 200], [20, 5], [False, True])
    trace = run(w, "sarathi", 512, max_seqs=1)
    first_done = trace.tokens_of(0)[-1]
    assert trace.tokens_of(1)[1] > first_done           # its next token after the first is done
    assert trace.running_decoders.max() == 1
    free = run(w, "sarathi", 512, max_seqs=2)
    assert free.tokens_of(1)[1] < free.tokens_of(0)[-1]   # with a second seat it joins at once


def test_sglang_a_new_request_waits_until_its_prompt_and_output_fit():
    """SGLang 0.5.23: a request needs its prompt + min(max_new_tokens, 4096) free, beside what
    the requests admitted before it keep (schedule_policy.py:1407-1412). A (100 + 1,700 tokens)
    and B (1,000 + 800) arrive together on 2,899 KV tokens: B's 1,800 do not fit beside A's
    1,800, so B waits, where the lab used to admit it at once (its 1,000-token prompt fits)."""
    w = make_workload([0.0, 0.0], [100, 1000], [1700, 800])
    trace = tight(w, "sglang")
    assert trace.chunk_iteration[trace.chunk_request == 0][0] == 0
    assert trace.chunk_iteration[trace.chunk_request == 1][0] > 0


def test_orca_gives_each_request_max_model_len_of_kv_up_front():
    """Orca as the Sarathi-Serve artifact runs it allocates ceil(max_model_len / 16) blocks to
    each request it admits (sarathi/core/block_space_manager/orca_block_space_manager.py:14-17 on
    osdi-sarathi-serve), max_model_len here the longest request (1,000 + 24 = 1,024): two
    requests hold 2 x 1,024 slots from their first iteration, however short their prompts, and
    decoding takes no more. The lab used to reserve the prompt only."""
    w = make_workload([0.0, 0.0], [100, 1000], [10, 24])
    trace = run(w, "orca", 4096)
    assert trace.kv_used_tokens[:9].tolist() == [2 * 1024] * 9   # until the first finishes
    a100 = CostModel(get_gpu("a100-80gb"), get_model("llama-3.1-8b"))
    assert POLICIES["orca"].profile.max_seqs(a100, 4096) == 16


def victim_among(order, generated, prompts, policy="sglang"):
    """`_Engine._victim` on running decoders `order` (ids, in batch order) that have emitted
    `generated` tokens of 100 and hold `prompts` (both by id)."""
    clock, n = 1000, len(order)
    engine = types.SimpleNamespace(
        spec=get_policy(policy), decoding=n, dec_ids=np.array(order), clock=clock,
        dec_finish=clock + 100 - np.array(generated)[order],
        w=make_workload(np.zeros(n), prompts, np.full(n, 100)),
        pool=types.SimpleNamespace(newest=lambda: order[-1]))
    return _Engine._victim(engine)


@pytest.mark.parametrize("order, generated, prompts, victim", [
    ([3, 0, 2, 1], [3, 7, 3, 5], [200, 50, 300, 50], 2),   # fewest out: 0 and 2; longest prompt: 2
    ([3, 0, 2, 1], [3, 7, 3, 5], [300, 50, 300, 50], 2),   # 0 and 2 alike: the later in the batch
    ([3, 2, 0, 1], [3, 7, 3, 5], [300, 50, 300, 50], 0),
    ([0, 1], [9, 2], [10, 10], 1)])
def test_sglang_retracts_the_decoder_with_the_fewest_output_tokens_ties_to_the_longest_prompt(
        order, generated, prompts, victim):
    """SGLang's retract_decode pops the last of its retraction order, running requests sorted by
    (output tokens, -prompt tokens) from the most to the least preferred to keep
    (python/sglang/srt/managers/schedule_batch.py:3467, 3552-3553, 3576-3579 at v0.5.23): the
    fewest output tokens goes first, of those the longest prompt, of those (a stable sort) the
    latest in the batch. The lab used to evict the newest holder, as vLLM does (the last in
    `order` here)."""
    assert victim_among(order, generated, prompts) == victim
    assert victim_among(order, generated, prompts, "vllm-v1") == order[-1]


def test_sglang_with_one_running_request_retracts_it_as_the_newest_holder():
    """SGLang keeps its last running request (schedule_batch.py:3462-3464); the lab frees the
    newest holder then, a partial prefill if one holds KV."""
    assert victim_among([0], [5], [10]) == 0


def test_sglang_new_token_ratio_starts_again_when_the_server_goes_idle():
    """SGLang resets new_token_ratio to 0.7 when its scheduler finds no batch to run
    (python/sglang/srt/managers/scheduler.py:2050-2053, on_idle :5317-5318 at v0.5.23). A first
    request's 700 decode steps bring the ratio to its floor (0.098); long after it has finished,
    a stream of 100 tokens with 2,000 to come and a 1,500-token prompt arrive together, and the
    prompt waits as long as it does on a fresh server
    (`test_sglang_new_token_ratio_decays_so_a_waiting_request_fits_later`), where the floor's
    196 tokens kept for the stream would have let it in at once."""
    w = make_workload([0.0, 100.0, 100.0], [100, 100, 1500], [700, 2000, 1], [False, True, False])
    trace = tight(w, "sglang", limits=Limits(disable_ignore_eos=True))
    first_chunk = trace.chunk_iteration[trace.chunk_request == 2][0]
    stream_joins = int(np.searchsorted(trace.end_s, 100.0))
    decay = (0.7 - 0.7 * 0.14) / 600
    due = next(s for s in range(2000) if 2899 - (100 + s) - (0.7 - s * decay) * (2000 - s) >= 1501)
    assert first_chunk - stream_joins == due
