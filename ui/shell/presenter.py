"""Presenter mode and high contrast, for a room with a projector (the `presenter` and `contrast`
controls, in the sidebar and the link).

Presenter mode closes the sidebar, gives back the space above the page, sets text at 24 px (chart
labels at 18 px: charts/theme.py), shows each page's main figure first, under its heading (the
page draws it in `figure()`, where it belongs in the page's reading order), and fits the timeline
to the screen: a small component
(front/room.js) reports the window's size and where the fitted figure's container (`STAGE`)
starts, and the figure is built as wide as that container and as tall as the screen leaves
(`fit`). Until the first report the figure is fitted to the window the page found as it
loaded (`guessed_room`), else to `FALLBACK_ROOM`. High contrast darkens
the page's text and every chart's inks.

Outside presenter mode a page can fit its timeline too (`watch_room`, then a player in the stage:
Side by side): as wide as the page, the lanes beside each other where each keeps
MIN_LANE_BESIDE_PX (`lanes_beside`), and both lanes on the first screen, the decoder blocks made
shorter for it, down to ROWS_PX_RANGE's least; where even that does not fit, on one screen once
scrolled to the player.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import streamlit as st

from charts.theme import Look
from charts.timeline import BESIDE_GAP_PX, ROWS_PX_RANGE
from charts.views import Timeline

from .assets import front
from .streamlit_internals import main_column_px
from .widgets import CHART_WIDTH

ROOM = "room"           # the component's key: its state {"room": {...}} in session_state
FIGURE = "main-figure"  # st.container(key=FIGURE): a page's main figure (`figure`)
STAGE = "stage"         # st.container(key=STAGE): where a fitted figure goes
BOTTOM_PX = 12          # kept free under a fitted figure
CHART_SIDE_PX = 160     # beside the plot: the rows' titles (left), the player's padding
PRESENTER_PADDING_PX = 112   # presenter.css: the main column's padding, 72 px left and 40 right
PRESENTER_SIDE_PX = 268      # beside a projector's plot: its rows' titles and axis at 18 px (a
#                              1280 px projector's column keeps CHART_WIDTH for the plot)
PLAYER_CHROME_PX = {False: 150, True: 70}   # the player's controls (and cue) around its chart
SHORTEST_STAGE_PX = 300  # a window too short for any figure still gets a usable one
LANE_SIDE_PX = 100       # beside each of two lanes: its rows' title (left), its share of padding
MIN_LANE_BESIDE_PX = 340  # the narrowest lane drawn beside another (its two counters whole)
HEADER_PX = 64           # Streamlit's header line over a scrolled page
PAGE_STAGE_TOP_PX = 277  # a page's stage under its header and a line of how to read it, before
#                          the browser says: Side by side's in 1024-1440 px windows (254 at 1920)


@dataclass(frozen=True)
class Room:
    """The browser window (CSS pixels), the fitted figure's container's top (from the page's
    top) and width; None until the container has been drawn."""
    width: int
    height: int
    top: int | None = None
    stage_width: int | None = None


FALLBACK_ROOM = Room(1280, 720, 150, 1168)   # a small projector, before the first report
WINDOW_COOKIE = "lab_window"   # "WIDTHxHEIGHT": the window, written by the page as it loads
LARGEST_WINDOW_PX = 8192       # a cookie saying more (an 8K screen's width) is not believed


@functools.cache
def _room_component():
    return st.components.v2.component("chunked_prefill_lab.room", js=front("room.js"))


def on() -> bool:
    return bool(st.session_state.get("presenter", False))


def setup(look: Look, *, stage: bool = False) -> None:
    """For every page, after the sidebar (whose toggles set `look`): the sidebar closed on a
    projector, the page's presenter and contrast styles, and the room's reports where a figure
    is fitted (on a projector, or on a page with a `stage`: the guided tour)."""
    st.set_page_config(initial_sidebar_state="collapsed" if look.presenter else "auto")
    if look.contrast:
        st.html(f"<style>:root {{ --contrast-ink: {look.ink}; }}\n{front('contrast.css')}</style>")
    if look.presenter:
        st.html(f"<style>{front('presenter.css')}</style>")
    if look.presenter or stage:
        watch_room()


def figure():
    """The container a page draws its main figure in (one per page): where the page puts it
    outside presenter mode; on a projector first, under the page's heading, the page's words
    and controls after it (presenter.css), so that the figure is on the first screen."""
    return st.container(key=FIGURE)


def watch_room(keeps: tuple[int, int] | None = None) -> None:
    """Mount the component that reports the window and the stage (once per page run: setup
    does on a projector and the tour, a page that fits its figure otherwise, after drawing it).
    `keeps`: the room under the stage's top (px: least, most) within which the run's figure
    stays as drawn at the stage's width (`Fit.keeps`); a room within it is not reported, which
    saves a fresh visit a second run where the guessed room (`guessed_room`) was close enough."""
    known = room()
    _room_component()(key=ROOM, data={"stage": f".st-key-{STAGE}", "known": known.__dict__,
                                      "keeps": keeps},
                      on_room_change=lambda: None)
    st.html("<style>.st-key-room { display: none; }</style>")   # reports only, draws nothing


def room() -> Room:
    """The last report of the window and the stage, or before one the guessed room."""
    state = st.session_state.get(ROOM)
    reported = state.get("room") if hasattr(state, "get") else None
    if not isinstance(reported, dict):
        return guessed_room()
    try:
        return Room(int(reported["width"]), int(reported["height"]),
                    None if reported.get("top") is None else int(reported["top"]),
                    None if reported.get("stage_width") is None else int(reported["stage_width"]))
    except (KeyError, TypeError, ValueError):   # a report from an older page: wait for the next
        return guessed_room()


def guessed_room() -> Room:
    """Before the first report: the window the page found as it loaded (`WINDOW_COOKIE`, sent
    with the session's first request), the stage as wide as Streamlit's main column then is, its
    top not yet known (FALLBACK_ROOM's assumed); FALLBACK_ROOM without the cookie or in a window
    too narrow for the column to be guessed."""
    try:
        width, height = (int(x) for x in st.context.cookies.get(WINDOW_COOKIE, "").split("x"))
    except ValueError:   # no cookie (a first run in AppTest) or not two numbers
        return FALLBACK_ROOM
    column = main_column_px(width)
    if column is None or not 0 < height <= LARGEST_WINDOW_PX or width > LARGEST_WINDOW_PX:
        return FALLBACK_ROOM
    return Room(width, height, None, column)


@dataclass(frozen=True)
class Fit:
    """How a timeline fills its stage: each lane's width, the decoder blocks' height (None: by
    their rows), whether the lanes stand beside each other, and `keeps`: the room under the
    stage's top (window height − top, px: least, most) within which this fit stays as it is at
    this stage width (None: any other room may change it)."""
    width: int
    rows_px: int | None = None
    beside: bool = False
    keeps: tuple[int, int] | None = None


KEEPS_SCAN_PX = 256   # how far above and below the room it was fitted to `Fit.keeps` looks


def fit(tl: Timeline, look: Look, stage: bool, tour: bool = False) -> Fit:
    """How the timeline fills a `stage`: on a projector, as wide as it and as tall as the screen
    leaves under its top; elsewhere (`tour`: a guided tour's stage, as wide as it) as wide as the
    page, the lanes beside each other where both fit, and the whole player within the window's
    height. No stage: the page's usual width and rows."""
    if not stage:
        return Fit(CHART_WIDTH)
    r = room()
    stage_width = r.stage_width or FALLBACK_ROOM.stage_width
    width = max(320, stage_width - CHART_SIDE_PX)
    if look.presenter:
        return Fit(width, tl.rows_to_fit(look, height_left() - PLAYER_CHROME_PX[True]))
    if tour:
        return Fit(width)
    lane_beside = _lane_beside_px(stage_width)
    beside = lane_beside >= MIN_LANE_BESIDE_PX
    width = lane_beside if beside else width
    under_top = r.height - (PAGE_STAGE_TOP_PX if r.top is None else r.top)

    shortest = tl.height(look, beside=beside, rows_px=ROWS_PX_RANGE[0])
    natural = tl.height(look, beside=beside)

    def on_the_page(under_top: int) -> Fit:
        chrome = PLAYER_CHROME_PX[False] + BOTTOM_PX
        first_screen = max(under_top - BOTTOM_PX, SHORTEST_STAGE_PX) - PLAYER_CHROME_PX[False]
        if shortest > first_screen:                              # not on the first screen:
            first_screen = r.height - HEADER_PX - chrome         # on one, once scrolled to
        rows_px = (None if natural <= first_screen
                   else tl.rows_to_fit(look, first_screen, beside=beside))
        return Fit(width, rows_px, beside)

    fitted = on_the_page(under_top)
    return replace(fitted, keeps=_same_within(lambda v: on_the_page(v) == fitted, under_top))


def _same_within(same: Callable[[int], bool], at: int) -> tuple[int, int]:
    """The widest (least, most) around `at`, within KEEPS_SCAN_PX, where `same` holds: it holds
    at `at` and, the fit growing with the room, on one interval."""
    def edge(inside: int, outside: int) -> int:   # same(inside), not same(outside) (or the scan's end)
        if same(outside):
            return outside
        while abs(outside - inside) > 1:
            middle = (inside + outside) // 2
            inside, outside = (middle, outside) if same(middle) else (inside, middle)
        return inside
    return edge(at, at - KEEPS_SCAN_PX), edge(at, at + KEEPS_SCAN_PX)


def _lane_beside_px(stage_width: int) -> int:
    return (stage_width - BESIDE_GAP_PX) // 2 - LANE_SIDE_PX


def lanes_beside() -> bool:
    """Whether a fitted timeline outside presenter mode puts its lanes side by side (the page's
    words say left and right, else top and bottom)."""
    return _lane_beside_px(room().stage_width or FALLBACK_ROOM.stage_width) >= MIN_LANE_BESIDE_PX


def chart_width(look: Look) -> int:
    """The plot width of a chart drawn across the page's main column: the column the room says
    (reported, or guessed from the window before a report) less what sits beside the plot (its
    axes and titles), CHART_WIDTH at most, so that at 1280 px its right edge is not cut off. On a
    projector the sidebar is closed and the plot fills the window less the column's padding and
    its titles: CHART_WIDTH on a 1280 px projector, wider on a wider one (a time axis a room
    reads from its back rows)."""
    if look.presenter:
        return min(max(CHART_WIDTH, room().width - PRESENTER_PADDING_PX - PRESENTER_SIDE_PX),
                   2 * CHART_WIDTH)   # a 4K screen draws no more points than a 2K one
    column = room().stage_width or FALLBACK_ROOM.stage_width
    return max(320, min(CHART_WIDTH, column - CHART_SIDE_PX))


def height_left(unknown_top: int = FALLBACK_ROOM.top) -> int:
    """What the screen leaves for a fitted figure: from the stage's top (`unknown_top` until the
    browser reports it) to BOTTOM_PX above the window's bottom (SHORTEST_STAGE_PX at least)."""
    r = room()
    top = unknown_top if r.top is None else r.top
    return max(r.height - top - BOTTOM_PX, SHORTEST_STAGE_PX)
