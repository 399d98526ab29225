"""The guided tour in the app (pages/teach/tour.py): the step a link, a key, a button or the step
picker chose; its controls set before the sidebar draws them (`enter`, from app.py); its text
with the numbers of its runs; its guess or exercise with instant feedback; and its figure,
opened at its moment and pointing at what it explains. The steps themselves are data
(ui/teach/tour.py, tour/en/*.md).

Keys (front/tour_keys.js): space, → or Page Down next; ← or Page Up back; a digit that step (the
numbers of the picker and of the link). The player in a step passes its keys on to the page, so
they work after a click into it too; a guess once made hands the keys back to the page.
"""

from __future__ import annotations

import functools

import streamlit as st

from charts import traffic as traffic_charts
from charts.figure import Figure
from charts.theme import Look
from sim.serving.engine import Trace

from ..learn import player, runs, words
from ..learn.runs import Framing
from ..shell import controls, presenter, story
from ..shell.assets import front
from ..shell.cached_figure import cached_figure
from ..shell.controls import CONTROLS
from ..shell.scenario import Scenario
from ..under_load import traffic
from . import handout, tour

URL_PATH = "tour"            # the page's address: /tour (pages/teach/tour.py)
STEP = controls.TOUR.key     # the step picker's key, and the link's: /tour?tour=3
APPLIED = "_tour_applied"    # the step whose controls were set last (None: not on the tour)
SAVED = "_tour_saved"        # the learner's scenario before the tour set its own
ENTRY = "_tour_entry"        # how many times a step was entered: each entry opens its moment afresh
KEYS = "tour_keys"
HANDOUT_FILE = "guided-tour-handout.html"
PICK = "tour_pick"           # the exercise's budget, a mirror of the sidebar's
# The burst's panels on a projector: the legend, each panel's title, subtitle and axis take
# BURST_FIXED_PX together (262 in vl-convert; the chart's element in Chromium is 9 px taller); a
# panel below BURST_PANEL_PX is shorter than its axis title; the y axis takes BURST_SIDE_PX.
BURST_FIXED_PX, BURST_PANEL_PX, BURST_SIDE_PX = 272, 170, 80
# the buttons of a projector's page are tall (its type is 24 px): these need less room
NAVIGATION_CSS = ("<style>.st-key-tour-navigation button, .st-key-tour-exercise-tools button "
                  "{ min-height: 2rem; padding-top: 0; padding-bottom: 0; }</style>")
HIGHLIGHT_CSS = ("<style>.st-key-tour-numbers {{ outline: 4px solid {ink}; outline-offset: 6px; "
                 "border-radius: 10px; }}</style>")


@functools.cache
def _keys_component():
    return st.components.v2.component("chunked_prefill_lab.tour_keys",
                                      js=front("tour_keys.js"))


@st.cache_resource(show_spinner=False)
def steps() -> tour.Tour:
    return tour.load()


def current(t: tour.Tour) -> int:
    """The step shown: the picker's, else the link's (corrected by ui.shell.widgets), else the first."""
    value = st.session_state.get(STEP)
    if value is None and STEP in st.query_params:
        value = controls.read_link({STEP: st.query_params.get_all(STEP)}).values[STEP]
    return min(max(int(value or 1), 1), len(t.steps))


def enter(on_tour: bool, first_run: bool) -> None:
    """Before the sidebar draws its controls: when a step is entered (a fresh link, a key, a
    button, the picker, or a move here from another page), set every scenario control to the
    step's. On a session's first run the link's own values win: the link reproduces the view.
    The learner's own scenario is kept on the way in and given back on the way out."""
    if not on_tour:
        st.session_state.pop(APPLIED, None)
        for key, value in st.session_state.pop(SAVED, {}).items():
            st.session_state[key] = value
        return
    try:
        t = steps()
    except tour.TourError:
        return   # the page says what is wrong
    number = current(t)
    if st.session_state.get(APPLIED) == number:
        return
    if SAVED not in st.session_state:
        st.session_state[SAVED] = learners_scenario()
    from_link = set(st.query_params) if first_run else set()
    for key, value in t.step(number).scenario_values().items():
        if key not in from_link:
            st.session_state[key] = value
    st.session_state[APPLIED] = number
    st.session_state[ENTRY] = st.session_state.get(ENTRY, 0) + 1


def learners_scenario() -> dict[str, object]:
    """Every scenario control's value as the learner left it: the sidebar's, else the link's,
    else its default."""
    link = controls.read_link({key: st.query_params.get_all(key) for key in st.query_params})
    return {key: st.session_state[key] if key in st.session_state
            else link.values.get(key, CONTROLS[key].default) for key in tour.SCENARIO_KEYS}


def kept_scenario_note(t: tour.Tour, step: tour.Step) -> None:
    """Say that the learner's own values (those off their defaults) come back when they leave,
    naming those the step changed (nothing to say where it changed none)."""
    saved = st.session_state.get(SAVED) or {}
    differs = [f"{CONTROLS[key].label}: {_shown(CONTROLS[key], value)}"
               for key, value in saved.items()
               if value != CONTROLS[key].default and value != step.scenario_values()[key]]
    if differs:
        st.caption(t.words["kept"].format(values=", ".join(differs)))


def _shown(control: controls.Control, value) -> str:
    if control.kind in ("int", "float"):
        return control.show(value)
    return ", ".join(value) if control.kind == "multi" else str(value)


def _go(number: int) -> None:
    t = steps()
    st.session_state[STEP] = min(max(number, 1), len(t.steps))


def _on_key() -> None:
    action = (st.session_state.get(KEYS) or {}).get("key")
    t = steps()
    now = current(t)
    if action == "next":
        _go(now + 1)
    elif action == "back":
        _go(now - 1)
    elif isinstance(action, str) and action.startswith("step-"):
        _go(int(action.removeprefix("step-")))


def _pick_changed() -> None:
    st.session_state[CONTROLS["budget"].key] = st.session_state[PICK]


# --- the page's parts ---------------------------------------------------------------------------
def navigation(t: tour.Tour, step: tour.Step) -> None:
    """Back, the step picker, Next and the keys on one line."""
    w = t.words
    steps_count = len(t.steps)
    st.html(NAVIGATION_CSS)
    _keys_component()(key=KEYS, data={"steps": steps_count}, on_key_change=_on_key)
    st.html("<style>.st-key-tour_keys { display: none; }</style>")   # keys only, draws nothing
    with st.container(horizontal=True, vertical_alignment="center", key="tour-navigation"):
        st.button(w["back"], icon=":material/arrow_back:", disabled=step.number == 1,
                  on_click=_go, args=(step.number - 1,), key="tour_back")
        st.segmented_control(w["pick_step"], list(range(1, len(t.steps) + 1)), key=STEP,
                             bind="query-params", required=True, default=controls.TOUR.default,
                             label_visibility="collapsed")
        st.button(w["next"], icon=":material/arrow_forward:", icon_position="right",
                  disabled=step.number == len(t.steps), on_click=_go, args=(step.number + 1,),
                  key="tour_next", type="primary")
        # on screen, not in a tooltip: a presenter needs them before anyone hovers
        st.caption(w["keys"].format(last=min(steps_count, tour.DIGIT_STEPS)))


def text(t: tour.Tour, step: tour.Step, fields: dict[str, str], truths: dict[str, float],
         s: Scenario) -> bool:
    """The step's words, its guess or exercise with their feedback, where to go deeper, and the
    keys; True once the step's reveal may play (a guess answered, or no guess)."""
    w = t.words
    guess = f"guess-{step.number}"
    st.header(f"{step.number}. {step.title}")
    kept_scenario_note(t, step)
    # on a projector the answer takes the place of the words that led to the question
    if not (presenter.on() and step.guess and st.session_state.get(guess) is not None):
        st.markdown(tour.render(step.text, fields), unsafe_allow_html=True)
    revealed = True
    if step.guess:
        st.markdown(tour.render(step.section("question"), fields), unsafe_allow_html=True)
        picked = st.radio(w["your_guess"], step.guess, index=None, horizontal=True, key=guess)
        revealed = picked is not None
        if revealed:
            right = step.guess.index(picked) == tour.nearest_choice(step, truths[step.truth])
            mark = (f":material/check_circle: **{w['right']}**" if right
                    else f":material/cancel: **{w['not_quite']}**")
            with st.container(border=True, key="tour-feedback"):
                st.markdown(f"{mark} {tour.render(step.section('reveal'), fields)}",
                            unsafe_allow_html=True)
    if step.exercise:
        exercise(t, step, fields, s)
    if not presenter.on():   # a projector's words column has no line to spare
        st.caption(w["chapter"].format(title=step.chapter_title()))
    for path in step.story_chapter().pages[:1]:
        page = story.BY_PATH[path]
        st.page_link(path, label=f"{w['deeper']}: {page.title}", icon=page.icon)
    if not presenter.on():   # for the teacher before class; a projector's column has no room
        handout_button(w)
    return revealed


def handout_button(w: dict[str, str]) -> None:
    """The printable handout, drawn when clicked (seconds, once per server). Sent as bytes to
    save: Streamlit does not hand out a page of HTML as a download."""
    st.download_button(w["handout"], _handout_page, file_name=HANDOUT_FILE,
                       mime="application/octet-stream", on_click="ignore",
                       icon=":material/print:", help=w["handout_help"], key="tour_handout")


@st.cache_data(max_entries=1, show_spinner=False)
def _handout_page() -> str:
    """The printable handout (ui/teach/handout.py), drawn once per server on the first click."""
    return handout.handout_html()


def exercise(t: tour.Tour, step: tour.Step, fields: dict[str, str], s: Scenario) -> None:
    """The largest-budget exercise: the pick is the sidebar's budget (the lanes follow it), and
    the verdict comes from the pick's run at once; a hint with the numbers to reason with, and
    the answer, on request."""
    w = t.words
    st.markdown(tour.render(step.section("question"), fields), unsafe_allow_html=True)
    st.session_state[PICK] = s.budget    # before the field: it shows the budget the lanes run
    budget = CONTROLS["budget"]
    st.number_input(w["budget"], min_value=int(budget.low), max_value=int(budget.high),
                    step=tour.TILE, key=PICK, on_change=_pick_changed,
                    help=w["budget_help"].format(tile=fields["tile"]))

    check = tour.check_budget(s, s.budget, step.target_s,
                              lambda b: tour.largest_gap(s, b, runs.lane_cards))
    said = fields | check.fields
    verdict = "impossible" if check.answer is None else check.verdict
    icon = {"over": ":material/cancel:", "under": ":material/arrow_upward:",
            "within": ":material/check_circle:", "impossible": ":material/block:"}[verdict]
    with st.container(border=True, key="tour-feedback"):
        st.markdown(f"{icon} {tour.render(step.section(verdict), said)}", unsafe_allow_html=True)
    if check.answer is None:
        return
    with st.container(horizontal=True, vertical_alignment="center", key="tour-exercise-tools"):
        with st.popover(w["show_hint"], icon=":material/lightbulb:"):   # over the page: no room taken
            st.markdown(tour.render(step.section("hint"), said), unsafe_allow_html=True)
        answer = st.toggle(w["show_answer"], key=f"answer-{step.number}")
    if answer:
        st.markdown(tour.render(step.section("answer"), said), unsafe_allow_html=True)


def timeline(step: tour.Step, s: Scenario, look: Look, moments: dict[str, float],
             revealed: bool, cards: tuple[list[words.Card], list[words.Card]]) -> None:
    """The two lanes at the step's moment, playing on to the next once revealed, its parts
    outlined; the four key numbers above them when the step points at them."""
    if tour.NUMBERS in step.highlight:
        st.html(HIGHLIGHT_CSS.format(ink=look.ink))
        runs.key_numbers(*cards, key="tour-numbers")
    start = moments[step.moment]
    play_to = moments[step.play] if step.play and revealed else None
    framing = Framing(start=start, play_to=play_to if play_to and play_to > start else None,
                      highlight=step.player_views(), keys="page",
                      until=None if revealed else start,
                      locked="" if revealed else steps().words["play_after_guess"])
    entry = st.session_state.get(ENTRY, 0)
    name = f"tour-{step.number}-{entry}-{'shown' if revealed else 'asked'}"
    player.player(s, look, controls.WINDOW.default, name, window_control=False, framing=framing,
                  notes=False, stage=True)


def burst_runs(s: Scenario) -> traffic.Served:
    """The under-load step's workload, BURST prompts of the scenario's length at once, under
    the two policies, run within the traffic pages' limits (a message and the page's end when
    it cannot run)."""
    t = tour.burst_traffic(s)
    return traffic.runs(t, s, t.workload(), tour.BURST_POLICIES, s.budget)


def burst(served: traffic.Served, look: Look) -> None:
    """The burst drawn as the Traffic page draws it, one bar per iteration as tall as it took,
    without its zoom ribbons; on a projector its two panels fill the screen's height, with
    nothing under them (the Traffic page has the downloads and the tables)."""
    r = presenter.room()
    width = max(320, (r.stage_width or presenter.FALLBACK_ROOM.stage_width) - BURST_SIDE_PX)
    panel_px = None
    if look.presenter:
        panel_px = max(BURST_PANEL_PX,
                       (presenter.height_left() - BURST_FIXED_PX) // len(tour.BURST_POLICIES))
    with st.container(key=presenter.STAGE):
        _burst_figure.draw("tour-burst", served.key, look, width, panel_px, served.traces,
                           tools=not look.presenter)


@cached_figure(max_entries=8)
def _burst_figure(key: tuple[str, ...], look: Look, width: int, panel_px: int | None,
                  _traces: dict[str, Trace]) -> Figure:
    return traffic_charts.traffic_timeline(traffic_charts.timeline_frame(_traces), look, width=width,
                                           overview=False, panel_px=panel_px)
