"""Sarathi-Serve's figures reproduced (sim/studies/reproduce.py): every paper figure is stated
once with its source and shipped beside the lab's; the shipped figures are what the code computes
now (a rerun lands within the stated tolerance, the exact scenarios to the digit); a setup the lab
cannot express carries no number; the setups are the artifact's."""

import json

import numpy as np
import pytest

from sim.errors import InputError
from sim.serving.length_traces import sharegpt_trace
from sim.studies import reproduce as rp
from sim.studies.capacity import SLO_PRESETS

SHIPPED = rp.load_shipped()
BY_KEY = {(r.scenario, r.metric): r for r in SHIPPED.rows}

# The figures to reproduce, as the paper and its artifact state them (docs/sources.md,
# "Sarathi-Serve (OSDI 2024)"): capacity ratios, batch times (s), chunking overheads, Table 4 (s).
PAPER_FIGURES = {
    "mistral-7b-strict": [3.5], "mistral-7b-relaxed": [2.6], "yi-34b-strict": [3.7],
    "yi-34b-relaxed": [1.65], "yi-34b-strict-orca": [4.0],
    "batch-times": [68.12e-3, 217.65e-3, 217.24e-3],
    "chunking-overhead": [1.1522, 1.1746, 1.1889, 1.2022, 1.1165, 1.1095],
    "ablation": [0.53, 0.68, 1.04, 0.17, 0.76, 0.14],
    # DistServe's opening example: 10 requests/s on 3 GPUs against 1.6 on one, per GPU
    "distserve-example": [10 / 3 / 1.6],
}


def test_every_paper_figure_is_shipped_beside_the_labs_with_its_source():
    shipped = {}
    for r in SHIPPED.rows:
        shipped.setdefault(r.scenario, []).append(r.paper)
        assert r.source and r.note
        assert r.ratio == (None if r.simulated is None else pytest.approx(r.simulated / r.paper))
    assert shipped == PAPER_FIGURES
    assert list(rp.SCENARIOS) == list(PAPER_FIGURES)


def test_the_shipped_file_says_how_it_was_made():
    assert SHIPPED.command == "python -m benchmarks.reproduce"
    assert SHIPPED.commit and SHIPPED.effort == rp.FULL.describe()


@pytest.mark.parametrize("name", ["batch-times", "chunking-overhead", "ablation"])
def test_the_exact_scenarios_ship_what_the_code_computes_now(name):
    """These fit any budget whole, so their shipped rows must be today's, digit for digit: a
    change to the cost model or the policies without `python -m benchmarks.reproduce` fails."""
    assert [r.to_json() for r in rp.reproduce(name)] == \
        [r.to_json() for r in SHIPPED.rows if r.scenario == name]


@pytest.mark.slow   # a capacity search or whole runs measured: make test runs it
def test_a_capacity_rerun_lands_within_the_stated_tolerance_of_the_shipped_figure():
    """At a quarter of the requests and a coarser bisection, the ratio stays within
    RERUN_TOLERANCE of the one shipped at the paper's 2,048 requests."""
    (rerun,) = rp.reproduce("mistral-7b-relaxed", rp.RERUN)
    shipped = BY_KEY["mistral-7b-relaxed", rerun.metric].simulated
    assert abs(rerun.simulated / shipped - 1) <= rp.RERUN_TOLERANCE
    assert "512 requests a run" in rerun.note and "with none" not in rerun.note


@pytest.mark.slow   # a capacity search or whole runs measured: make test runs it
def test_at_full_effort_the_note_states_the_ratio_with_no_and_with_high_overhead():
    """The overhead moves the capacity ratio most: the note gives the ratio searched again at
    each end of OVERHEAD_SPAN_S (here on a small workload, to keep the test quick)."""
    small = rp.Effort(requests=256, rel_tol=0.05, overhead_span=True)
    (r,) = rp.capacity_rows("mistral-7b-strict", small)
    setup = rp.CAPACITY["mistral-7b-strict"]
    low, high = (rp.capacity_ratio("mistral-7b-strict", rp.cost_model(setup.model, setup.tp, s),
                                   small)[2] for s in rp.OVERHEAD_SPAN_S)
    assert f": {low:.2f}x with none, {high:.2f}x at 10 ms;" in r.note
    assert len({f"{x:.2f}" for x in (low, r.simulated, high)}) == 3   # 4 ms is neither end
    assert all("with none" in r.note for r in SHIPPED.rows if r.scenario in rp.CAPACITY)


def test_the_chunking_only_ablation_is_stated_as_not_expressible_not_faked():
    rows = [r for r in SHIPPED.rows if r.metric.startswith("chunked prefills only")]
    assert len(rows) == 2
    assert all(r.simulated is None and r.ratio is None and "not expressible" in r.note
               for r in rows)
    assert rows[0].shown(rows[0].simulated) == rp.NOT_EXPRESSIBLE


def test_the_batches_are_the_artifacts():
    """table-2: 4 decodes; 1,021 prompt tokens + 3 decodes; one whole 1,024-token prompt."""
    decode, hybrid, prefill = (batch for _, batch, _ in rp.BATCH_TIMES)
    assert (decode.decode_tokens, decode.prefill_tokens) == (4, 0)
    assert (hybrid.decode_tokens, hybrid.prefill_tokens, hybrid.tokens) == (3, 1021, 1024)
    assert (prefill.decode_tokens, prefill.prefill_tokens) == (0, 1024)
    assert prefill.chunks[0].last and not hybrid.chunks[0].last


def test_chunked_prefill_sums_every_chunk_and_costs_more_than_one_piece():
    cost = rp.cost_model(*rp.YI_TP2)
    whole = rp.prefill_seconds(cost, 2047, 2047)
    in_chunks = rp.prefill_seconds(cost, 2047, 512)   # 512 + 512 + 512 + 511
    assert in_chunks > whole
    assert in_chunks > 4 * cost.overhead_s + whole * 0.9   # four iterations, each its overhead


def test_the_capacity_setups_are_the_artifacts_configs():
    """figure-5-6/*.yml: Sarathi-Serve chunk 512 (strict) / 2,048 (relaxed) at batch 128; vLLM
    at batch 128 and 8,192 batched tokens; Orca at batch 16; on A100 80GB PCIe, TP2 for Yi."""
    for name, s in rp.CAPACITY.items():
        assert s.max_seqs == 128 and s.baseline_budget == 8192
        assert s.budget == (512 if "strict" in name else 2048)
        assert s.baseline_max_seqs == (16 if s.baseline == "orca" else 128)
        assert s.tp == (2 if s.model == "yi-34b" else 1)
    assert rp.CAPACITY["mistral-7b-strict"].model == "mistral-7b-instruct-v0.2"
    assert [s.tbt_slo_s for s in rp.CAPACITY.values()] == [0.1, 0.5, 0.2, 1.0, 0.2]
    (ours, _, ours_limits), (_, _, orca_limits) = rp.capacity_runs(rp.CAPACITY["yi-34b-strict-orca"])
    assert ours.name == "sarathi" and ours_limits.max_seqs == 128 and orca_limits.max_seqs == 16
    assert rp.cost_model("yi-34b", 2).gpu.name == "A100 80GB PCIe"


def test_the_trace_workload_replays_trace_rows_shuffled_at_the_rate_asked():
    prompt, output = sharegpt_trace()
    rows = set(zip(prompt.tolist(), output.tolist()))
    w = rp.trace_workload(300, 2.0, seed=5)
    assert set(zip(w.prompt.tolist(), w.output.tolist())) <= rows
    assert not np.array_equal(w.prompt, prompt[:300])          # shuffled, not the file's head
    again = rp.trace_workload(300, 4.0, seed=5)
    np.testing.assert_array_equal(again.prompt, w.prompt)      # same seed: same requests
    np.testing.assert_allclose(again.arrival_s * 2, w.arrival_s)  # twice the rate: half the gaps


def test_an_unknown_scenario_names_the_known_ones():
    with pytest.raises(InputError, match="choose one of mistral-7b-strict"):
        rp.reproduce("nope")


def test_the_results_file_reads_back_what_was_written(tmp_path):
    path = tmp_path / "reproduce.json"
    path.write_text(rp.shipped_json(list(SHIPPED.rows), "a command", "abc123"))
    again = rp.load_shipped(path)
    assert again.rows == SHIPPED.rows and (again.command, again.commit) == ("a command", "abc123")


def test_an_unreadable_results_file_says_how_to_regenerate_it(tmp_path):
    bad = tmp_path / "reproduce.json"
    bad.write_text(json.dumps({"rows": []}))
    with pytest.raises(InputError, match="python -m benchmarks.reproduce"):
        rp.load_shipped(bad)


def test_each_slo_presets_paper_ratio_is_the_one_the_shipped_rows_carry():
    """One figure per SLO: the Capacity page's preset and the Fidelity page's row read the same
    ratio and the same citation."""
    for name, preset in SLO_PRESETS.items():
        shipped = BY_KEY[name, "capacity ratio Sarathi-Serve / vLLM V0"]
        assert (shipped.paper, shipped.source) == (rp.CAPACITY[name].paper_ratio,
                                                   rp.CAPACITY[name].source)
        assert shipped.paper == preset.paper.ratio and preset.paper.where in shipped.source
        assert rp.CAPACITY[name].tbt_slo_s == preset.tbt_slo_s


@pytest.mark.parametrize("values, said", [
    ([0.19517, 0.19740, 0.20166], "which range 0.195-0.202 s (3% of their mean): the random draw "
                                  "barely moves this figure"),
    ([0.50, 0.64, 1.05], "which range 0.50-1.05 s (75% of their mean): one run of 128 requests, "
                         "as the paper's, is a noisy figure"),
    ([0.2, 0.2], "all 0.2 s: the random draw does not move this figure"),
])
def test_a_range_over_the_seeds_has_the_digits_to_tell_its_ends_apart(values, said):
    assert rp.seed_spread(values).startswith(said)
    assert "0.20-0.20" not in rp.seed_spread([0.1952, 0.2017])


def test_distserves_example_compares_per_gpu_goodput_and_says_where_its_rates_differ():
    (row,) = rp.distserve_rows(rp.Effort(requests=128, rel_tol=0.1, overhead_span=False))
    assert row.paper == pytest.approx(2.083, abs=1e-3) and row.unit == "x"
    assert row.simulated > 1                      # the split serves more per GPU
    assert "paper 1.6" in row.note and "paper 10, 3.3" in row.note
    assert "72.1 ms" in row.note and "31.5 ms" in row.note   # DistServe's fitted iterations
    assert "419 MB over NVLink 3 (A100) in 1.401 ms" in row.note   # 512 x 800 KiB / 300 GB/s
    assert rp.DISTSERVE_SLO.ttft_s == 0.4 and rp.DISTSERVE_SLO.tpot_s == 0.04
    assert rp.DISTSERVE_SLO.share == 0.9
