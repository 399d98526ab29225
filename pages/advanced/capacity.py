"""Capacity: the highest request rate a chunked and an unchunked policy sustain within the SLOs."""

import pandas as pd
import streamlit as st

from sim.presets.models import MODELS
from sim.serving.policies import POLICIES
from sim.studies.capacity import (
    CURVE_POINTS,
    DELAY_SLO_S,
    MAX_RUNS,
    REL_TOL,
    SLO_PRESETS,
)
from sim.studies.worked_example import SARATHI_SERVE, SARATHI_SERVE_URL
from sim.units import fmt_seconds
from ui.shell import controls, presenter, widgets
from ui.shell.controls import CUSTOM
from ui.shell.glossary import first
from ui.shell.jobs import kept_or_on_click
from ui.under_load import capacity, overhead, workload_box

s = widgets.scenario()
look = widgets.look()

st.header("Capacity")
st.markdown(
    f"Chunking lets a {first('llm')} server run hotter within its latency targets. The "
    "Sarathi-Serve paper "
    f"([{SARATHI_SERVE}]({SARATHI_SERVE_URL})) measures it as "
    f"**capacity**: the highest Poisson request rate at which the p99 {first('tbt')}, the gap "
    f"between two tokens, meets the {first('slo')} *and* the median scheduling delay (arrival to "
    "the first iteration that runs the "
    f"request) is at most a bound ({DELAY_SLO_S:g} s in the paper); past capacity the queue "
    "grows without bound. The search starts at the compute ceiling (requests / the compute "
    "time of all their work, which no schedule beats), halves the rate until one passes, then "
    f"bisects to within {REL_TOL:.0%}. It runs the sidebar's "
    f"chunked policy (**{s.policy_label(s.chunked)}**, budget {s.budget:,}) and its unchunked "
    f"one (**{s.policy_label(s.unchunked)}**).", unsafe_allow_html=True)
t, workload = workload_box.show(s, capacity=True)
cols = st.columns(3)
preset = widgets.widget(controls.SLO, cols[0])
if preset == CUSTOM:
    tbt_slo_s = widgets.widget(controls.TBT_SLO, cols[1]) / 1e3
else:
    chosen = SLO_PRESETS[preset]
    tbt_slo_s = chosen.tbt_slo_s
    cols[1].markdown(f"P99 TBT SLO **{fmt_seconds(tbt_slo_s)}**, the Sarathi-Serve paper's for "
                     f"{MODELS[chosen.model].name}.")
delay_slo_s = widgets.widget(controls.DELAY_SLO, cols[2])
if preset != CUSTOM and s.model.id != SLO_PRESETS[preset].model:
    model = MODELS[SLO_PRESETS[preset].model]
    note, button = st.columns([2, 1], vertical_alignment="center")
    note.caption(f"This SLO is set for {model.name} (Sarathi-Serve ran Mistral-7B on one "
                 "A100-80GB and Yi-34B on two); the sidebar's model is "
                 f"{s.model.name}, whose decode iterations are faster or slower.")
    button.button(f"Use {model.name}", key="use_slo_model", icon=":material/swap_horiz:",
                  help="Sets the sidebar's model, and the GPU to an A100-80GB.",
                  on_click=widgets.set_controls(model=model.id, gpu="a100-80gb"))

query = capacity.capacity_query(t, s, workload, tbt_slo_s, delay_slo_s)
view = kept_or_on_click(
    capacity.stored_capacity(query), lambda: capacity.capacity_estimate(query),
    f"Up to {MAX_RUNS} runs per policy for the search and {CURVE_POINTS} for each curve, each "
    f"simulating {t.requests:,} requests", "Find the capacity", "find_capacity",
    lambda: capacity.find_capacity(query))


def show(view) -> None:
    """The search's result: both capacities, their ratio, the runs."""
    ours, theirs = view.comparison.policy, view.comparison.baseline
    ratio = view.comparison.ratio
    cols = st.columns(3)
    engine = {r.policy: POLICIES[r.policy].engine for r in (ours, theirs)}
    for col, r in zip(cols, (ours, theirs)):
        col.metric(f"{engine[r.policy]} capacity",
                   "—" if r.undefined else f"{r.capacity_qps:.3g} requests/s", border=True,
                   help=r.reason)
    cols[2].metric("Capacity ratio", "undefined" if ratio is None else f"{ratio:.2f}×", border=True,
                   help=f"{engine[ours.policy]} capacity / {engine[theirs.policy]} capacity"
                        + ("" if ratio is None else f" = {ours.capacity_qps:.4g} / "
                                                     f"{theirs.capacity_qps:.4g}"))
    st.markdown("".join(f"- **{POLICIES[r.policy].label}**: {r.reason}.\n" for r in (ours, theirs))
                + "".join(f"- {r.cut_short_words()}.\n" for r in (ours, theirs) if r.cut_short)
                + f"- Ratio = {engine[ours.policy]} capacity / {engine[theirs.policy]} capacity"
                + (f" (undefined: {view.comparison.why_no_ratio})." if ratio is None else
                   f" = {ours.capacity_qps:.4g} / {theirs.capacity_qps:.4g} = **{ratio:.2f}×**. "
                   + capacity.paper_words(preset)))
    st.caption(f"Budgets: {engine[ours.policy]} {ours.budget:,} (the sidebar's); {engine[theirs.policy]} "
               f"{theirs.budget:,}"
               + (" (vLLM V0's max(max_model_len, 2048), with the longest request as max_model_len)"
                  if theirs.budget != s.budget else "")
               + f"; {query.traffic.seats_words((ours.policy, theirs.policy), s)}. Compute ceiling "
               f"{ours.ceiling_qps:.3g} requests/s. {t.poisson_words()}.")

    with presenter.figure():
        capacity.figure.draw("capacity", query, look, view)
    st.caption(f"Each point is one run of the workload at that rate: the search's rates and "
               f"{CURVE_POINTS} evenly spaced ones up to the compute ceiling. Filled: meets both "
               "SLOs; hollow: misses one. Dashed verticals: each policy's capacity. p99 TBT is the "
               "99th percentile of every gap between two tokens in the run; the delay is the median "
               "over requests of (first scheduled − arrival).")

    rows = [{"policy": r.policy, "rate (requests/s)": f"{p.qps:.4g}",
             "p99 TBT": fmt_seconds(p.p99_tbt_s), "median delay": fmt_seconds(p.median_delay_s),
             "meets both": "yes" if p.sustained else "no"}
            for r in (ours, theirs)
            for p in sorted((*r.points, *view.curves[r.policy]), key=lambda p: p.qps)]
    with st.expander("Every run"):
        widgets.table(pd.DataFrame(rows).set_index("policy"))
    overhead.capacity(query, view)   # last: it waits for its own button


if view is not None:
    show(view)
