"""charts.export: a GIF composed frame by frame shows what the player shows at the same clock,
with counters by the lab's definition of a freeze; exports state their scenario and theme."""

import io

import numpy as np
import pytest
import vl_convert as vlc
from PIL import Image

from charts import export, film
from charts.frames import lane_at_clock
from charts.theme import Look
from charts.timeline import view_name
from charts.views import timeline
from cli.export import default_out
from cli.main import build_parser
from sim.studies.stalls import STALL_S
from tests.support.charts import fast_first
from ui.shell.controls import CONTROLS, CUSTOM_GPU, CUSTOM_MODEL
from ui.shell.scenario import exported, scenario_from

FRAMES = 6


@pytest.fixture(scope="module")
def seed():
    s = scenario_from({})
    return timeline(s.run("vllm-v0", 50_000), s.run("sarathi", 50_000))


def frames_of(gif: bytes) -> list[np.ndarray]:
    image = Image.open(io.BytesIO(gif))
    out = []
    for index in range(image.n_frames):
        image.seek(index)
        assert image.tile[0][1] == (0, 0, *image.size)        # written whole, the canvas' size
        out.append(np.asarray(image.convert("RGB"), int))
    return out


def player_at(figure, t: float) -> np.ndarray:
    """The figure as the player draws it at the clock `t` (one whole vl-convert render)."""
    return np.asarray(Image.open(io.BytesIO(vlc.vegalite_to_png(figure.spec(t=t), scale=1)))
                      .convert("RGB"), int)


def counters_mask(figure, shape) -> np.ndarray:
    """The counters' rows, where the GIF says what the lab defines (the chart may not yet)."""
    layout = vlc.vegalite_to_scenegraph(figure.spec())
    boxes = film._boxes(layout)
    mask = np.zeros(shape[:2], bool)
    for name, (_, y, _, height) in boxes.items():
        if name.endswith("_counters_view"):
            mask[int(y) - 2:int(y + height) + 2, :] = True
    return mask


@pytest.mark.parametrize("look", fast_first([Look(), Look(dark=True), Look(presenter=True)]),
                         ids=["light", "dark", "presenter"])
def test_each_gif_frame_is_the_player_at_its_clock(seed, look):
    """Bars and tokens revealed up to the clock, the waiting blocks, the largest gap, the new
    request's wait and the playhead where the player draws them: outside the counters, fewer
    than 1% of the pixels differ visibly from a whole render at that clock (what does differ:
    the GIF's 64 colours at anti-aliased edges, the latest of equal gaps marked as the largest)."""
    figure = seed.figure(look, width=500)
    frames = frames_of(film.gif(figure, seed.t_max, frames=FRAMES))
    assert len(frames) == FRAMES
    clocks = np.linspace(0.0, seed.t_max, FRAMES)
    outside = ~counters_mask(figure, frames[0].shape)
    for frame, t in zip(frames, clocks):
        drawn = player_at(figure, float(t))
        # one canvas for every frame, the largest: the player's grows a pixel or two as its
        # playhead reaches the edge (and shrinks when it goes at the end)
        assert 0 <= frame.shape[0] - drawn.shape[0] <= 2 and 0 <= frame.shape[1] - drawn.shape[1] <= 2
        rows, columns = drawn.shape[:2]
        differs = np.abs(frame[:rows, :columns] - drawn).max(axis=2) > 60
        assert differs[outside[:rows, :columns]].mean() < 0.01, f"t = {t * 1e3:.0f} ms"


def test_a_gif_of_lanes_without_streams_is_the_player_too():
    """No streams: each lane's counters are one still line ("no streams running")."""
    s = scenario_from({"decodes": 0})
    lanes = timeline(s.run("vllm-v0", 50_000), s.run("sarathi", 50_000))
    figure = lanes.figure(Look(), width=500)
    frames = frames_of(film.gif(figure, lanes.t_max, frames=3))
    drawn = player_at(figure, lanes.t_max / 2)
    rows, columns = drawn.shape[:2]
    assert (np.abs(frames[1][:rows, :columns] - drawn).max(axis=2) > 60).mean() < 0.01


def test_a_frame_is_not_the_end_of_the_run_nor_another_clock(seed):
    """The check above tells frames apart: the picture at another clock differs far more."""
    figure = seed.figure(Look(), width=500)
    frames = frames_of(film.gif(figure, seed.t_max, frames=FRAMES))
    outside = ~counters_mask(figure, frames[0].shape)
    middle = frames[FRAMES // 2]
    for other in (0.0, seed.t_max):
        drawn = player_at(figure, other)
        rows, columns = drawn.shape[:2]
        differs = np.abs(middle[:rows, :columns] - drawn).max(axis=2) > 60
        assert differs[outside[:rows, :columns]].mean() > 0.03


def test_the_counters_follow_the_freeze_definition(seed):
    """A stream is frozen while its current gap exceeds 100 ms, and the whole gap counts: the
    unchunked lane reads "no stream frozen" at 50 ms and "frozen for 200 ms" at 200 ms; the
    chunked lane, whose every gap is 23.04 ms, never reads frozen; the largest gap so far ends
    at the run's largest gap."""
    unchunked, chunked = (lane.decoders.ticks for lane in seed.lanes)
    assert lane_at_clock(unchunked, 50.0).frozen_ms is None
    assert lane_at_clock(unchunked, 200.0).frozen_ms == pytest.approx(200.0)
    assert lane_at_clock(unchunked, STALL_S * 1e3 + 1).frozen_ms == pytest.approx(101.0)
    for t_ms in np.linspace(0, seed.t_max * 1e3, 40):
        assert lane_at_clock(chunked, float(t_ms)).frozen_ms is None
    figure = seed.figure(Look(), width=500)
    movie = film._Film(figure, [0.05, 0.2, seed.t_max], 1.0)
    words = [{w.view: w.text for w in frame if w.x == 0} for frame in movie.words]
    frozen_u, frozen_c = view_name("unchunked", "counters"), view_name("chunked", "counters")
    assert words[0][frozen_u] == "no stream frozen" and words[0][frozen_c] == "no stream frozen"
    assert words[1][frozen_u] == "streams frozen for 200 ms"
    assert words[1][frozen_c] == "no stream frozen"
    largest = [w.text for w in movie.words[-1] if w.text.startswith("largest gap")]
    assert largest == [f"largest gap so far {gap} ms" for gap in ("333", "23.04")]
    for lane, trace_gap in zip(seed.lanes, (333.0133, 23.04)):
        at = lane_at_clock(lane.decoders.ticks, seed.t_max * 1e3)
        assert at.largest_ms == pytest.approx(trace_gap, abs=1e-3)
    # of the chunked lane's equal gaps the latest is marked, as the chart marks it
    chunked_at = lane_at_clock(chunked, seed.t_max * 1e3)
    assert (chunked.gap_ms > 23.0).sum() > 10 and len(chunked_at.largest) == 1
    assert chunked_at.largest.prev_ms.iloc[0] == chunked.prev_ms[chunked.gap_ms > 23.0].max()


def test_every_freeze_counted_in_the_lane_is_a_gap_over_the_threshold(seed):
    """The shaded freezes at the end are exactly the gaps over 100 ms the stall count sees."""
    unchunked = seed.lanes[0].decoders.ticks
    at = lane_at_clock(unchunked, seed.t_max * 1e3)
    assert len(at.freezes) == 1 and (at.freezes.time_ms - at.freezes.prev_ms).iloc[0] > 100


def test_exports_name_their_scenario_and_theme():
    scenario = export.Scenario("h100-sxm", "H100 SXM", "llama-3.1-8b", "Llama 3.1 8B", 8192, 64,
                               576, "roofline")
    light, dark = (scenario.file_stem("side-by-side", Look(dark=dark)) for dark in (False, True))
    assert light == "side-by-side_h100-sxm_llama-3.1-8b_prompt-8192_streams-64_budget-576_roofline_light"
    assert dark == light.replace("_light", "_dark")
    assert scenario.file_stem("streams", Look(presenter=True, contrast=True)).endswith(
        "_light-contrast-presenter")
    sharded = export.Scenario("h100-sxm", "H100 SXM", "llama-3.1-70b", "Llama 3.1 70B", 8192, 64,
                              576, "roofline", tp=4)
    assert "_llama-3.1-70b_tp-4_prompt-8192_" in sharded.file_stem("roofline", Look())
    assert sharded.caption[0] == "H100 SXM · Llama 3.1 70B · 4 GPUs (tensor parallel)"
    odd = export.Scenario("my gpu/x", "My GPU", "m", "M", 1, 0, 2, "simple")
    assert "/" not in odd.file_stem("roofline", Look()) and " " not in odd.file_stem("roofline", Look())
    assert scenario.caption == ("H100 SXM · Llama 3.1 8B",
                                "8,192-token prompt · 64 streams · budget 576 tokens · roofline "
                                "cost model")


def _another(key: str):
    """A value of control `key` other than its default that still makes a scenario."""
    control = CONTROLS[key]
    if control.kind == "bool":
        return not control.default
    if control.kind == "choice":
        return next(o for o in control.options if o != control.default and o != "custom"
                    and not (key == "mode" and o == "calibrated"))   # no calibration: illustrative GPU
    if control.kind == "multi":
        return tuple(reversed(control.options[:2])) if tuple(control.default) != tuple(
            reversed(control.options[:2])) else control.options[:1]
    twice = control.default * 2 or 1
    return twice if twice <= control.high else control.default / 2


NO_FIGURE = ("tour",)   # the tour's step: the figure's inputs are the step's values, named below


@pytest.mark.parametrize("key", [k for k in CONTROLS if k not in NO_FIGURE])
def test_two_scenarios_that_differ_in_one_input_get_two_names(key):
    """Every control can change some figure, so any one changed gives another file name: a
    Sarathi-Serve and an SGLang export of the same scenario no longer overwrite each other."""
    base = {"gpu": "custom", "model": "custom"} if any(
        CONTROLS[key] in group for group in (CUSTOM_GPU, CUSTOM_MODEL)) else \
        {"gpu": "h100-sxm"} if key == "tp" else {}   # tensor parallelism needs a GPU link
    look_of = {"presenter": lambda v: Look(presenter=v), "contrast": lambda v: Look(contrast=v)}
    look = look_of.get(key, lambda v: Look())
    one = exported(base).file_stem("side-by-side", look(CONTROLS[key].default))
    other = exported({**base, key: _another(key)}).file_stem("side-by-side", look(_another(key)))
    assert one != other


def test_an_apps_name_spells_the_policies_and_is_the_clis():
    """At the same scenario the app's download and `python -m sim export` are named alike."""
    values = {"gpu": "h100-sxm", "model": "llama-3.1-8b", "chunked": "sglang"}
    stem = exported(values).file_stem("side-by-side", Look(dark=True))
    assert stem == ("side-by-side_h100-sxm_llama-3.1-8b_prompt-8192_streams-64_context-4000_"
                    "budget-576_vllm-v0-vs-sglang_simple_dark")
    args = build_parser().parse_args(["export", "--gpu", "h100-sxm", "--model", "llama-3.1-8b",
                                      "--policy", "sglang", "--mode", "simple", "--dark"])
    assert default_out(args) == f"out/{stem}.png"
    # a multi control's choices as the page holds them (a list) are its default all the same
    kept = exported({**values, "kvpolicies": list(CONTROLS["kvpolicies"].default)})
    assert kept.file_stem("side-by-side", Look(dark=True)) == stem


CAPTION = ("H100 SXM · Llama 3.1 8B",
           "8,192-token prompt · 64 streams · budget 576 tokens · simple cost model")


@pytest.mark.parametrize("width", [500, 777])
def test_a_fitted_export_is_exactly_as_wide_as_asked(seed, width):
    """--width is the picture's: axes, legends, caption and margins included, in PNG (2 pixels
    a CSS pixel), SVG and GIF alike (a plot `width` wide made a picture about 80 px wider)."""
    figure = export.fitted(lambda plot: seed.figure(Look(), plot), width, CAPTION)
    assert Image.open(io.BytesIO(export.png(figure))).width == 2 * width
    assert f'width="{width}"' in export.svg(figure)[:400]
    assert Image.open(io.BytesIO(film.gif(figure, seed.t_max, frames=2))).width == width


def relative_luminance(rgb) -> float:
    channels = [c / 255 for c in rgb]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


@pytest.mark.parametrize("look", [Look(), Look(dark=True), Look(presenter=True)],
                         ids=["light", "dark", "presenter"])
def test_the_scenario_lines_are_legible(seed, look):
    """The exported scenario lines are the chart title's size or more, in ink (7:1 against the
    background, not 6:1 grey), with a margin of 12 px or more to the picture's edge."""
    figure = seed.figure(look, 500).captioned(*CAPTION)
    title = figure.spec()["title"]
    assert title["fontSize"] >= look.title_size and title["color"] == look.ink
    picture = np.asarray(Image.open(io.BytesIO(export.png(figure, scale=1))).convert("RGB"), int)
    background = picture[0, 0]
    top = picture[:look.edge_px + 2 * round(title["fontSize"] * 1.3)]
    inked = np.argwhere(np.abs(top - background).max(axis=2) > 60)
    assert inked[:, 0].min() >= 12 and inked[:, 1].min() >= 12
    luminance = [relative_luminance(top[y, x]) for y, x in inked]
    darkest = min(luminance) if not look.dark else max(luminance)
    lighter, darker = sorted([darkest, relative_luminance(background)], reverse=True)
    assert (lighter + 0.05) / (darker + 0.05) >= 7


def test_an_exported_figure_states_its_scenario_above_it(seed):
    figure = seed.figure(Look(), width=500)
    caption = ("H100 SXM · Llama 3.1 8B", "8,192-token prompt · 64 streams")
    captioned = figure.captioned(*caption)
    for line in caption:
        assert line in export.svg(captioned) and line not in export.svg(figure)
    plain, shown = (Image.open(io.BytesIO(export.png(f, scale=1))) for f in (figure, captioned))
    assert shown.height > plain.height                        # a line of its own, above
    gif = frames_of(film.gif(captioned, seed.t_max, frames=2))
    assert gif[0].shape[0] == shown.height
