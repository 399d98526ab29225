"""Traffic: one workload served by two or more policies side by side."""

import streamlit as st

from charts.traffic import CDF_POINTS
from sim.serving.metrics import summarize
from sim.serving.policies import POLICIES
from sim.studies.stalls import STALL_S, STALL_SOURCE
from sim.studies.worked_example import worked_example
from sim.units import fmt_seconds
from ui.shell import controls, presenter, widgets
from ui.shell.glossary import first, term
from ui.under_load import traffic, workload_box
from ui.under_load import words as traffic_words
from ui.under_load.percentile_words import percentile_words

s = widgets.scenario()
look = widgets.look()

st.header("Traffic")
st.markdown(
    "One prompt beside a few streams shows the stall; real servers see a stream of requests. "
    "Here a whole workload (a burst of long prompts, random Poisson arrivals, or your own trace) "
    "is served by each policy you pick, at the sidebar's token budget, GPU, model and cost mode. "
    f"Chunking should keep the {first('tbt')}, the gap between two tokens, short for every "
    f"stream; what it costs in {first('ttft')} depends on the load. The table leads with the "
    f"stall: the largest gap and how many gaps {term('stall', 'froze')} a stream.",
    unsafe_allow_html=True)
t, workload = workload_box.show(s)
picked = widgets.widget(controls.PICK)
if not picked:
    st.info("Pick two or more policies to compare.", icon=":material/checklist:")
    st.stop()
served = traffic.runs(t, s, workload, picked, s.budget)
traces = served.traces
view = traffic.frames(served.key, traces)
st.caption(f"{t.words()}. {s.model.name} on {s.gpu.name}, {s.mode} cost model, token budget "
           f"{s.budget:,} (unchunked policies never split a prompt: for them the budget only "
           "caps how many whole prompts share an iteration, the first always fits); "
           f"{t.seats_words(picked, s)}."
           + ("" if len(picked) > 1 else " Add a second policy to compare."))
traffic.notes(traces)

if t.kind == "burst":
    st.subheader("The burst drain")
    example = worked_example(**{**s.worked_example_inputs(s.budget), "burst": t.burst})
    summaries = {p: summarize(traces[p]) for p in picked}
    story, caption = traffic_words.burst_story(
        next(x for x in example.steps if x.key == "burst_last_ttft_s"),
        {p: summaries[p].ttft_s.max for p in picked}, {p: summaries[p].tbt_s.max for p in picked},
        {p: POLICIES[p].chunked for p in picked}, t.burst, s.budget, s.decodes, s.mode)
    st.markdown(story, unsafe_allow_html=True)
    if caption:
        st.caption(caption)

st.subheader("Latency, side by side")
st.markdown(f"Per policy: the stall first, then the percentiles of TTFT, TBT and "
            f"{first('tpot')}, each request's mean gap, and the throughput.", unsafe_allow_html=True)
widgets.table(view.table)
st.caption(
    f"Stalls: gaps longer than {fmt_seconds(STALL_S)} ({STALL_SOURCE}); the percentiles "
    "(linear interpolation between ranked values) hide them, since each hits a stream once among "
    "hundreds of gaps. TTFT: each new request's first token − its arrival (queue wait + prefill). "
    "TBT: every gap between two successive tokens of one request, the streams' gaps included. "
    "TPOT: a request's mean gap, (last token − first token) / (tokens − "
    "1), for requests with two tokens or more. Throughput: output tokens / makespan.")
st.markdown("**When a freeze shows in p50, p99 and the max gap.** The p99 is the gap that 99% of "
            "all gaps are at most, so a freeze moves it only when freezes are more than about 1% "
            "of the gaps, and the p50 only when they are half; the max moves with a single one.\n"
            + "\n".join(f"- {percentile_words(POLICIES[p].label, view.stalls[p])}"
                        for p in picked))

st.subheader("Every iteration")
with presenter.figure():
    traffic.draw("timeline", served, look)
for name, bin_ms in view.timeline.bin_ms.items():
    if bin_ms is not None:
        st.caption(f"{name}: {view.timeline.iterations[name]:,} iterations drawn as time bins of "
                   f"{bin_ms:,.3g} ms, each as tall as its longest iteration (an iteration "
                   "longer than a bin keeps its own bar), to keep the page light. Drag on the "
                   "ribbons to zoom; every metric uses every iteration.")
st.caption("A bar spans an iteration's start to its end and is as tall as it took. Every "
           "running request waits for the whole of each iteration: a tall orange bar "
           "(prefill only) is a stall for every stream; chunked policies keep every bar near "
           "the budget's time.")

st.subheader("Distributions")
for column, name in zip(st.columns(2), ("ttft", "gaps")):
    with column:
        traffic.draw(name, served, look)
st.caption(f"Left, the {first('cdf', hover=False)} of TTFT: a point (x, y) says a fraction y of "
           "the values are ≤ x. Right, the gaps' tail: a point (x, y) says a share y of all gaps "
           "is at least x, on a log scale so that one freeze among thousands of short gaps stays "
           "in sight (the dashed line: a freeze). Where a curve crosses the dotted p50 and p99 "
           "lines is that policy's median and 99th percentile, the table's numbers. Identical "
           f"curves lie on top of each other. Curves are drawn through at most {CDF_POINTS} of "
           "their values (every point drawn is exact), the gaps' tail in detail.")

st.subheader("Where each request's time goes")
split = view.split
means = split.means.set_index("policy")
st.markdown("Per new request: **queue wait** (arrival to the start of its first prefill "
            "iteration) + **prefill** (to its first token) + **decode** (to its last token) = "
            "arrival to last token. Means over all "
            f"{split.total:,} new requests: "
            + "; ".join(f"**{POLICIES[p].label}** {fmt_seconds(r.queue_s)} + {fmt_seconds(r.prefill_s)} + "
                        f"{fmt_seconds(r.decode_s)} = "
                        f"{fmt_seconds(r.queue_s + r.prefill_s + r.decode_s)}"
                        for p, r in means.iterrows()) + ".")
traffic.draw("split", served, look)
if split.every > 1:
    st.caption(f"Every {split.every}th new request is drawn ({len(split.requests) // len(picked):,} "
               f"of {split.total:,} per policy), to keep the page light; the means use them all.")
