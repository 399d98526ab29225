"""Memory: how much KV cache there is, how admission spends it, and what running out costs."""

import pandas as pd
import streamlit as st

from sim.errors import InputError
from sim.serving.metrics import summarize
from sim.serving.policies import POLICIES, Limits
from sim.studies.memory import (
    admission_rule,
    kv_pressure,
    kv_usage,
    memory_budget,
    reserves_in_words,
)
from sim.units import fmt_bytes, fmt_seconds
from ui.shell import controls, widgets
from ui.shell.glossary import first
from ui.shell.scenario import limits_with
from ui.under_load import memory, traffic, workload_box
from ui.under_load import words as traffic_words

s = widgets.scenario()
look = widgets.look()
cost = s.cost_model()

st.header("Memory")
st.markdown(
    f"Every token a request holds keeps its attention keys and values, its {first('kv')} cache, "
    "in GPU memory, for every layer, until the request finishes. What is left beside the "
    "weights bounds how many requests run at once, and a scheduler must decide when to admit a "
    "prompt: reserve its KV up front, or take it chunk by chunk and risk running out halfway.",
    unsafe_allow_html=True)
st.subheader(f"KV capacity: {s.model.name} on {s.gpu.name}")
try:
    widgets.table(widgets.steps_frame(memory_budget(cost)).set_index("step"))
except InputError as e:
    st.error(f"**Can't fit this model:** {e}")
    st.stop()
st.caption("Sizes in GB, 10⁹ bytes, as the datasheets write them. The reserve here is vLLM V0's "
           "default gpu_memory_utilization = 0.9: a tenth of memory for activations and CUDA "
           "graphs. Each engine's runs keep back their own: " + reserves_in_words(cost, s.budget)
           + ".")

st.subheader("The source article's arithmetic, on this model")
prompts = widgets.widget(controls.TOGETHER, width=260)
pressure = kv_pressure(cost, prompts, s.prompt, s.decodes, s.context)
widgets.table(widgets.steps_frame(pressure).set_index("step"))
st.markdown(traffic_words.kv_pressure_story(pressure, prompts, s.prompt, s.decodes, s.context),
            unsafe_allow_html=True)

st.subheader("Admission on a workload")
st.markdown(
    "The sidebar's workload under each policy picked: how much KV cache it holds over time, and "
    "what running out costs: preempted requests lose their cache and are prefilled again, "
    f"work measured in {first('flop')}; the new requests' {first('ttft')} and the streams' "
    f"{first('tbt')} show who pays.", unsafe_allow_html=True)
t, workload = workload_box.show(s)
cols = st.columns([2, 1])
picked = widgets.widget(controls.KV_PICK, cols[0])
knobs = {controls.PARTIALS.key: widgets.widget(controls.PARTIALS, cols[1])}
partials = limits_with(Limits(), knobs).max_concurrent_prefills
if not picked:
    st.info("Pick one or more policies.", icon=":material/checklist:")
    st.stop()
served = traffic.runs(t, s, workload, picked, s.budget, knobs)
traces = served.traces
traffic.notes(traces)
memory.kv.draw("kv-memory", served.key, cost.kv_bytes_per_token, look, traces)
st.caption(f"{t.words()}. Budget {s.budget:,}; {t.seats_words(picked, s)}; "
           + ("no cap on partial prefills" if partials is None else
              f"at most {partials:,} requests mid-prefill at once (chunked policies)")
           + ". Long runs are drawn as time bins, each point the most KV in use in its bin "
             "(the peak is kept).")

usage = {p: kv_usage(traces[p], cost) for p in picked}
rows = []
for p in picked:
    u, m = usage[p], summarize(traces[p])
    rows.append({
        "policy": p, "admission": admission_rule(POLICIES[p]),
        "peak KV in use": f"{u.peak_used_tokens:,} tokens ({u.peak_fraction:.0%}, "
                          f"{fmt_bytes(u.peak_used_tokens * cost.kv_bytes_per_token)})",
        "preemptions": f"{u.preemptions:,} ({u.preempted_requests:,} requests)",
        "recomputed tokens": f"{u.recomputed_tokens:,}",
        "work wasted": u.wasted.display,
        "p50 / p99 TTFT": f"{fmt_seconds(m.ttft_s.p50)} / {fmt_seconds(m.ttft_s.p99)}",
        "p99 TBT": fmt_seconds(m.tbt_s.p99)})
widgets.table(pd.DataFrame(rows).set_index("policy"))
wasted = usage[picked[0]].wasted
st.caption(
    f"Work wasted = {wasted.formula} (for {picked[0]}: {wasted.substituted}); a lower bound, "
    "counting the weights' FLOPs only. A preempted request loses its KV and goes back to the "
    "head of the queue; its prompt and the tokens it had generated are prefilled again. Peak "
    f"KV in use is out of the capacity of {usage[picked[0]].capacity_tokens:,} tokens.")

st.markdown("To watch memory run out, serve the Poisson traffic (ShareGPT-like lengths by "
            "default) on a 24 GB GPU; the KV capacity table above shows how little is left "
            "beside the weights.")
st.button("Poisson traffic on a 24 GB L4", key="kv_l4", icon=":material/memory:",
          on_click=widgets.set_controls(gpu="l4", workload="poisson"))
