"""Disaggregation: prefill on some GPUs, decode on others, against chunked prefill colocated on
the same GPUs; the KV hand-offs on one time axis, the transfer worked out, and goodput."""

import pandas as pd
import streamlit as st

from sim.presets.links import FREE_LINK, LINKS
from sim.serving.policies import POLICIES
from sim.studies.capacity import MAX_RUNS, GoodputSlo
from sim.units import fmt_seconds
from ui.across_gpus import disaggregation as page
from ui.across_gpus import disaggregation_words as words
from ui.shell import presenter, widgets
from ui.shell.controls import CONTROLS
from ui.shell.glossary import first, term
from ui.shell.jobs import kept_or_on_click

s = widgets.scenario()
look = widgets.look()

st.header("Disaggregation")
st.markdown(
    f"Chunked prefill keeps prompts and decodes in one batch on each GPU. Its rival, "
    f"**{term('disaggregation')}**, gives them GPUs of their own: a "
    f"{term('prefill_pool')} computes each prompt and its first token, then the prompt's "
    f"{first('kv')} cache crosses a link to a {term('decode_pool')} that emits the rest (a "
    f"{term('kv_transfer')}). No decode ever waits for a prompt's chunk; the price is the "
    "transfer, and GPUs that each do one kind of work. Here one workload is served both ways on "
    f"the same GPUs, with the sidebar's chunked policy (**{s.policy_label(s.chunked)}**, budget "
    f"{s.budget:,}) in every instance, and judged by the kind of targets DistServe sets (per "
    f"application): one for the {first('ttft')} and one for the {first('tpot')}, a request's "
    "mean gap between tokens; here the two target boxes below set them.",
    unsafe_allow_html=True)
with st.container(border=True):
    prefill_gpus, decode_gpus, prefill_tp, decode_tp = (
        widgets.widget(CONTROLS[k], c) for k, c in
        zip(("prefillgpu", "decodegpu", "ptp", "dtp"), st.columns(4)))
    link_choice, layerwise, ttft_slo, tpot_slo = (
        widgets.widget(CONTROLS[k], c) for k, c in
        zip(("kvlink", "layerwise", "ttftslo", "tpotslo"), st.columns([1.5, 1.5, 1, 1])))
    requests, qps, output, seed = (
        widgets.widget(CONTROLS[k], c) for k, c in
        zip(("requests", "qps", "olen", "seed"), st.columns(4)))
link = page.link_for(s, link_choice)
setup = page.Setup(s, requests, qps, output, seed, prefill_gpus, decode_gpus, link.id, layerwise,
                   prefill_tp, decode_tp)
slo = GoodputSlo(ttft_slo, tpot_slo / 1e3)
st.caption(f"{requests:,} requests of {s.prompt:,} prompt tokens (the sidebar's prompt) and "
           f"{output:,} output tokens, Poisson arrivals at {qps:g} requests/s (random seed: "
           f"{seed}); {s.model.name} on {s.gpu.name}, {s.mode} cost model. "
           + words.setups_words(prefill_gpus, decode_gpus, prefill_tp or s.tp, decode_tp or s.tp,
                                s.tp, POLICIES[s.chunked].engine))

served = page.runs(setup)
trace = served.trace
d = words.outcome(words.DISAGGREGATED, setup.gpus, [trace], slo)
c = words.outcome(words.COLOCATED, setup.gpus, served.colocated, slo)

st.subheader("Both setups on one time axis")
with presenter.figure():
    page.draw_lanes(served, look)
st.caption(
    "Each lane is one instance: a bar per iteration from its start to its end, as tall as it "
    "took (blue decode only, grey decode + prefill, orange prefill only; on a prefill GPU no "
    "decode waits for it). A dark line is a KV hand-off: from the prefill lane where the "
    "prompt's prefill ended to the decode lane where its KV arrived and its first token "
    "reached the user (hover for the transfer's arithmetic). Play replays the run, the teal "
    "line its clock: what has not begun by then is faint. Drag sideways to pan, scroll to "
    "zoom; every lane follows. Long runs are drawn as time bins, each as tall as its longest "
    "iteration.")
said = [words.verdict(d, c, slo, qps), words.why(d, slo), words.why(c, slo),
        *words.causes(trace, d, c), words.prefill_rate_words(trace, s.prompt, qps),
        words.link_words(trace, d)]
st.markdown("\n".join(f"- {x}" for x in said if x), unsafe_allow_html=True)
st.caption(f"Meeting both targets: a request's TTFT (its first token − its arrival; "
           "disaggregated, the first token comes once its KV has arrived) ≤ the TTFT target and "
           "its TPOT ((last token − first token) / (tokens − 1)) ≤ the TPOT target; a share is "
           "such requests / all requests. p90: linear interpolation between ranked values. Busy: "
           f"the pool's iteration time / (its instances × the run's {term('makespan')}, its "
           "first arrival → the end of its last iteration). Waits: arrival → first chunk "
           "(prefill pool), prefill done → the decode GPU takes it (decode pool). Transfer: the "
           "KV's arrival − its send's start.", unsafe_allow_html=True)

st.subheader("One hand-off, worked out")
sender = setup.sender_cost()
sum_ = words.arithmetic(s.prompt, sender, link)
st.markdown(f"The sidebar's {s.prompt:,}-token prompt, {s.model.name}, over "
            f"{link.name}:\n\n" + "\n".join(f"1. {line}" for line in sum_.lines(sender))
            + ("\n\nSent layer by layer (the box above), only max(time / layers, time − the "
               "prompt's prefill) is left once the prefill ends, where the decode GPU took the "
               "prompt at once; one that waited for it pays the whole transfer."
               if layerwise else ""))
with st.expander("The links and their sources"):
    widgets.table(pd.DataFrame(
        [{"link": x.name, "one way": f"{x.bandwidth / 1e9:,.1f} GB/s", "latency":
          fmt_seconds(x.latency_s), "source": x.source} for x in LINKS.values()]
        + [{"link": FREE_LINK.name, "one way": "unbounded", "latency": fmt_seconds(0),
            "source": FREE_LINK.source}]).set_index("link"))

st.subheader("Goodput on the same GPUs")
st.markdown(
    f"DistServe compares the two setups by {term('goodput')}: the highest Poisson rate at which "
    f"at least {slo.share:.0%} of requests meet both targets, TTFT ≤ {fmt_seconds(slo.ttft_s)} "
    f"and TPOT ≤ {fmt_seconds(slo.tpot_s)}. The search starts at the compute ceiling of all "
    f"{setup.gpus} GPUs, halves the rate until one passes, then bisects, for each setup.",
    unsafe_allow_html=True)
query = page.GoodputQuery(setup, slo)
found = kept_or_on_click(page.stored_goodput(query), lambda: page.goodput_estimate(query),
                         words.search_size_words(MAX_RUNS, requests, *setup.instance_counts()),
                         "Find the goodput", "find_goodput", lambda: page.find_goodput(query))
if found is not None:
    st.markdown(words.goodput_words(found, requests))
    page.goodput_figure.draw("disaggregation-goodput", query, look, found)
    st.caption("Each point is one run of the workload at that rate, all GPUs together: the "
               "share of its requests that meet both targets (a square: at least the share "
               "goodput asks for, the dashed line; a circle: fewer). A dotted vertical is a setup's goodput; "
               "per GPU, divide it by the setup's GPUs.")
    st.markdown("".join(f"- {x}\n" for x in words.search_outcomes(
        found, s.policy_label(s.chunked), prefill_gpus, decode_gpus, setup.gpus // s.tp,
        s.tp)))
