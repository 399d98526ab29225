"""The source article's worked example, pinned with units, and its slips stated."""

import numpy as np
import pytest

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.policies import get_policy
from sim.serving.workloads import Workload
from sim.studies.worked_example import last_chunk, worked_example

MS = 1e-3
GIB = 2**30
TIB = 2**40


def test_defaults_reproduce_the_source_article():
    j = worked_example().to_json()
    assert j["weight_bytes"] == 16e9                                  # 16 GB
    assert j["flops_per_token"] == 16e9                               # 16 GFLOP
    assert j["decode_weight_read_s"] == pytest.approx(5.33 * MS, abs=0.01 * MS)
    assert j["decode_compute_s"] == pytest.approx(2.56 * MS)
    assert j["decode_step_s"] == pytest.approx(5.333 * MS, abs=0.001 * MS)
    assert j["unchunked_prefill_s"] == pytest.approx(327.68 * MS)
    b576, b2048 = j["budgets"]
    assert b576 == pytest.approx(dict(
        budget=576, chunk=512, starved=False, iteration_s=23.04 * MS, iterations=16,
        ttft_s=368.64 * MS, ttft_increase=0.125, stall_reduction=14.2222, wait_reduction=333.01333 / 23.04,
        decode_tokens_during_prefill=1024),
        rel=1e-4)
    assert b2048["chunk"] == 1984 and b2048["iterations"] == 5
    assert b2048["iteration_s"] == pytest.approx(81.92 * MS)          # not the article's 85 ms
    assert b2048["ttft_s"] == pytest.approx(4 * 81.92 * MS + 12.8 * MS)
    assert j["kv_bytes_per_token"] == 128 * 1024                      # 128 KiB
    assert j["prompt_kv_bytes"] == 1 * GIB
    assert j["reread_token_reads"] == 61_440
    assert j["reread_bytes"] == pytest.approx(7.5 * GIB)
    assert j["reread_s"] == pytest.approx(2.68 * MS, abs=0.01 * MS)
    assert j["long_prompt_chunks"] == 250
    assert j["long_prompt_reread_bytes"] / TIB == pytest.approx(1.9, abs=0.01)
    assert j["long_prompt_reread_s"] == pytest.approx(0.70, abs=0.005)
    assert j["burst_prefill_tokens_per_s"] == pytest.approx(22_222, abs=1)
    assert j["burst_last_ttft_s"] == pytest.approx(3.69, abs=0.005)


def test_json_keys_are_exactly_the_documented_ones():
    j = worked_example().to_json()
    assert list(j) == [
        "weight_bytes", "flops_per_token", "decode_weight_read_s", "decode_compute_s",
        "decode_step_s", "unchunked_prefill_s", "wait_unchunked_s", "budgets", "kv_bytes_per_token",
        "prompt_kv_bytes",
        "reread_token_reads", "reread_bytes", "reread_s", "long_prompt_chunks",
        "long_prompt_reread_bytes", "long_prompt_reread_s", "burst_prefill_tokens_per_s",
        "burst_last_ttft_s"]
    assert list(j["budgets"][0]) == [
        "budget", "chunk", "starved", "iteration_s", "iterations", "ttft_s", "ttft_increase",
        "stall_reduction", "wait_reduction", "decode_tokens_during_prefill"]


def test_steps_show_formula_substitution_and_units():
    steps = {s.key: s for s in worked_example().steps}
    assert steps["decode_weight_read_s"].display == "5.333 ms"
    assert "16 GB / 3 TB/s" in steps["decode_weight_read_s"].substituted
    assert steps["ttft_0"].display == "368.6 ms"
    assert steps["reread_bytes"].display == "8.05 GB"            # the article's 7.5 GiB, in SI units
    assert steps["long_prompt_reread_bytes"].display == "2.09 TB"  # its 1.9 TiB
    assert steps["weight_bytes"].display == "16 GB"


def test_the_streams_kv_read_is_priced_apart_from_the_decode_step():
    """Not in the article's arithmetic: 64 streams at 4,000 tokens hold 33.6 GB of KV, read every
    step: 11.18 ms more, which the source article's 'about 6 ms' does not cover. The decode step
    keeps one meaning (the weight read, 5.333 ms); the KV read is its own row."""
    steps = {s.key: s for s in worked_example().steps}
    assert steps["decode_kv_read_s"].value == pytest.approx(64 * 4000 * 131072 / 3e12)
    assert steps["decode_kv_read_s"].display == "11.18 ms" and "about 6 ms" in steps[
        "decode_kv_read_s"].seed_note
    assert steps["decode_step_s"].display == "5.333 ms"
    assert not any("with_kv" in key for key in steps)


def test_the_streams_longest_wait_is_the_prompt_iteration_plus_a_decode_step():
    """Two quantities, two names: the prompt's iteration (327.7 ms, the article's figure) and the
    streams' longest wait (333 ms); the iteration ratio 14.2x and the wait ratio 14.5x each
    under its own title, so no title carries both."""
    ex = worked_example()
    steps = {s.key: s for s in ex.steps}
    assert steps["unchunked_prefill_s"].display == "327.7 ms"
    assert steps["wait_unchunked_s"].display == "333 ms"
    assert steps["stall_reduction_0"].display == "14.2x" and "iteration" in steps[
        "stall_reduction_0"].title
    assert steps["wait_reduction_0"].display == "14.5x" and "wait" in steps[
        "wait_reduction_0"].title and "wait" in steps["wait_unchunked_s"].title


def test_the_articles_slips_are_named_at_the_defaults_only():
    notes = " ".join(s.seed_note for s in worked_example().steps)
    assert "2,112" in notes and "2.68 ms" in notes and "12.5%" in notes
    assert not any(s.seed_note for s in worked_example(prompt=4096).steps)


def test_starved_budget_is_reported_not_crashed():
    b = worked_example(budgets=(32,)).to_json()["budgets"][0]
    assert b["starved"] and b["chunk"] == -32 and b["ttft_s"] is None


def test_inputs_change_the_numbers():
    j = worked_example(peak_tflops=800, decodes=0, budgets=(512,)).to_json()
    assert j["unchunked_prefill_s"] == pytest.approx(8192 * 16e9 / 800e12)
    assert j["budgets"][0]["iterations"] == 16


@pytest.mark.parametrize("bad", [dict(params=0), dict(prompt=-5), dict(bandwidth_tbps=float("nan")),
                                 dict(budgets=()), dict(layers=1.5), dict(unknown=1)])
def test_bad_inputs(bad):
    with pytest.raises(InputError):
        worked_example(**bad)


def test_a_chunk_of_one_token_stays_closed_form():
    """ceil(1e9 / 1) iterations are summed in closed form, not one by one."""
    b = worked_example(prompt=1e9, budgets=(65,)).to_json()["budgets"][0]
    assert b["iterations"] == 10**9
    assert b["ttft_s"] == pytest.approx(10**9 * 16e9 / 3e12)   # every iteration memory-bound


def test_slip_notes_need_the_articles_first_budget():
    steps = {s.key: s for s in worked_example(budgets=(1000,)).steps}
    assert steps["reread_s"].seed_note == "" and steps["decode_step_s"].seed_note == ""


def test_decode_step_with_kv_is_the_larger_of_compute_and_memory():
    step = {s.key: s for s in worked_example(decodes=1000, context=1, budgets=(2000,)).steps}
    assert step["decode_step_s"].value == pytest.approx(1000 * 16e9 / 400e12)   # 40 ms: compute


def test_a_mixture_of_experts_prices_flops_by_its_active_params_and_reads_every_weight():
    """Mixtral 8x7B: each token runs through 2 of 8 experts (12.9 B active of 46.7 B), while every
    expert's weights are read. On a B200 a 293-token prompt is then memory-bound, as the
    simulation's simple mode prices it; FLOPs from all 46.7 B called it compute-bound and 0.25%
    slower than the run."""
    model, gpu = get_model("mixtral-8x7b"), get_gpu("b200")
    inputs = dict(params=model.params, active_params=model.active_params,
                  bytes_per_param=model.weight_bytes_per_param, peak_tflops=gpu.peak_flops / 1e12,
                  bandwidth_tbps=gpu.bandwidth / 1e12, decodes=1, prompt=293, budgets=(3,))
    j = worked_example(**inputs).to_json()
    assert j["flops_per_token"] == 2 * model.active_params
    assert j["weight_bytes"] == model.params * model.weight_bytes_per_param
    cost = CostModel(gpu, model, "simple")
    one_prompt = Workload(np.zeros(1), np.array([293]), np.array([1]), np.array([False]))
    run = simulate(one_prompt, get_policy("vllm-v0"), cost, budget=8192)
    assert j["unchunked_prefill_s"] == pytest.approx(float(run.duration_s[0]), rel=1e-9)
    with pytest.raises(InputError, match="active params"):
        worked_example(**{**inputs, "active_params": 2 * model.params})


# --- the last chunk, priced in a cost mode ----------------------------------------------------
def _cost(gpu: str, mode: str, model: str = "llama-3.1-8b") -> CostModel:
    return CostModel(get_gpu(gpu), get_model(model), mode)


def test_a_ragged_last_chunk_computes_whole_tiles_in_the_calibrated_mode():
    """8,192 tokens in chunks of 946: eight full ones leave 624; with the 64 decodes, 688 tokens
    compute ⌈688 / 64⌉ × 64 = 704 rows, 16 empty."""
    lc = last_chunk(_cost("h100-sxm", "calibrated"), 64, 4000, 8192, 1010)
    assert (lc.chunk, lc.chunks, lc.last) == (946, 9, 624)
    assert (lc.final.tokens, lc.final.rows, lc.final.wasted_rows) == (688, 704, 16)
    assert 0 < lc.final.wasted_s < lc.final.time_s < lc.full.time_s
    values = {s.key: s.value for s in lc.steps}
    assert values["last_rows"] == 704 and values["last_empty_rows"] == 16
    assert values["last_iteration_s"] == lc.final.time_s
    assert values["full_iteration_s"] == lc.full.time_s


def test_the_last_chunk_in_a_mode_without_tiles_and_without_room():
    lc = last_chunk(_cost("illustrative", "simple", "dense-8b"), 64, 4000, 8192, 576)
    assert (lc.chunks, lc.last, lc.final.rows, lc.final.wasted_rows) == (16, 512, 576, 0)
    assert lc.final.time_s == pytest.approx(23.04e-3, rel=1e-3)   # the article's iteration
    assert "no tiles" in {s.key: s for s in lc.steps}["last_rows"].formula
    whole = last_chunk(_cost("illustrative", "simple", "dense-8b"), 64, 4000, 100, 576)
    assert (whole.chunks, whole.last, whole.full) == (1, 100, None)
    assert last_chunk(_cost("illustrative", "simple", "dense-8b"), 64, 4000, 8192, 64) is None
