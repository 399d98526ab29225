"""Guided tour: the story as steps a teacher presents (ui/teach/tour_view.py; each step's text in
tour/en/NN-name.md). Each step sets the controls, opens the figure at the moment it explains and
points at it, and waits; a guess comes before its reveal, an exercise answers at once."""

import streamlit as st

from ui.learn import runs
from ui.shell import widgets
from ui.shell.controls import WINDOW
from ui.teach import tour, tour_view

try:
    t = tour_view.steps()
except tour.TourError as e:
    st.error(f"**The tour's files cannot be read:** {e}", icon=":material/error:")
    st.stop()
step = t.step(tour_view.current(t))
tour_view.navigation(t, step)   # first: a scenario that cannot run still lets the tour move on
s = widgets.scenario()
look = widgets.look()
words_column, figure_column = st.columns([1, 2])
with figure_column:
    figure_area, notes_area = st.container(), st.container()
if step.view == "burst":
    with notes_area:   # the runs' notes (a lane at its own budget) after the figure: the step opens with its question
        served = tour_view.burst_runs(s)
    numbers = tour.burst_numbers(s, served.traces)
else:
    unchunked, chunked = runs.lanes(s)
    numbers = tour.lane_numbers(s, unchunked, chunked)
fields = tour.step_fields(step, numbers)

with words_column:
    revealed = tour_view.text(t, step, fields, numbers.values, s)
with figure_area:
    if step.view == "burst":
        if revealed:   # the chart to read would give the answer away
            tour_view.burst(served, look)
        else:
            st.caption(t.words["chart_after_guess"])
    else:
        tl = runs.timeline_view(s, WINDOW.default)
        tour_view.timeline(step, s, look, tour.moments(unchunked, chunked, tl.t_max), revealed,
                           (runs.lane_cards(s, s.unchunked), runs.lane_cards(s, s.chunked)))
