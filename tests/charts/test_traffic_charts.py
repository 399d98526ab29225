"""charts.traffic: the frames keep what the pages say they keep, every figure compiles with
vl-convert, and a page's chart data stays under a megabyte even for long runs."""

import json
import re
from dataclasses import replace

import numpy as np
import pytest
import vl_convert as vlc

from charts import capacity as capacity_charts
from charts import memory as memory_charts
from charts import traffic as T
from charts.frames import bin_width_s, iterations_frame
from charts.theme import Look
from sim.serving.metrics import request_times, summarize, token_gaps
from sim.serving.policies import POLICIES
from sim.serving.workloads import poisson
from sim.studies.sweep import OVERHEAD_SHARE
from tests.support.charts import SEED, fast_first, serve, traffic_figures

MAX_PAGE_DATA = 1_000_000   # bytes of chart data per page (the app's speed target)


@pytest.fixture(scope="module")
def long_run():
    """Every policy on 1,000 busy ShareGPT-like requests: tens of thousands of iterations and
    about half a million tokens each."""
    return serve(poisson(1000, 6, lengths="sharegpt", seed=1), tuple(POLICIES))


# --- frames ----------------------------------------------------------------------------------
def test_timeline_keeps_every_iteration_and_every_stall(long_run, seed_burst):
    frames = T.timeline_frame(long_run)
    bars = frames.bars
    assert len(bars) <= 3 * T.TIMELINE_BARS
    for name, trace in long_run.items():
        lane = bars[bars.policy == name]
        assert lane.iterations.sum() == trace.iterations
        assert lane.prefill_tokens.sum() == trace.prefill_tokens.sum()
        assert lane.longest_ms.max() == pytest.approx(trace.duration_s.max() * 1e3)
        assert frames.bin_ms[name] is not None                  # thinned, and it says so
    short = T.timeline_frame(seed_burst)
    assert short.bin_ms == {"vllm-v0": None, "sarathi": None}
    stalls = short.bars[short.bars.kind == "prefill only (decodes wait)"]
    assert set(stalls.policy) == {"vllm-v0"} and len(stalls) == 10
    assert stalls.longest_ms.round(2).tolist() == [327.68] * 10


def test_timeline_bins_are_the_ones_frames_draws(long_run, seed_burst):
    """The bin a lane says it is drawn in is `charts.frames.bin_width_s`, the width its bars
    were merged at, also for a run of zero length (its 1 s fallback, not 0 ms)."""
    frames = T.timeline_frame(long_run)
    per_lane = T.TIMELINE_BARS // len(long_run)
    for name, trace in long_run.items():
        assert frames.bin_ms[name] == bin_width_s(trace.start_s, trace.end_s, per_lane) * 1e3
    trace = seed_burst["sarathi"]
    assert trace.iterations > 50
    instant = replace(trace, start_s=np.zeros(trace.iterations), end_s=np.zeros(trace.iterations))
    assert T.timeline_frame({"sarathi": instant}, total_bars=50).bin_ms == {"sarathi": 1e3 / 50}


def test_cdf_points_are_exact_empirical_cdf_points(long_run):
    gaps = {n: token_gaps(t)[0] for n, t in long_run.items()}
    frame = T.cdf_frame(gaps, 1e3, points=50)
    for name, values in gaps.items():
        curve = frame[frame.policy == name]
        assert len(curve) <= 50
        ranked = np.sort(values) * 1e3
        assert curve.value.iloc[-1] == ranked[-1] and curve.fraction.iloc[-1] == 1.0
        assert np.all(np.diff(curve.fraction) > 0) and np.all(np.diff(curve.value) >= 0)
        # each drawn point (x, F) has exactly F of the values at or below x's rank
        rank = np.rint(curve.fraction * len(values)).astype(int) - 1
        assert np.allclose(ranked[rank], curve.value)


def test_tail_points_are_exact_and_the_tail_is_drawn_in_detail(long_run):
    """P(X >= x) at each drawn point is the exact share of gaps at least x; a quarter of the
    points or more lie in the last 1% of the gaps, where a freeze among thousands of gaps is."""
    gaps = {n: token_gaps(t)[0] for n, t in long_run.items()}
    frame = T.tail_frame(gaps, 1e3, points=60)
    for name, values in gaps.items():
        curve = frame[frame.policy == name]
        ranked = np.sort(values) * 1e3
        n = len(ranked)
        assert len(curve) <= 60 and curve.value.iloc[-1] == ranked[-1]
        assert curve.share.iloc[-1] == 1 / n and curve.share.iloc[0] == 1.0
        assert np.all(np.diff(curve.share) < 0)
        rank = np.rint(n - curve.share * n).astype(int)
        assert np.allclose(ranked[rank], curve.value)
        assert (curve.share <= 0.01).sum() >= len(curve) / 4


def test_split_adds_up_to_each_requests_latency(seed_burst):
    split = T.split_frame(seed_burst)
    assert split.total == 10 and split.every == 1
    for name, trace in seed_burst.items():
        times = request_times(trace)
        rows = split.requests[split.requests.policy == name]
        ids = rows.request.to_numpy()
        assert np.allclose(rows.queue_s + rows.prefill_s, times.ttft_s[ids])
        assert np.allclose(rows.queue_s + rows.prefill_s + rows.decode_s,
                           times.finish_s[ids] - trace.arrival_s[ids])
    thinned = T.split_frame(seed_burst, max_requests=4)
    assert thinned.every == 3 and len(thinned.requests) == 2 * 4
    assert thinned.means.equals(split.means)                    # means use every request


def test_metrics_table_matches_summarize(seed_burst):
    table = T.metrics_frame(seed_burst)
    m = summarize(seed_burst["vllm-v0"])
    assert list(table.index[:2]) == ["largest gap (TBT max)", "stalls over 100 ms"]
    assert table.loc["largest gap (TBT max)", "vllm-v0"] == "3.28 s" == f"{m.tbt_s.max:.3g} s"
    assert table.loc["stalls over 100 ms", "sarathi"] == "0 (0 requests)"
    assert "TBT max" not in table.index                       # said once, in the first row
    assert table.loc["iterations", "sarathi"] == f"{seed_burst['sarathi'].iterations:,}"
    assert table.loc["throughput", "vllm-v0"] == f"{m.throughput_tokens_per_s:,.0f} tokens/s"
    assert table.loc["output tokens", "sarathi"] == f"{10 * 32 + 64 * 256:,}"
    assert "10 new requests" in table.loc["TTFT p99", "computed from"]


def test_frontier_marks_the_regimes_the_defaults_and_the_pick(frontier):
    rows = frontier.set_index("budget")
    assert rows.loc[576, "recommended"] and rows.recommended.sum() == 1
    assert rows.loc[128, "regime"].startswith("overhead-dominated")
    assert rows.loc[16384, "regime"].startswith("no split")
    assert rows.loc[576, "regime"] == "chunking at work"
    assert rows.loc[8192, "label"] == "8,192 (vLLM & SGLang default)"
    assert rows.loc[128, "regime"] == \
        f"overhead-dominated: t(1 token) / t(budget) > {OVERHEAD_SHARE:g}"


def test_kv_keeps_the_peak_and_every_preemption(memory_bound):
    cost, traces = memory_bound
    frame = memory_charts.kv_frame(traces, cost.kv_bytes_per_token, points=40)
    for name, trace in traces.items():
        curve = frame[frame.policy == name]
        assert curve.kv_tokens.max() == trace.kv_used_tokens.max()
        assert curve.preemptions.sum() == trace.preemptions.sum()
        assert curve.iterations.sum() == trace.iterations
    assert frame[frame.policy == "vllm-v1"].preemptions.sum() > 0
    # the points are the timeline's bars: same start and iteration count, the most KV in each
    for name, trace in traces.items():
        curve = frame[frame.policy == name]
        bars = iterations_frame(trace, name, 40)
        assert np.array_equal(curve.time_s, bars.start_ms / 1e3)
        assert np.array_equal(curve.iterations, bars.iterations)
        ends = np.r_[bars.iteration[1:], trace.iterations]
        assert curve.kv_tokens.tolist() == [trace.kv_used_tokens[a:b].max()
                                            for a, b in zip(bars.iteration, ends)]


def test_capacity_frame_has_every_run(capacity):
    comparison, curves = capacity
    frame = capacity_charts.capacity_frame(comparison, curves)
    for r in (comparison.policy, comparison.baseline):
        assert (frame.policy == r.policy).sum() == len(r.points) + len(curves[r.policy])
    marks = capacity_charts.capacity_marks(comparison)
    assert list(marks.qps) == [comparison.policy.capacity_qps, comparison.baseline.capacity_qps]


# --- figures compile -------------------------------------------------------------------------
LOOKS = [Look(), Look(presenter=True, dark=True)]


@pytest.mark.parametrize("look", fast_first(LOOKS),
                         ids=lambda look: f"presenter={look.presenter},dark={look.dark}")
def test_every_traffic_figure_compiles_with_vl_convert(seed_burst, frontier, capacity,
                                                       memory_bound, look):
    for name, figure in traffic_figures(seed_burst, look, frontier, capacity, memory_bound).items():
        figure.chart.to_dict(validate=True)
        svg = vlc.vegalite_to_svg(figure.spec())
        assert svg.startswith("<svg") and len(svg) > 5000, name


def test_the_traffic_charts_name_the_policies_in_words(seed_burst, frontier, capacity,
                                                      memory_bound):
    """Legends, axes, headers and panel titles show "Sarathi-Serve", never the key "sarathi"
    (the data keeps the key, a link's)."""
    for name, figure in traffic_figures(seed_burst, Look(), frontier, capacity,
                                        memory_bound).items():
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", vlc.vegalite_to_svg(figure.spec()))
        shown = [t for t in texts if t in POLICIES or t.split(" · ")[0] in POLICIES]
        assert not shown, (name, shown)
        if name in ("timeline", "ttft", "gaps", "split", "capacity"):
            assert any(t.startswith(("Sarathi-Serve", "vLLM V0")) for t in texts), name


def test_the_timeline_zoom_survives_into_the_spec(seed_burst):
    spec = T.traffic_timeline(T.timeline_frame(seed_burst), Look()).spec()
    assert [p["name"] for p in spec["params"]] == [T.ZOOM]
    vega = vlc.vegalite_to_vega(spec)
    assert any(s.get("name", "").startswith(T.ZOOM) for s in vega["signals"])


def test_a_long_run_keeps_each_traffic_page_under_a_megabyte(long_run, frontier, capacity,
                                                             memory_bound):
    """The Traffic page with all five policies on 1,000 ShareGPT-like requests; the Memory page's
    KV chart on the same run."""
    figs = traffic_figures(long_run, Look(), frontier, capacity, (SEED, long_run))
    traffic_page = sum(len(json.dumps(figs[n].spec())) for n in ("timeline", "ttft", "gaps",
                                                                  "split"))
    assert traffic_page < MAX_PAGE_DATA
    assert len(json.dumps(figs["kv"].spec())) < MAX_PAGE_DATA
    assert len(json.dumps(figs["frontier"].spec()) + json.dumps(figs["capacity"].spec())) \
        < MAX_PAGE_DATA
