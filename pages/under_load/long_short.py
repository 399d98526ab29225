"""Long and short requests: a traffic mix served at two settings of one engine knob."""

import pandas as pd
import streamlit as st

from sim.serving.policies import get_policy
from sim.serving.workloads import MIXES
from sim.units import fmt_seconds
from ui.shell import controls, presenter, widgets
from ui.shell.controls import CONTROLS
from ui.shell.glossary import first, term
from ui.under_load import long_short
from ui.under_load import long_short_words as words

s = widgets.scenario()
look = widgets.look()

st.header("Long and short requests")
st.markdown(
    "A long prompt beside short ones: while its prefill fills the iterations, a short request "
    f"that arrives waits in the queue behind it, and its {first('ttft')} grows by that "
    "**head-of-line wait**, while the streams already running wait for each long iteration "
    f"(their {first('tbt')} grows). Engines ship knobs for it. Here one mix of request classes is "
    "served at two settings of one knob, at the sidebar's GPU, model, cost mode and token "
    f"{term('budget', 'budget')}.", unsafe_allow_html=True)
with st.container(border=True):
    cols = st.columns([3, 1, 1, 1])
    mix = widgets.widget(CONTROLS["mix"], cols[0])
    requests, qps, seed = (widgets.widget(CONTROLS[k], c)
                           for k, c in zip(("requests", "qps", "seed"), cols[1:]))
    cols = st.columns(3)
    vary = widgets.widget(controls.VARY, cols[0])
    threshold = widgets.widget(CONTROLS["threshold"], cols[1])
    budget2 = widgets.widget(controls.BUDGET2, cols[2])
    st.caption(f"**{controls.CONTROLS['mix'].name(mix)}**: {MIXES[mix].words()}; Poisson "
               f"arrivals at {qps:g} requests/s, random seed: {seed}.")

served_mix = long_short.workload(mix, requests, qps, seed)
short, long = words.short_and_long(served_mix)
if short == long:
    st.info(f"These {requests:,} requests hold one class only: more requests, so that the mix's "
            "long prompts are among them.", icon=":material/info:")
    st.stop()
profiles = {p: get_policy(p).profile for p in ("vllm-v1", "sglang")}
rows = words.knob_rows(s.budget, budget2, threshold,
                       {p: profile.budget(s.gpu) for p, profile in profiles.items()},
                       {p: profile.budget_flag.flag for p, profile in profiles.items()})
row = words.compared(vary, rows)
served = long_short.runs(s, served_mix, tuple(x for r in rows for x in (r.before, r.after)))
before, after = (long_short.measured(served, x) for x in (row.before, row.after))
said = words.claims(short, long, before[0], after[0], row)

st.subheader(f"{row.engine}: {row.flag} {row.values[0]} and {row.values[1]}")
with presenter.figure():
    long_short.draw(served, row.before, row.after, look)
st.caption(
    "Each setting: its iterations (a bar from an iteration's start to its end, as tall as it "
    "took; blue decode only, grey decode + prefill, orange prefill only), over a lane per class. "
    "In a lane, a grey line is a request's wait from its arrival to the first iteration that "
    "prefills it, and the orange shading marks the iterations that prefill another class's "
    "prompt: where a wait crosses the shading is its head-of-line wait. A teal tick is a "
    "request's first token. Spans of shading closer than one pixel are drawn as one.")
st.markdown("\n".join(f"- {c.text}." for c in said) + f"\n\n{words.verdict(said)}")

st.subheader("Per class, side by side")
widgets.table(pd.DataFrame({x.label: words.percentile_rows(short, long, m[0]) | {
    "every request: TBT p99": fmt_seconds(m[1].p99)} for x, m in
    ((row.before, before), (row.after, after))}))
st.caption("TTFT: a request's first token − its arrival. TBT: each gap between two successive "
           "tokens of a request of that class. HOL (head-of-line) wait: of a request's time from "
           "arrival to the first iteration that prefills it, the part spent in iterations that "
           "prefill another class's prompt (none: no such wait). Percentiles: linear "
           f"interpolation between ranked values, over {before[0][short].requests:,} {short} "
           f"and {before[0][long].requests:,} {long} requests.")

st.subheader("What each knob does")
cells = []
for r in rows:
    (b, tb), (a, ta) = (long_short.measured(served, x) for x in (r.before, r.after))
    cells.append(words.table_cells(r, short, long, b, a, tb, ta))
widgets.table(pd.DataFrame(cells).set_index("engine"))
st.caption(f"Each row: the engine run twice on this mix, at the sidebar's budget {s.budget:,} and "
           "its other defaults, once with the knob at the first value and once at the second; "
           "each cell is the two runs' numbers (one number: the same in both). "
           "The threshold and the second budget are the controls above.")
