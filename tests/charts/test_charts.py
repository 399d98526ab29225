"""charts: frames from traces, every figure compiled by vl-convert, data size, exports."""

import io
import itertools
import json
import re
import zipfile

import numpy as np
import pandas as pd
import pytest
import vl_convert as vlc
from PIL import Image

from charts import export, film
from charts.figure import Figure
from charts.frames import (
    MAX_BARS,
    bar_groups,
    callouts_frame,
    decoder_rows,
    iterations_frame,
    new_request_frame,
)
from charts.theme import Look
from charts.timeline import (
    BESIDE_GAP_PX,
    OTHER,
    OVERHEAD,
    OVERHEAD_SHARE,
    PARTS_OF_A_LANE,
    X_TITLE,
    counter_texts,
    view_name,
)
from charts.views import budget_plan, roofline_figures, timeline
from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.metrics import textbook_metrics
from sim.serving.policies import get_policy
from sim.serving.workloads import poisson
from sim.studies.stalls import STALL_S
from tests.support.charts import fast_first, lab_figures, run
from ui.shell.presenter import LANE_SIDE_PX
from ui.shell.scenario import scenario_from

LOOKS = [Look(), Look(presenter=True), Look(dark=True), Look(presenter=True, dark=True)]
MAX_PAGE_DATA = 1_000_000   # bytes of chart data per page (the app's speed target)


@pytest.fixture(scope="module")
def long_run():
    """Thousands of iterations: a 1,000,000-token prompt beside 1,024 decoders (fits on an
    MI300X with Qwen2.5-7B's 56 KiB/token KV), budget 1,536."""
    s = scenario_from({"gpu": "mi300x", "model": "qwen2.5-7b", "prompt": 1_000_000,
                       "decodes": 1024, "context": 100, "budget": 1536})
    return s, run(s, "vllm-v0"), run(s, "sarathi")


# --- frames ----------------------------------------------------------------------------------
def test_iterations_frame_keeps_every_token_and_time(seed, long_run):
    for _, *traces in (seed, long_run):
        for trace in traces:
            frame = iterations_frame(trace, "lane")
            assert frame.decode_tokens.sum() == trace.decode_tokens.sum()
            assert frame.prefill_tokens.sum() == trace.prefill_tokens.sum()
            assert frame.iterations.sum() == trace.iterations
            assert frame.compute_ms.sum() == pytest.approx(trace.compute_s.sum() * 1e3)
            assert len(frame) <= 3 * MAX_BARS


def test_short_runs_get_one_bar_per_iteration(seed):
    _, unchunked, _ = seed
    frame = iterations_frame(unchunked, "lane")
    assert len(frame) == unchunked.iterations
    prefill = frame[frame.prefill_tokens > 0]
    assert list(prefill.prefill_tokens) == [8192]
    assert prefill.duration_ms.iloc[0] == pytest.approx(327.68)
    assert prefill.bound.iloc[0] == "compute"


def test_thinning_never_merges_a_long_iteration():
    start = np.r_[np.arange(1000) * 1.0, 1000.0, np.arange(1000) + 1500.0]
    end = np.r_[np.arange(1000) + 1.0, 1500.0, np.arange(1000) + 1501.0]
    groups = bar_groups(start, end, max_bars=100)
    long = 1000
    assert np.sum(groups == groups[long]) == 1
    assert groups.max() + 1 <= 3 * 100
    assert np.all(np.diff(groups) >= 0)


def _row_times(trace, rows, row):
    """The instants row `row` ticks at, from the trace itself: its decoders' tokens, merged."""
    decoders = np.flatnonzero(trace.prefilled)[row * rows.per_row:(row + 1) * rows.per_row]
    return np.unique(np.concatenate([trace.tokens_of(d) for d in decoders])) * 1e3


def test_every_decoder_is_a_row_and_every_token_a_tick(seed):
    _, unchunked, chunked = seed
    for trace in (unchunked, chunked):
        rows = decoder_rows(trace, "lane")
        assert (rows.rows, rows.per_row, rows.decoders, rows.bin_ms) == (64, 1, 64, None)
        ticks = rows.ticks
        assert ticks.band.nunique() == 1 and (ticks.row0.iloc[0], ticks.row1.iloc[0]) == (0, 64)
        np.testing.assert_allclose(ticks.time_ms, _row_times(trace, rows, 63))
        # every token each decoder emitted after the prompt arrived, none from before
        assert ticks.tokens.sum() == 64 * 256 and ticks.tokens.iloc[0] == 0
        assert ticks.gap_ms.max() == pytest.approx(textbook_metrics(trace)["decode_max_gap_s"] * 1e3)
        np.testing.assert_allclose(ticks.prev_ms.iloc[1:], ticks.time_ms.iloc[:-1])


def test_rows_that_tick_apart_are_bands_of_their_own():
    """vLLM V1 caps the decodes by the budget: 48 of 64 decoders per iteration, in turns."""
    s = scenario_from({"chunked": "vllm-v1", "budget": 48})
    trace = run(s, "vllm-v1")
    rows = decoder_rows(trace, "lane")
    bands = rows.ticks.groupby("band").first()
    assert len(bands) > 1
    assert sorted(r for b in bands.itertuples() for r in range(b.row0, b.row1)) == list(range(64))
    for band in bands.itertuples():
        times = rows.ticks[rows.ticks.band == band.Index].time_ms.to_numpy()
        for row in range(band.row0, band.row1):
            np.testing.assert_allclose(times, _row_times(trace, rows, row))
    assert rows.ticks.tokens.sum() == int(trace.output[trace.prefilled].sum())


def test_many_decoders_share_rows_and_thinned_ticks_keep_every_freeze_and_token(long_run):
    _, unchunked, _ = long_run
    rows = decoder_rows(unchunked, "lane")
    assert (rows.decoders, rows.per_row, rows.rows) == (1024, 4, 256)
    thin = decoder_rows(unchunked, "lane", max_ticks=20)
    assert thin.bin_ms is not None and len(thin.ticks) < len(rows.ticks)
    assert thin.ticks.tokens.sum() == rows.ticks.tokens.sum()            # moved, never dropped
    longest = rows.ticks.loc[rows.ticks.gap_ms.idxmax()]
    kept = thin.ticks[thin.ticks.time_ms == longest.time_ms]             # the freeze, both ends
    assert kept.gap_ms.iloc[0] == longest.gap_ms and longest.prev_ms in set(thin.ticks.time_ms)


def test_the_new_requests_tokens_and_its_wait_for_the_first(seed):
    _, unchunked, chunked = seed
    for trace, ttft in ((unchunked, 327.68), (chunked, 368.64)):
        tokens = new_request_frame(trace, "lane")
        assert len(tokens) == 32 and tokens.time_ms.iloc[0] == pytest.approx(ttft)
        callout = callouts_frame(trace, "lane").iloc[0]
        assert (callout.arrival_ms, callout.first_ms) == pytest.approx((0, ttft))
        assert len(new_request_frame(trace, "lane", until_s=ttft / 1e3 - 1e-6)) == 0


# --- figures compile -------------------------------------------------------------------------
@pytest.mark.parametrize("look", fast_first(LOOKS),
                         ids=lambda look: f"presenter={look.presenter},dark={look.dark}")
def test_every_figure_compiles_with_vl_convert(seed, look):
    for name, figure in lab_figures(*seed, look).items():
        figure.chart.to_dict(validate=True)          # Altair's schema check
        svg = vlc.vegalite_to_svg(figure.spec())     # Vega-Lite compile + Vega render
        assert svg.startswith("<svg") and len(svg) > 5000, name


def test_figures_compile_for_a_long_run_and_keep_page_data_small(long_run):
    chunked = long_run[2]
    assert len(iterations_frame(chunked, "lane")) < chunked.iterations   # thinned for display
    figures = lab_figures(*long_run, Look())
    vega = vlc.vegalite_to_vega(figures["side-by-side"].spec())
    assert any(d.get("name") == "unchunked_iterations" for d in vega["data"])
    for name in ("side-by-side", "roofline", "curve"):
        assert len(json.dumps(figures[name].spec())) < MAX_PAGE_DATA, name


def test_default_page_data_is_under_a_megabyte(seed):
    figures = lab_figures(*seed, Look())
    assert len(json.dumps(figures["side-by-side"].spec())) < MAX_PAGE_DATA
    assert len(json.dumps(figures["roofline"].spec()) + json.dumps(figures["curve"].spec())) \
        < MAX_PAGE_DATA


def test_timeline_window_is_the_prompt_or_the_whole_run(seed):
    _, unchunked, chunked = seed
    whole = timeline(unchunked, chunked, "run")
    assert whole.t_max == pytest.approx(max(unchunked.end_s[-1], chunked.end_s[-1]))
    focus = timeline(unchunked, chunked, "prompt")
    assert focus.t_max == pytest.approx(1.5 * 0.36864)     # 1.5 x the chunked lane's first token
    for lane in focus.lanes:
        assert lane.decoders.ticks.time_ms.max() <= focus.t_max * 1e3
        assert lane.new_request.time_ms.max() <= focus.t_max * 1e3
        assert lane.iterations.start_ms.max() < focus.t_max * 1e3
    assert len(focus.lanes[1].iterations) < len(whole.lanes[1].iterations)
    assert focus.boundaries[-1] == focus.t_max and max(focus.boundaries) == focus.t_max
    with pytest.raises(InputError, match="window"):
        timeline(unchunked, chunked, "zoom")


def test_timeline_clock_is_a_top_level_param_in_seconds(seed):
    _, unchunked, chunked = seed
    tl = timeline(unchunked, chunked, "run")
    assert tl.t_max == pytest.approx(unchunked.end_s[-1])
    assert tl.boundaries[0] == 0.0 and tl.boundaries[-1] == pytest.approx(tl.t_max)
    spec = tl.figure(Look()).spec()
    assert spec["params"] == [{"name": "t", "value": tl.t_max}, {"name": "t_end", "value": tl.t_max}]
    assert tl.figure(Look()).spec(t=0.1)["params"][0] == {"name": "t", "value": 0.1}


def test_one_chart_serves_every_run_of_the_same_shape(seed):
    """A rerun after a budget change must not compose the chart again: only the data and the
    axis' end differ, and what the chart says comes from them."""
    s, unchunked, chunked = seed
    other = run(scenario_from({"budget": 1024}), "sarathi")
    a, b = timeline(unchunked, chunked).figure(Look()), timeline(unchunked, other).figure(Look())
    assert a.chart is b.chart
    spec_a, spec_b = a.spec(), b.spec()
    assert spec_a["vconcat"] is spec_b["vconcat"]
    assert spec_b["datasets"]["chunked_heading"][0]["title"].endswith("budget 1,024")
    assert spec_a["params"][1]["value"] != spec_b["params"][1]["value"]    # the axis' end
    svg = vlc.vegalite_to_svg(spec_b)
    assert "budget 1,024" in svg and "budget 576" not in svg


def drawn_texts(figure: Figure, t: float | None = None) -> list[str]:
    """Every text the figure draws at the clock `t` (None: the end), in order."""
    svg = vlc.vegalite_to_svg(figure.spec() if t is None else figure.spec(t=t))
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def drawn_marks(figure: Figure, t: float, name: str) -> list[dict[str, float]]:
    """The data of each item the mark `name` draws at the clock `t` (from the SVG's labels)."""
    svg = vlc.vegalite_to_svg(figure.spec(t=t))
    groups = re.findall(rf'<g class="[^"]* {name}(?:_\d+)?_marks"[^>]*>(.*?)</g>', svg)
    return [{k: float(v.replace(",", "")) for k, v in (f.split(": ") for f in label.split("; "))}
            for group in groups for label in re.findall(r'aria-label="([^"]*)"', group)]


def test_the_counters_follow_the_clock(seed):
    """50 ms into the whole-prompt iteration every unchunked stream has waited 50 ms: not yet a
    freeze (over 100 ms); at 120 ms it is one, and its whole 120 ms is the freeze's length. The
    largest gap so far is that wait, the new request is still waiting; at the end, the whole gaps,
    and instead of the streams' state at that instant what happened: how many froze, for how long."""
    figure = timeline(*seed[1:]).figure(Look())
    early, frozen, late = drawn_texts(figure, 0.05), drawn_texts(figure, 0.12), drawn_texts(figure)
    # the unchunked lane, then the chunked one (whose every gap is 23.04 ms: never a freeze)
    assert [x for x in early if "frozen" in x] == ["no stream frozen", "no stream frozen"]
    assert [x for x in frozen if "frozen" in x] == ["streams frozen for 120 ms", "no stream frozen"]
    assert [x for x in late if "froze" in x] == ["64 streams froze, up to 333 ms", "no stream froze"]
    assert [x for x in early if x.startswith("largest gap")] == [
        "largest gap so far 50 ms", "largest gap so far 23.04 ms"]
    assert [x for x in early if x.endswith("delivered so far")] == [
        "0 tokens delivered so far", "128 tokens delivered so far"]
    assert early.count("waiting for its first token: 50 ms") == 2
    assert [x for x in late if x.startswith("largest gap")] == [
        "largest gap so far 333 ms", "largest gap so far 23.04 ms"]
    assert "TTFT 327.7 ms" in late and "TTFT 368.6 ms" in late


@pytest.mark.parametrize("values", fast_first([{}, {"budget": 8192}, {"prompt": 100}, {"decodes": 4}]))
def test_the_drawn_counters_are_counter_texts_at_every_clock(values):
    """What the chart draws and what counter_texts says (an export's frames) agree at every
    clock; a lane none of whose gaps exceeds 100 ms never reads frozen."""
    s = scenario_from(values)
    tl = timeline(run(s, "vllm-v0"), run(s, "sarathi"))
    figure = tl.figure(Look())
    for t in np.linspace(0, tl.t_max, 9):
        texts = drawn_texts(figure, t)
        for lane in tl.lanes:
            said = counter_texts(lane.decoders.ticks, t * 1e3)
            if t >= tl.t_max:   # at the end the chart says what happened: the lane's heading
                said["frozen"] = lane.heading.froze[0]
            for text in filter(None, said.values()):
                assert text in texts, (t, lane.key, text)
            if not (lane.decoders.ticks.gap_ms > STALL_S * 1e3).any():
                assert not said["frozen"].startswith("streams frozen"), (t, lane.key)
    chunked = tl.lanes[1].decoders.ticks
    assert values or chunked.gap_ms.max() < STALL_S * 1e3   # the defaults' chunked lane: no freeze


def test_the_latest_largest_gap_is_marked_and_only_it(seed):
    """At 200 ms the chunked lane's eight whole gaps are all 23.04 ms: the latest of them is
    marked (marking each would draw one line 184 ms long, a gap no stream had; picking one by
    float rounding would jump about); the unchunked lane's one gap, 200 ms so far, is marked from
    its start to the clock."""
    tl = timeline(*seed[1:])
    figure = tl.figure(Look())
    for lane in tl.lanes:
        marks = drawn_marks(figure, 0.2, f"{lane.key}_largest_gap")
        largest = float(counter_texts(lane.decoders.ticks, 200.0)["largest"].split()[-2])
        ticks = lane.decoders.ticks
        begun = ticks[ticks.prev_ms <= 200.0]
        lengths = begun.time_ms.clip(upper=200.0) - begun.prev_ms
        equal = begun.prev_ms[lengths >= lengths.max() - 1e-6]
        assert [m["prev_ms"] for m in marks] == pytest.approx([equal.max()])
        assert {round(m["shown_end"] - m["prev_ms"], 2) for m in marks} == {largest}
    assert len(drawn_marks(figure, 0.2, "chunked_largest_gap")) == 1


@pytest.mark.parametrize("values, chunked, overhead_ms", [
    ({}, "sarathi", 0.0),                                      # the source article: time = max
    ({"gpu": "h100-sxm", "mode": "calibrated", "tp": 2}, "sarathi", 4.0),  # synchronous: 4 ms
    ({"gpu": "h100-sxm", "mode": "calibrated"}, "vllm-v1", 0.0),  # overlapped: hidden
])
def test_bar_tooltips_show_the_overhead_and_the_time_beyond_max_compute_memory(
        values, chunked, overhead_ms):
    """Each bar's tooltip: the CPU overhead the engine added and its share of the duration
    (synchronous vLLM V0 and Sarathi-Serve: all 4 ms calibrated; overlapped vLLM V1: none, its
    GPU steps being longer), and the rest beyond max(compute, memory)."""
    s = scenario_from(values)
    svg = vlc.vegalite_to_svg(timeline(run(s, "vllm-v0"), run(s, chunked)).figure(Look()).spec())
    labels = re.findall(r'aria-label="([^"]*iterations in this bar[^"]*)"', svg)
    tips = [dict(field.split(": ", 1) for field in label.split("; ")) for label in labels]
    assert tips

    def ms(tip, title):
        return float(tip[title].replace(",", ""))

    for tip in tips:
        longer = max(ms(tip, "compute time (ms)"), ms(tip, "memory time (ms)"))
        overhead = ms(tip, OVERHEAD)
        assert ms(tip, OTHER) == pytest.approx(ms(tip, "duration (ms)") - longer - overhead,
                                               abs=2e-3)
        assert float(tip[OVERHEAD_SHARE].rstrip("%")) == pytest.approx(
            100 * overhead / ms(tip, "duration (ms)"), abs=0.06)
        assert ms(tip, OTHER) >= 0
    single = {ms(tip, OVERHEAD) for tip in tips if ms(tip, "iterations in this bar") == 1}
    # the unchunked lane, vLLM V0, is synchronous: its 4 ms calibrated, 0 in the ideal modes
    assert single == ({overhead_ms, 4.0} if values.get("mode") == "calibrated" else {0.0})


def test_downloads_carry_the_figures_data(seed):
    figure = timeline(*seed[1:]).figure(Look())
    data = json.loads(figure.json())
    assert set(data) == {f"{lane}_{part}" for lane in ("unchunked", "chunked")
                         for part in ("heading", "iterations", "ticks", "new", "callouts")}
    assert data["unchunked_ticks"][0]["gap_ms"] is None   # NaN -> null, JSON has no NaN


@pytest.mark.parametrize("look", fast_first(LOOKS),
                         ids=lambda look: f"presenter={look.presenter},dark={look.dark}")
@pytest.mark.parametrize("decodes", [64, pytest.param(4, marks=pytest.mark.slow), 0])
def test_the_figure_height_is_what_vl_convert_draws(look, decodes):
    """The player's frame is sized from Timeline.height: it must hold the whole figure."""
    s = scenario_from({"decodes": decodes})
    tl = timeline(run(s, "vllm-v0"), run(s, "sarathi"))
    for streams, beside in itertools.product((False, True), (False, True)):
        svg = vlc.vegalite_to_svg(tl.figure(look, streams=streams, beside=beside).spec(t=0.1))
        assert int(re.search(r'<svg[^>]* height="(\d+)"', svg).group(1)) \
            == tl.height(look, streams, beside=beside), (streams, beside)


@pytest.mark.parametrize("width", [340, 600])
def test_lanes_beside_each_other_fit_their_columns(seed, width):
    """Beside each other each lane is `width` wide with its own legend and time axis, the two as
    tall as one, and the whole no wider than what ui/shell/presenter.py leaves them (LANE_SIDE_PX a
    lane): the chunked lane starts right of the unchunked one, every title and counter whole."""
    tl = timeline(*seed[1:])
    figure = tl.figure(Look(), width=width, beside=True, rows_px=60)
    svg = vlc.vegalite_to_svg(figure.spec(t=0.2))
    drawn = int(re.search(r'<svg[^>]* width="(\d+)"', svg).group(1))
    assert drawn <= 2 * (width + LANE_SIDE_PX) + BESIDE_GAP_PX
    assert int(re.search(r'<svg[^>]* height="(\d+)"', svg).group(1)) == tl.height(
        Look(), rows_px=60, beside=True) < tl.height(Look(), rows_px=60)
    texts = drawn_texts(figure, 0.2)
    assert texts.count(X_TITLE) == 2                                      # an axis each
    assert not [t for t in texts if t.endswith("…")]                     # nothing cut short
    assert "streams frozen for 200 ms" in texts


@pytest.mark.parametrize("look", [Look(presenter=True), Look(presenter=True, dark=True), Look()],
                         ids=["presenter", "presenter-dark", "normal"])
@pytest.mark.parametrize("height", [620, 800, 1000])
def test_a_figure_fitted_to_a_height_is_that_tall(seed, look, height):
    """What a projector's stage leaves (ui/shell/presenter.py) is what the figure takes: the decoder
    blocks are as tall as the rest of the figure leaves, and the frame is sized to hold it."""
    tl = timeline(*seed[1:])
    rows_px = tl.rows_to_fit(look, height)
    svg = vlc.vegalite_to_svg(tl.figure(look, width=700, rows_px=rows_px).spec(t=0.1))
    drawn = int(re.search(r'<svg[^>]* height="(\d+)"', svg).group(1))
    assert drawn == tl.height(look, rows_px=rows_px)
    assert abs(drawn - height) <= 1          # rows_px is a whole number of pixels per lane


def test_a_screen_too_short_still_gets_readable_rows(seed):
    tl = timeline(*seed[1:])
    look = Look(presenter=True)
    assert tl.rows_to_fit(look, 100) == 24 and tl.rows_to_fit(look, 10_000) == 400
    assert tl.height(look, rows_px=24) > 100


def test_every_part_of_a_lane_is_a_named_view(seed):
    """A guided tour outlines parts of the timeline by name (charts.timeline.view_name)."""
    vega = vlc.vegalite_to_vega(timeline(*seed[1:]).figure(Look(presenter=True)).spec())

    def groups(mark):
        yield mark.get("name")
        for child in mark.get("marks", []):
            yield from groups(child)
    names = {name for mark in vega["marks"] for name in groups(mark)}
    for lane in ("unchunked", "chunked"):
        for part in PARTS_OF_A_LANE:
            assert f"{view_name(lane, part)}_group" in names


def test_a_projectors_lanes_share_one_legend_and_one_axis(seed):
    spec = timeline(*seed[1:]).figure(Look(presenter=True)).spec()
    text = json.dumps(spec)
    normal = json.dumps(timeline(*seed[1:]).figure(Look()).spec())
    legends = [t.count('"symbolOpacity": 1') for t in (text, normal)]   # the bars' colour key
    assert legends[0] > 0 and 2 * legends[0] == legends[1]
    axes = [t.count(json.dumps(X_TITLE)) for t in (text, normal)]          # the time axis
    assert axes[0] > 0 and 2 * axes[0] == axes[1]


@pytest.mark.parametrize("width, lanes_counting_tokens, counter_px", [(1100, 2, 21), (600, 0, 18)])
def test_a_narrow_projector_lane_keeps_two_counters_whole(seed, width, lanes_counting_tokens, counter_px):
    """At 21 px a third of 600 px cuts "streams frozen for 333 ms": the tokens delivered go, and
    the two left are set at the labels' 18 px (at 21 px Chromium cut even half: "frozen for 16…",
    the tour's 1280x720 projector)."""
    vega = vlc.vegalite_to_vega(timeline(*seed[1:]).figure(Look(presenter=True), width=width).spec())
    assert json.dumps(vega).count("tokens delivered so far") == lanes_counting_tokens

    def counters(mark):
        if re.match(r"(un)?chunked_(frozen|largest)_\d+_marks$", mark.get("name") or ""):
            yield mark["encode"]["update"]
        for child in mark.get("marks", []):
            yield from counters(child)
    drawn = [update for mark in vega["marks"] for update in counters(mark)]
    assert len(drawn) == 4
    for update in drawn:
        assert update["fontSize"]["value"] == counter_px
        assert update["limit"]["value"] >= 0.3 * width


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@pytest.mark.parametrize("dark", [False, True])
def test_high_contrast_inks_meet_wcag_against_the_background(dark):
    """Text 4.5:1 and more (muted labels too), marks 3:1 and more (WCAG 1.4.3, 1.4.11)."""
    look = Look(dark=dark, contrast=True)
    for ink in (look.ink, look.muted):
        assert contrast(ink, look.background) >= 4.5
    for mark in look.meanings().values():
        assert contrast(mark, look.background) >= 3


def test_the_normal_light_looks_orange_is_why_the_option_exists():
    """Okabe-Ito orange on white is about 2:1: faint on a washed-out projector."""
    assert contrast(Look().prefill, Look().background) < 3


# --- export ----------------------------------------------------------------------------------
def test_png_svg_and_gif_exports(seed):
    tl = timeline(*seed[1:])
    figure = tl.figure(Look(), width=400)
    png = Image.open(io.BytesIO(export.png(figure)))
    assert png.format == "PNG" and png.width > 800          # scale 2 for docs
    assert export.svg(figure).startswith("<svg")
    gif = Image.open(io.BytesIO(film.gif(figure, tl.t_max, frames=3)))
    assert gif.format == "GIF" and gif.n_frames == 3
    for frame in range(gif.n_frames):          # every frame whole, not cropped to a change
        gif.seek(frame)
        assert gif.tile[0][1] == (0, 0, *gif.size)


def frames_of(gif: bytes) -> list[Image.Image]:
    image = Image.open(io.BytesIO(gif))
    frames = []
    for index in range(image.n_frames):
        image.seek(index)
        frames.append(image.convert("RGB"))
    return frames


@pytest.mark.parametrize("look", fast_first([Look(), Look(dark=True)]))
def test_every_gif_frame_is_its_canvas_and_the_chart_keeps_its_size_while_it_plays(seed, look):
    """The seed's gap labels appear as the clock passes them: the chart, and so every frame,
    keeps one size (the committed GIF had frames 532-542 px tall on a 532 px canvas)."""
    tl = timeline(*seed[1:])
    figure = tl.figure(look, width=400)
    sizes = {Image.open(io.BytesIO(vlc.vegalite_to_png(figure.spec(t=t), scale=1))).size
             for t in (0.0, tl.t_max / 2, tl.t_max)}
    assert len(sizes) == 1
    gif = film.gif(figure, tl.t_max, frames=4)
    frames = frames_of(gif)
    assert {frame.size for frame in frames} == sizes
    written = Image.open(io.BytesIO(gif))
    for index in range(written.n_frames):                    # each frame written whole
        written.seek(index)
        assert written.tile[0][1] == (0, 0, *written.size)
    first, last = frames[0], frames[-1]
    assert first.getpixel((0, 0)) == Image.new("RGB", (1, 1), look.background).getpixel((0, 0))
    assert first.tobytes() != last.tobytes()                 # the clock moved


def test_a_gif_needs_a_clock(seed):
    s = seed[0]
    plan = budget_plan(s.cost_model(), s.decodes, s.context, s.prompt, s.budget, 0.025)
    roof = roofline_figures(s.cost_model(), plan, s.decodes, s.context, s.prompt, Look()).roof
    with pytest.raises(InputError, match="no clock"):
        film.gif(roof, 1.0)


def test_tables_are_tidy_csvs_with_whole_numbers_as_integers(seed):
    figure = timeline(*seed[1:]).figure(Look())
    tables = export.csv_tables(figure)
    assert set(tables) == set(figure.data)
    bars = tables["chunked_iterations"].splitlines()
    header = bars[0].split(",")
    first = dict(zip(header, bars[1].split(",")))
    assert first["decode_tokens"] == "64" and first["prefill_tokens"] == "512"   # not 64.0
    assert "." in first["duration_ms"]                                         # 23.04 stays
    data, ext, mime = export.csv_file(figure)
    assert (ext, mime) == ("zip", "application/zip")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist()) == sorted(f"{name}.csv" for name in figure.data)
        assert archive.read("chunked_iterations.csv").decode() == tables["chunked_iterations"]
    one = Figure(figure.chart, figure.look, {"only": figure.data["chunked_iterations"]})
    assert export.csv_file(one) == (tables["chunked_iterations"].encode(), "csv", "text/csv")


def test_tidy_keeps_fractions_missing_values_and_text():
    frame = pd.DataFrame({"n": [1.0, 2.0, np.nan], "x": [0.5, 1.0, 2.0], "s": ["a", "b", "c"],
                          "inf": [1.0, np.inf, 2.0]})
    tidied = export.tidy(frame)
    assert str(tidied.n.dtype) == "Int64" and tidied.n.isna().tolist() == [False, False, True]
    assert tidied.x.dtype == float and tidied.s.tolist() == ["a", "b", "c"]
    assert tidied["inf"].dtype == float
    assert tidied.to_csv(index=False).splitlines()[1] == "1,0.5,a,1.0"


def test_a_window_cut_keeps_each_bars_longest_iteration_inside_it():
    """`longest_ms` of the last shown bar must not reach for iterations after the cut."""
    trace = simulate(poisson(50, 20, seed=1), get_policy("vllm-v0"),
                     CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple"), budget=1024)
    until_s = float(trace.end_s[3])
    shown = iterations_frame(trace, "lane", until_s=until_s)
    n = int(np.searchsorted(trace.start_s, until_s))
    assert len(shown) == n
    np.testing.assert_allclose(shown.longest_ms, trace.duration_s[:n] * 1e3)
    assert trace.duration_s[n:].max() > trace.duration_s[:n].max()   # the cut hides a longer one


def test_a_gif_animates_a_timeline_and_says_so_for_another_clocked_figure():
    """A GIF is composed from the timeline's named views; any other figure with a clock is
    refused with what a GIF needs, not a traceback."""
    import altair as alt

    from charts.figure import Figure
    label = (alt.Chart(alt.Data(values=[{}])).transform_calculate(text="pad('', t * 60, 'x')")
             .mark_text(align="left").encode(x=alt.value(90), y=alt.value(10), text="text:N")
             .properties(width=100, height=20))
    with pytest.raises(InputError, match="a GIF animates a timeline"):
        film.gif(Figure(label, Look(), {}, {"t": 0.0}), 1.0, frames=3)
