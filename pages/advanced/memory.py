"""Memory: how much KV cache there is, how admission spends it, and what running out costs."""

import pandas as pd
import streamlit as st

from sim.errors import InputError
from sim.knobs import KNOBS
from sim.serving.metrics import summarize
from sim.serving.policies import POLICIES, Limits
from sim.studies.memory import (
    admission_rule,
    kv_capacities,
    kv_pressure,
    kv_usage,
    memory_steps,
)
from sim.units import fmt_bytes, fmt_seconds
from ui.shell import controls, presenter, widgets
from ui.shell.glossary import first
from ui.shell.scenario import Scenario, limits_with
from ui.under_load import memory, traffic, workload_box
from ui.under_load import words as traffic_words


def pipeline_stages(s: Scenario) -> None:
    """Each pipeline stage's weights and KV: where a model too large for one GPU fits."""
    with st.expander("Over pipeline stages: each stage's weights and KV"):
        stages = widgets.widget(controls.CONTROLS["pp"], width=260)
        try:
            rows, held, alone = memory.stage_rows(s.cost_model(), s.gpu, s.model, stages,
                                                  POLICIES[s.chunked], s.budget)
        except InputError as e:
            st.error(f"**Can't split this model:** {e}")
        else:
            if stages > 1:
                st.markdown(memory.stages_words(stages, s.tp, POLICIES[s.chunked], held, alone))
                widgets.table(pd.DataFrame(rows).set_index("stage"))
            else:
                st.markdown("With one stage, each GPU holds the whole model: the tables on this "
                            "page. Give more stages to split it.")


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
widgets.table(widgets.steps_frame(memory_steps(cost)).set_index("step"))
try:
    capacities = kv_capacities(cost, s.budget)
except InputError as e:
    st.error(f"**Can't fit this model:** {e}")
    pipeline_stages(s)
    st.stop()
widgets.table(pd.DataFrame([{
    "engine": c.policy.engine, "memory kept back (why)": c.kept_back,
    "KV capacity = memory × (1 − kept back) − weights": f"{c.bytes.substituted} = {c.bytes.display}",
    "in tokens = ⌊KV capacity / KV bytes per token⌋ in whole KV blocks":
        f"{c.tokens.substituted} = {c.tokens.display}" if c.fits else c.tokens.substituted}
    for c in capacities]).set_index("engine"))
st.caption(f"Sizes in GB, 10⁹ bytes, as the datasheets write them (an engine's own rule may count "
           f"in 2²⁰ and 2³⁰ bytes). The {s.gpu.name}'s datasheet says "
           f"{fmt_bytes(s.gpu.datasheet_bytes or s.gpu.memory_bytes)}; the engines size their KV "
           f"cache from what the device reports, {fmt_bytes(s.gpu.memory_bytes)}. Each engine "
           "keeps back its own share of memory for "
           "activations and CUDA graphs, SGLang's growing with its chunk (here the sidebar's "
           f"budget, {s.budget:,}), and allocates KV in whole blocks (the block is what the "
           "tokens are divided by and multiplied back): the runs below hold exactly these "
           "capacities.")

st.subheader("The source article's arithmetic, on this model")
prompts = widgets.widget(controls.TOGETHER, width=260)
pressure = kv_pressure(cost, prompts, s.prompt, s.decodes, s.context, s.budget)
widgets.table(widgets.steps_frame(pressure.steps).set_index("step"))
st.markdown(traffic_words.kv_pressure_story(pressure, prompts, s.prompt, s.decodes, s.context),
            unsafe_allow_html=True)

st.subheader("Admission on a workload")
st.markdown(
    "The sidebar's workload under each policy picked: how much KV cache it holds over time, and "
    "what running out costs: preempted requests lose their cache and are prefilled again, "
    f"work measured in {first('flop')}; the new requests' {first('ttft')} and the streams' "
    f"{first('tbt')} show who pays.", unsafe_allow_html=True)
t, workload = workload_box.show(s)
cols = st.columns([2, 1, 1.2])
picked = widgets.widget(controls.KV_PICK, cols[0])
eos = controls.CONTROLS[KNOBS["disable_ignore_eos"].key]   # SGLang's chat case, on a switch
knobs = {controls.PARTIALS.key: widgets.widget(controls.PARTIALS, cols[1]),
         eos.key: widgets.widget(eos, cols[2])}
asked = limits_with(Limits(), knobs)
partials = asked.max_concurrent_prefills
if not picked:
    st.info("Pick one or more policies.", icon=":material/checklist:")
    st.stop()
served = traffic.runs(t, s, workload, picked, s.budget, knobs)
traces = served.traces
traffic.notes(traces)
with presenter.figure():
    memory.kv.draw("kv-memory", served.key, cost.kv_bytes_per_token, look,
                   presenter.chart_width(look), traces)
st.caption(f"{t.words()}. Budget {s.budget:,}; {t.seats_words(picked, s)}; "
           + ("no cap on partial prefills" if partials is None else
              f"at most {partials:,} requests mid-prefill at once (chunked policies)")
           + ("; SGLang's requests may stop at EOS" if asked.disable_ignore_eos else
              "; SGLang's requests ignore EOS, as its benchmark sends them")
           + ". Long runs are drawn as time bins, each point the most KV in use in its bin "
             "(the peak is kept).")

usage = {p: kv_usage(traces[p], cost) for p in picked}
rows = []
for p in picked:
    u, m = usage[p], summarize(traces[p])
    rows.append({
        "policy": p, "admission": admission_rule(POLICIES[p], asked),
        "KV capacity": f"{u.capacity_tokens:,} tokens",
        "peak KV in use": f"{u.peak_used_tokens:,} tokens ({u.peak_fraction:.0%}, "
                          f"{fmt_bytes(u.peak_used_tokens * cost.kv_bytes_per_token)})",
        "most KV cached, nobody reads": "no prefix caching" if u.peak_cached_tokens is None else
        f"{u.peak_cached_tokens:,} tokens ({u.peak_cached_tokens / u.capacity_tokens:.0%})",
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
    "KV in use is a share of the policy's own KV capacity, its engine's in the table above. "
    "Most KV cached, nobody reads: with prefix caching (on as vLLM V1 and SGLang ship it), "
    "the KV of finished requests' full blocks no running request reads, at its most at an "
    "iteration's end, as a share of the same capacity; it counts as free, and is evicted least "
    "recently used first when a block is needed (the Prefix caching page shows it over time).")

st.markdown("To watch memory run out, serve the Poisson traffic (ShareGPT-like lengths by "
            "default) on a 24 GB GPU; the KV capacity table above shows how little is left "
            "beside the weights.")
st.button("Poisson traffic on a 24 GB L4", key="kv_l4", icon=":material/memory:",
          on_click=widgets.set_controls(gpu="l4", workload="poisson"))
pipeline_stages(s)
