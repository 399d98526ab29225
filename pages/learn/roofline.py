"""Roofline: where each iteration sits on the GPU's roofline, and which budget meets a TPOT target."""

import pandas as pd
import streamlit as st

from sim.errors import InputError
from sim.serving.engine import kv_capacity_tokens
from sim.units import fmt_bytes, fmt_flops, fmt_seconds
from ui.learn import roofline_words, runs, words
from ui.shell import controls, presenter, widgets
from ui.shell.glossary import first
from ui.under_load import sweep

s = widgets.scenario()
try:
    kv_capacity_tokens(s.cost_model())   # the weights must fit, as on the pages that simulate
except InputError as e:
    st.error(f"**Can't build this scenario:** {e}")
    st.stop()
look = widgets.look()
gpu = s.gpu

st.header("Roofline")
st.markdown(roofline_words.roofline_intro(s.cost_model(), s.decodes, s.context, s.prompt,
                                          s.budget, s.model.name, s.mode, s.tp),
            unsafe_allow_html=True)

st.markdown(f"The streams must keep a pace: a {first('tpot')} target, the longest an iteration "
            "may take. Points and budgets below are priced against it.", unsafe_allow_html=True)
tpot_ms = widgets.widget(controls.TPOT, width=340)
tpot_s = float(tpot_ms) / 1e3
plan, figures = runs.roofline_view(s, tpot_s, look)
roof_spec, curve_spec, tile_spec = runs.roofline_specs(s, tpot_s, look)

with presenter.figure():
    widgets.chart(roof_spec, lambda: figures.roof, "roofline")
other = runs.comparison(s)
other_plan = runs.plan(other, tpot_s) if other else None
calibrated = s.mode == "calibrated"
costs = [it.cost for it in plan.iterations]
allreduce = any(c.allreduce_s for c in costs)
overhead = any(c.overhead_s for c in costs)
# the time's terms; the first is IterationCost.kernels_s: the roofline's max, or calibrated the
# kernels one after another
time = "time = " + " + ".join(["kernels" if calibrated else "max"] + ["all-reduce"] * allreduce
                              + ["overhead"] * overhead)
compute, memory = (("compute (achievable)", "memory (achievable)") if calibrated else
                   ("compute = FLOPs / peak", "memory = bytes / bandwidth"))


def timed(seconds: float) -> words.Card:
    return words.Card("time", fmt_seconds(seconds), "", seconds)


rows = []
for it, c in zip(plan.iterations, costs):
    row = {"iteration": it.label, "FLOPs": fmt_flops(c.flops), "bytes": fmt_bytes(c.bytes),
           "intensity = FLOPs / bytes": f"{c.intensity:,.4g} FLOP/B",
           compute: fmt_seconds(c.compute_s), memory: fmt_seconds(c.memory_s)}
    if calibrated:
        row["kernels (in sequence, soft ridge, floors)"] = fmt_seconds(c.kernels_s)
    if allreduce:
        row["all-reduce"] = fmt_seconds(c.allreduce_s)
    if overhead:
        row["overhead"] = fmt_seconds(c.overhead_s)
    row[time] = fmt_seconds(c.time_s)
    if other_plan:
        t = {o.key: o.cost.time_s for o in other_plan.iterations}[it.key]
        row[f"time ({other.mode})"] = fmt_seconds(t)
        row[f"{other.mode} − {s.mode}"] = words.card_delta(timed(t), timed(c.time_s)) or "0"
    rows.append(row | {"bound": c.bound})
widgets.table(pd.DataFrame(rows).set_index("iteration"))
st.caption(f"{s.mode} mode: an iteration costs {s.cost_rule}."
           + (" So the points sit below the roof: the roofline is what no kernel beats."
              if calibrated or allreduce else " Each point sits on the roof: FLOPs / time = "
              "min(peak, bandwidth × intensity).")
           + (f" The {other.mode} time prices the same iteration "
              f"{other.cost_rule}." if other_plan else ""))
if calibrated or other_plan:
    st.page_link("pages/advanced/fidelity.py", icon=":material/fact_check:",
                 label="Why the calibrated time exceeds the roofline, factor by factor: How close "
                       "is this to a real GPU?")
if s.starves:
    st.warning(f"Budget {s.budget:,} ≤ {s.decodes:,} decodes: no chunk, so the chunk and fused "
               "points are left out.")

st.subheader("Which budget? The Sarathi-Serve recipe")
st.markdown(
    "Price one iteration as a function of its batch tokens, then take the **largest budget whose "
    "iteration still meets the TPOT target**: decodes never wait longer than one iteration, and "
    "each iteration carries as much of the prompt as the target allows. Each point below is "
    f"every decode ({s.decodes:,} at {s.context:,} tokens of context) plus a chunk of "
    "budget − decodes tokens, priced as the prompt's *last* chunk (it attends to everything "
    "before it: the costliest chunk, so the budget holds for every chunk).")
widgets.chart(curve_spec, lambda: figures.curve, "budget-curve")

decode_only = s.decodes + 1
if plan.largest is None:
    st.error(f"No budget meets {fmt_seconds(tpot_s)}: even the decodes plus one prompt token "
             f"({decode_only:,} tokens) take longer. Fewer decodes, a faster GPU or a looser target.")
elif plan.largest >= s.decodes + s.prompt:
    st.success(f"The whole prompt fits in one iteration within {fmt_seconds(tpot_s)}: any budget "
               f"≥ {s.decodes + s.prompt:,} (decodes + prompt) meets the target.")
else:
    row = plan.markers.set_index("kind").loc["largest within target"]
    st.success(f"Largest budget within {fmt_seconds(tpot_s)}: **{plan.largest:,} tokens** "
               f"(decodes {s.decodes:,} + chunk {plan.largest - s.decodes:,}), one iteration "
               f"{row.time_ms:,.4g} ms; one token more would exceed the target.")
st.subheader(roofline_words.tiles_heading(s.cost_model()))
st.markdown(roofline_words.tiles_words(s.cost_model(), s.decodes, s.context, s.prompt, s.budget,
                                       plan.largest, tpot_s), unsafe_allow_html=True)
if tile_spec:
    widgets.chart(tile_spec, lambda: figures.tiles, "tile-steps")
if other_plan:
    largest = other_plan.largest
    if largest is None:
        words = "no budget meets it"
    elif largest >= s.decodes + s.prompt:
        words = f"any budget ≥ {largest:,} (decodes + prompt) meets it"
    else:
        words = f"the largest budget that meets it is **{largest:,} tokens**"
    if largest is not None and plan.largest is not None and largest != plan.largest:
        words += f", {largest - plan.largest:+,} against the {s.mode} mode's {plan.largest:,}"
    st.info(f"The {other.mode} mode, same target of {fmt_seconds(tpot_s)}: {words}.",
            icon=":material/compare_arrows:")
st.markdown(sweep.engine_defaults_words(gpu))
