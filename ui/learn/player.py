"""The side-by-side timeline in the page: the player (charts.player) in an iframe, the Vega bundle
served once as a static file, and what the time axis shows."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from functools import partial

import streamlit as st

from charts.figure import CLOCK, Figure
from charts.player import player_html, static_bundle_page
from charts.theme import Look
from charts.views import FOCUS_MARGIN
from sim.units import fmt_seconds

from ..shell import presenter
from ..shell.chart_view import vega_bundle_url
from ..shell.scenario import Scenario
from ..shell.widgets import figure_tools, file_stem
from . import runs, words
from .runs import Framing


def player(s: Scenario, look: Look, window: str, name: str, *, window_control: bool,
           framing: Framing | None = None, notes: bool = True,
           stage: bool | None = None) -> presenter.Fit:
    """The side-by-side timeline, animated in the browser by one clock (charts.player), with the
    downloads of a static chart and a GIF of the animation. `name` keys the playback position kept
    across reruns, and the downloads; `window_control`: the page offers *Time axis* (said in the
    notes). In the page's stage (on a projector, unless `stage` says otherwise) it is fitted to
    the screen (ui/shell/presenter.py); `framing` (a guided tour's) sets where it starts and what it
    points at; `notes`: how to read it (above it, under it on a projector), and under it what its
    time axis shows and the downloads. Returns how it was fitted."""
    stage = look.presenter if stage is None else stage
    tl = runs.timeline_view(s, window)
    fitted = presenter.fit(tl, look, stage, tour=framing is not None)
    framing = replace(framing or Framing(), width=fitted.width, rows_px=fitted.rows_px,
                      beside=fitted.beside)
    height = (tl.height(look, rows_px=fitted.rows_px, beside=fitted.beside)
              + presenter.PLAYER_CHROME_PX[look.presenter])
    if stage and look.presenter:   # lanes taller than the screen leaves: the player scales them down
        height = min(height, presenter.height_left())
    # how to read it: before it plays, but on a projector the lanes come first (they fill it)
    read_first = notes and not look.presenter
    if read_first:
        st.caption(words.timeline_legend())
    with st.container(key=presenter.STAGE) if stage else nullcontext():
        show_player(runs.player_page(s, look, window, height, name, file_stem(name, look), framing),
                    height)
    if notes:
        if not read_first:
            st.caption(words.timeline_legend())
        st.caption(words.timeline_titles(), unsafe_allow_html=True)
        timeline_notes(s, window, window_control)
        figure_tools(partial(runs.timeline_figure, s, look, window), name, t_max=tl.t_max)
    return fitted


def timeline_notes(s: Scenario, window: str, window_control: bool) -> None:
    """What the timeline's time axis shows: the window, time bins rather than single
    iterations, several streams per row."""
    tl = runs.timeline_view(s, window)
    run_end = max(float(trace.end_s[-1]) for trace in runs.lanes(s))
    if tl.t_max < run_end:
        st.caption(f"Time axis: the first {fmt_seconds(tl.t_max)} of a {fmt_seconds(run_end)} run "
                   f"(until {FOCUS_MARGIN:g} × the later first token of the new request)"
                   + ("; pick *Time axis: run* to see it all" if window_control else
                      "; *Side by side* can show the whole run")
                   + ". The metrics cover the whole run.")
    for lane, trace in zip(tl.lanes, runs.lanes(s)):
        if lane.bin_ms is not None:
            st.caption(f"{lane.title}: {trace.iterations:,} iterations drawn as "
                       f"{len(lane.iterations):,} bars (consecutive iterations merged into time bins "
                       f"of {lane.bin_ms:,.3g} ms; an iteration longer than a bin keeps its own bar), "
                       "to keep the page light. Every metric uses every iteration.")
        rows = lane.decoders
        if rows.per_row > 1 or rows.bin_ms is not None:
            st.caption(f"{lane.title}: " + words.rows_note(rows.decoders, rows.rows, rows.per_row,
                                                          rows.bin_ms))


def show_player(html: str, height: int) -> None:
    """Show a `player_html` page in Streamlit, with the Vega bundle as a cached static file when
    static serving is on (`.streamlit/config.toml`), inline otherwise. Pass the same `height` as
    to `player_html`. Its keys work from the page too, while it is in view (charts/player/player.js)."""
    bundle = vega_bundle_url()
    if bundle is not None:
        html = static_bundle_page(html, bundle)
    st.iframe(html, height=height, alt="Animated timeline player")


PLAY_S = 20.0            # wall-clock seconds a whole-run replay takes at its first Play
WHOLE_RUN_CHROME_PX = 85   # a whole-run figure's legend, time axis and padding around its rows


@st.cache_data(max_entries=16, show_spinner=False)
def _whole_run_page(key: tuple[str, ...], look: Look, width: int, height: int, stem: str,
                    name: str, cue: str, _figure: Figure) -> str:
    """`_figure` in the player over its whole run (`key`: its runs' digests): opened at the
    run's end with everything drawn, its first Play about `PLAY_S` seconds long."""
    end = _figure.params[CLOCK]
    return player_html(_figure.spec(), clock=CLOCK, t_max=end, height=height, dark=look.dark,
                       key=name, file_stem=stem, presenter=look.presenter,
                       contrast=look.contrast, ms_per_second=float(f"{end * 1e3 / PLAY_S:.1g}"),
                       start=end, cue=cue)


def draw_whole_run(figure: Figure, key: tuple[str, ...], name: str, cue: str) -> None:
    """A whole run on the player's clock (Disaggregation's lanes, Pipeline's stages) in the
    player the side-by-side timeline plays in, with the figure's downloads (PNG, SVG, CSV).
    `name`: the player's key (its kept position) and the downloads' name."""
    look = figure.look
    height = figure.chart.height + WHOLE_RUN_CHROME_PX + presenter.PLAYER_CHROME_PX[look.presenter]
    show_player(_whole_run_page(key, look, figure.chart.width, height, file_stem(name, look),
                                name, cue, figure), height)
    figure_tools(lambda: figure, name)
