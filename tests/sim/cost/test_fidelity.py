"""The calibrated cost mode, tensor parallelism and `python -m sim validate`."""

import json
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cost.calibration import A100, HOPPER, calibration_for
from sim.cost.iteration import Chunk, Composition, CostModel
from sim.cost.validation import (
    PUBLISHED_COLUMNS,
    TARGET_MAX,
    TARGET_MEDIAN,
    fit_gemms,
    gemm_work,
    load_measurements,
    published_row,
    validate,
)
from sim.errors import InputError
from sim.presets.hardware import GPUS, custom_gpu, get_gpu
from sim.presets.models import MODELS, custom_model, get_model
from sim.serving.engine import RESERVE_FRACTION, kv_capacity_tokens
from sim.serving.policies import POLICIES
from sim.units import fmt_bytes
from tests.support.cli import cli

POLICY_OVERHEADS = tuple(p.overhead for p in POLICIES.values())

REAL_GPUS = sorted(set(GPUS) - {"illustrative"})


@pytest.fixture(scope="module")
def report():
    return validate()


# --- the calibration against the shipped measurements ---------------------------------------------
def test_calibrated_error_on_held_out_points_meets_the_target(report):
    held = report["summary"]["calibrated"]["held_out"]
    print(f"calibrated, held out: median {held['median_abs_error']:.1%}, "
          f"max {held['max_abs_error']:.1%} over {held['points']} points")
    assert held["points"] == 979   # all TP > 1 rows and 3 of every 4 TP=1 token counts
    assert held["median_abs_error"] <= TARGET_MEDIAN
    assert held["max_abs_error"] <= TARGET_MAX
    assert report["target"]["met"]


def test_every_tp_shape_is_held_out_and_predicted(report):
    fitted = [p for p in report["points"] if not p["held_out"]]
    assert {p["tp"] for p in fitted} == {1}
    for tp in (2, 4, 8):
        s = report["summary"]["calibrated"][f"held_out_tp{tp}"]
        assert s["points"] == 261 and s["max_abs_error"] <= TARGET_MAX


def test_roofline_is_never_slower_than_a_measured_point(report):
    points = report["points"]
    assert len(points) == len(load_measurements().tokens) == 1044
    assert all(p["roofline_s"] <= p["measured_s"] for p in points)
    assert report["roofline_is_lower_bound"]


def test_calibrated_is_much_closer_than_the_roofline(report):
    summary = report["summary"]
    assert summary["roofline"]["held_out"]["median_abs_error"] > 0.25   # the 1.3-1.9x gap
    assert summary["calibrated"]["held_out"]["median_abs_error"] < 0.08


def test_refit_reproduces_the_shipped_parameters():
    fitted, losses = fit_gemms()
    assert fitted.gemm_tile == A100.gemm_tile == min(losses, key=losses.get)
    for name in ("gemm_efficiency", "memory_efficiency", "ridge_softness", "kernel_floor_s"):
        assert getattr(fitted, name) == pytest.approx(getattr(A100, name), rel=1e-3), name


def test_published_whole_iterations_are_closer_calibrated(report):
    distserve = [c for c in report["published"] if c["source"].startswith("DistServe")]
    assert len(distserve) == 3
    for c in distserve:
        assert c["roofline"] < c["measured"]
        assert abs(c["calibrated_error"]) < abs(c["roofline_error"])
        assert abs(c["calibrated_error"]) <= 0.15, c["what"]


def test_per_gemm_work_adds_up_to_the_cost_models_linear_component():
    model = get_model("llama-2-7b")
    for tp in (1, 2, 4, 8):
        cost = CostModel(get_gpu("a100-80gb"), model, tp=tp)
        flops, nbytes = cost.component_work(300, 0, 0, 0)[0]
        gemms = gemm_work(model, tp, 300)
        assert sum(f for f, _ in gemms) * model.layers == pytest.approx(flops, rel=1e-12)
        assert sum(b for _, b in gemms) * model.layers == pytest.approx(nbytes, rel=1e-12)


# --- properties of the calibrated mode --------------------------------------------------------------
def _valid_tps(gpu, model):
    return [n for n in (1, 2, 4, 8) if model.heads % n == 0
            and (model.kv_heads % n == 0 or n % model.kv_heads == 0)
            and (n == 1 or gpu.interconnect_bandwidth)]


@st.composite
def setups(draw):
    gpu = get_gpu(draw(st.sampled_from(REAL_GPUS)))
    model = get_model(draw(st.sampled_from(sorted(MODELS))))
    return gpu, model, draw(st.sampled_from(_valid_tps(gpu, model)))


chunks = st.builds(Chunk, st.integers(1, 9000), st.integers(0, 20000), st.booleans())
compositions = st.builds(
    Composition, st.lists(st.integers(1, 30000), max_size=40).map(tuple),
    st.lists(chunks, max_size=3).map(tuple)).filter(lambda c: c.tokens > 0)


@settings(max_examples=80, deadline=None)
@given(setups(), compositions)
def test_calibrated_time_is_at_least_the_roofline_and_its_factors_explain_the_gap(setup, comp):
    gpu, model, tp = setup
    calibrated = CostModel(gpu, model, "calibrated", tp=tp).price(comp)
    ideal = CostModel(gpu, model, "roofline", tp=tp).price(comp)
    assert calibrated.time_s >= ideal.time_s
    same_overhead = CostModel(gpu, model, "calibrated", overhead_s=0.0, tp=tp).price(comp)
    assert same_overhead.time_s >= ideal.time_s
    assert all(f.added_s >= -1e-15 for f in calibrated.factors)
    assert sum(f.added_s for f in calibrated.factors) == pytest.approx(
        calibrated.time_s - ideal.time_s, rel=1e-9, abs=1e-15)
    assert ("all-reduce" in [f.name for f in calibrated.factors]) == (tp > 1)


@settings(max_examples=40, deadline=None)
@given(setups(), compositions, st.sampled_from(POLICY_OVERHEADS))
def test_the_engines_fast_path_matches_the_breakdown(setup, comp, engine):
    gpu, model, tp = setup
    cost = CostModel(gpu, model, "calibrated", tp=tp, engine=engine)
    priced = cost.price(comp)
    fast = cost.time(*cost.aggregates(comp))
    assert fast == pytest.approx((priced.compute_s, priced.memory_s, priced.time_s,
                                  priced.overhead_s), rel=1e-12, abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(REAL_GPUS), st.sampled_from(sorted(MODELS)), st.integers(1, 8191),
       st.integers(0, 8192), st.integers(0, 64))
def test_calibrated_time_never_falls_as_tokens_grow(gpu_id, model_id, tokens, prefix, decodes):
    cost = CostModel(get_gpu(gpu_id), get_model(model_id), "calibrated")
    times = [cost.price(Composition((2000,) * decodes, (Chunk(n, prefix),))).time_s
             for n in (tokens, tokens + 1)]
    assert times[1] >= times[0]


def test_the_step_is_at_the_tile_boundary():
    """Compute-bound chunks cost the same inside a tile and jump one token past it."""
    cost = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"), "calibrated", overhead_s=0.0)
    tile = cost.calibration.gemm_tile

    def time(n):
        return cost.price(Composition(chunks=(Chunk(n),))).time_s

    for boundary in (4 * tile, 8 * tile, 32 * tile):
        jump = time(boundary + 1) - time(boundary)
        inside = time(boundary + tile) - time(boundary + 1)
        assert jump > 5 * inside > 0
    step = time(257) / time(256) - 1
    print(f"a 257-token chunk costs {step:+.1%} more than 256 (Sarathi-Serve: +32%)")
    assert 0.1 < step < 0.5
    roofline = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"), "roofline")
    assert roofline.time(257, 0, 0, 0)[2] / roofline.time(256, 0, 0, 0)[2] - 1 < 0.01


def test_padding_rounds_up_to_whole_tiles():
    cal = A100
    assert [cal.padded_tokens(n) for n in (1, 16, 17, 33, 63, 64, 65, 257)] == \
        [16, 16, 32, 64, 64, 64, 128, 320]


def test_calibrated_mode_refuses_the_illustrative_gpu():
    with pytest.raises(InputError, match="illustrative"):
        CostModel(get_gpu("illustrative"), get_model("dense-8b"), "calibrated")


# --- tensor parallelism ----------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(GPUS)), st.sampled_from(sorted(MODELS)),
       st.sampled_from(("simple", "roofline", "calibrated")), compositions)
def test_tp1_is_the_untensored_model(gpu_id, model_id, mode, comp):
    gpu, model = get_gpu(gpu_id), get_model(model_id)
    if mode == "calibrated" and gpu_id == "illustrative":
        return
    one, plain = CostModel(gpu, model, mode, tp=1), CostModel(gpu, model, mode)
    assert one.price(comp) == plain.price(comp)
    assert one.weight_bytes == model.weight_bytes
    assert one.kv_bytes_per_token == model.kv_bytes_per_token
    assert one.linear_flops_per_token == 2.0 * model.layers * model.active_layer_params
    assert one.allreduce_time(1000, True) == 0.0
    free = gpu.memory_bytes * (1 - RESERVE_FRACTION) - model.weight_bytes
    if free > 0:
        assert kv_capacity_tokens(one) == int(free // model.kv_bytes_per_token)


@settings(max_examples=40, deadline=None)
@given(setups(), compositions)
def test_tp_splits_the_work_n_ways(setup, comp):
    gpu, model, tp = setup
    whole = CostModel(gpu, model, tp=1).price(comp)
    share = CostModel(gpu, model, tp=tp).price(comp)
    for name in ("linear", "attention", "lm_head"):
        assert share.components[name].flops * tp == pytest.approx(whole.components[name].flops,
                                                                   rel=1e-12)


def test_allreduce_is_the_ring_formula():
    """Llama-3.1-8B on 2 H100s, 1,000 tokens: 2 all-reduces x 32 layers of 1000 x 4096 x 2 bytes,
    each 2(N-1)/N x bytes / 450 GB/s on the roofline."""
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), tp=2)
    each = 2 * (2 - 1) / 2 * 1000 * 4096 * 2 / 450e9
    assert cost.allreduce_time(1000, False) == pytest.approx(64 * each, rel=1e-12)
    calibrated = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), "calibrated", tp=2)
    cal = calibrated.calibration
    assert calibrated.allreduce_time(1000, True) == pytest.approx(
        64 * (each / cal.link_efficiency + cal.allreduce_latency_s), rel=1e-12)


def test_tp_makes_a_70b_model_fit_and_shards_its_kv():
    gpu, model = get_gpu("h100-sxm"), get_model("llama-3.1-70b")
    with pytest.raises(InputError, match="do not fit"):
        kv_capacity_tokens(CostModel(gpu, model))
    four = CostModel(gpu, model, tp=4)
    free = gpu.memory_bytes * (1 - RESERVE_FRACTION) - model.weight_bytes / 4
    assert kv_capacity_tokens(four) == int(free // (model.kv_bytes_per_token / 4))
    sixteen = CostModel(gpu, get_model("llama-3.1-8b"), tp=16)   # 8 KV heads: one each, replicated
    assert sixteen.kv_bytes_per_token == get_model("llama-3.1-8b").kv_bytes_per_token / 8


@pytest.mark.parametrize("mode", ["roofline", "calibrated"])
def test_kernels_time_is_the_time_without_all_reduce_and_overhead(mode):
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), mode, tp=2)
    composition = Composition((4000,) * 64, (Chunk(512),))
    c = cost.price(composition)
    parts = cost.component_work(*cost.aggregates(composition))
    tokens, _, _, rows = cost.aggregates(composition)
    kernels = cost.calibrated_time(parts, tokens, rows)[2] if mode == "calibrated" else \
        max(c.compute_s, c.memory_s)
    assert c.allreduce_s > 0 and c.kernels_s == pytest.approx(kernels, rel=1e-12)
    if mode == "calibrated":      # soft ridge and floors: more than the larger of the sums
        assert c.kernels_s > max(c.compute_s, c.memory_s)


def test_weights_that_do_not_fit_are_named_in_readable_units():
    # 6e14 parameters: 1.2 PB of weights, under custom_model's 1e15-parameter ceiling
    huge = custom_model(layers=1000, hidden=100_000, heads=32, kv_heads=8, head_dim=128,
                        intermediate=2_000_000, vocab=128256)
    cost = CostModel(get_gpu("h100-sxm"), huge)
    with pytest.raises(InputError) as refused:
        kv_capacity_tokens(cost)
    message = str(refused.value)
    assert f"weights ({fmt_bytes(cost.weight_bytes)}) do not fit" in message
    assert "PB" in message and "e+" not in message and ".0 GB" not in message
    assert "H100 SXM memory (85.5 GB less a 10% reserve)" in message


@pytest.mark.parametrize("tp, message", [(0, "tp"), (-1, "tp"), (math.nan, "finite"), (3, "heads"),
                                         (2.5, "whole"), ("two", "number"), (128, "tp")])
def test_bad_tp_is_refused_with_a_message(tp, message):
    with pytest.raises(InputError, match=message):
        CostModel(get_gpu("h100-sxm"), get_model("dense-8b"), tp=tp)


def test_tp_needs_a_link():
    with pytest.raises(InputError, match="no GPU-to-GPU link preset.*pick a GPU with a link preset"):
        CostModel(get_gpu("illustrative"), get_model("dense-8b"), tp=2)
    # a custom GPU's link is a field the user can set: the message names it
    with pytest.raises(InputError, match=r"set its GPU-to-GPU link bandwidth \(custom GPU field\)"):
        CostModel(custom_gpu(400, 3, 80, link_gbps=0), get_model("dense-8b"), tp=2)
    assert CostModel(custom_gpu(400, 3, 80, link_gbps=450), get_model("dense-8b"), tp=2).tp == 2


def test_published_rows_are_shared_by_the_cli_and_the_page(report, capsys):
    from cli import validate as validate_command
    assert validate_command.published_row is published_row     # one formatter, in sim.cost.validation
    rows = [published_row(c) for c in report["published"]]
    assert all(len(r) == len(PUBLISHED_COLUMNS) for r in rows)
    step = rows[-1]                                # the Sarathi-Serve ratio: a %, error in points
    assert step[2] == "+32.0%" and step[-1].endswith(" points")
    _, out, _ = cli("validate", "--summary", "--wide", capsys=capsys)   # cells unwrapped
    assert all(r[1] in out and r[-1] in out for r in rows)


# --- the CLI -----------------------------------------------------------------------------------------
def test_validate_json_has_the_documented_keys(capsys):
    code, out, _ = cli("validate", "--json", capsys=capsys)
    assert code == 0
    payload = json.loads(out)
    assert set(payload) == {"data", "calibration", "target", "roofline_is_lower_bound", "summary",
                            "points", "published"}
    assert set(payload["summary"]) == {"roofline", "calibrated"}
    assert set(payload["summary"]["calibrated"]["held_out"]) == {"points", "median_abs_error",
                                                                 "max_abs_error"}
    assert set(payload["points"][0]) == {"tp", "tokens", "held_out", "measured_s", "roofline_s",
                                         "roofline_error", "calibrated_s", "calibrated_error"}
    assert len(payload["points"]) == 1044


def test_validate_text_reports_median_and_max(capsys):
    code, out, _ = cli("validate", "--summary", capsys=capsys)
    assert code == 0
    assert "held_out" in out and "median |error|" in out and "met" in out


def test_cost_calibrated_with_tp_2(capsys):
    code, out, _ = cli("cost", "--gpu", "a100-80gb", "--model", "llama-3.1-8b", "--mode",
                           "calibrated", "--tp", "2", "--decodes", "32", "--context", "2000",
                           "--chunk", "257", "--json", capsys=capsys)
    assert code == 0
    payload = json.loads(out)
    assert payload["tp"] == 2 and payload["allreduce_s"] > 0
    assert payload["factors"][-1]["name"] == "per-iteration overhead"
    _, roofline_out, _ = cli("cost", "--gpu", "a100-80gb", "--model", "llama-3.1-8b",
                                 "--tp", "2", "--decodes", "32", "--context", "2000", "--chunk",
                                 "257", "--json", capsys=capsys)
    roofline = json.loads(roofline_out)
    assert payload["time_s"] > roofline["time_s"]
    assert "factors" not in roofline


def test_simulate_accepts_tp_and_the_calibrated_mode(capsys):
    code, out, _ = cli("simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--tp",
                           "4", "--mode", "calibrated", "--decodes", "8", "--prompt", "2048",
                           "--decode-output", "16", "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["iterations"] > 0


@pytest.mark.parametrize("tp", ["0", "-1", "nan", "3"])
def test_cli_bad_tp_exits_2_naming_it(tp, capsys):
    code, out, err = cli("cost", "--gpu", "h100-sxm", "--chunk", "100", "--tp", tp, capsys=capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "tp" in err and err.count("\n") == 1


def test_cli_calibrated_on_the_illustrative_gpu_exits_2(capsys):
    code, _, err = cli("cost", "--mode", "calibrated", "--chunk", "100", capsys=capsys)
    assert code == 2 and "illustrative" in err


def test_a_gpu_is_calibrated_by_its_family_and_one_without_says_so():
    """A preset added with its chip family gets that family's calibration (a Hopper part gets
    FlashAttention-3's attention, not the A100's) named for it; a family with none, or a custom
    GPU, gets the A100 fractions with a provenance that says there is no calibration of its own
    (what the fidelity page lists for every preset)."""
    h20 = replace(GPUS["h100-sxm"], id="h20", name="H20", peak_flops=148e12)
    cal = calibration_for(h20)
    assert cal.attention_efficiency == HOPPER.attention_efficiency != A100.attention_efficiency
    assert "H20 datasheet" in cal.provenance
    assert calibration_for(GPUS["a100-pcie-80gb"]) is A100
    for gpu in (replace(h20, architecture="Rubin"), custom_gpu(500, 4, 96)):
        cal = calibration_for(gpu)
        assert cal.attention_efficiency == A100.attention_efficiency
        assert cal.provenance.startswith("no calibration for its family")
        assert gpu.name in cal.provenance
