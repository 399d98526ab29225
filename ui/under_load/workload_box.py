"""The workload box atop every traffic page (Traffic, Budget trade-off, Capacity, Memory): its
controls, an uploaded trace, the workload they pick, and what to say when the workload's runs are
too long for a page (what makes them shorter)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from sim.errors import InputError
from sim.serving.engine import SimulationLimitError
from sim.serving.length_traces import SHAREGPT_TRACE_ROWS
from sim.serving.workloads import (
    OWN_LENGTHS,
    SHAREGPT_MAX_OUTPUT,
    SHAREGPT_MAX_TOTAL,
    SHAREGPT_OUTPUT,
    SHAREGPT_PROMPT,
    Workload,
)

from ..shell import widgets
from ..shell.controls import CONTROLS
from ..shell.jobs import Job
from ..shell.literal import literal
from ..shell.scenario import DECODE_OUTPUT, PROMPT_OUTPUT, Scenario, Traffic, traffic_from
from ..shell.upload import refusal, trace_workload, upload_box
from ..shell.work import PAGE_TOKENS, RUN_ITERATIONS, RUN_TOKENS, too_big, total


def show(s: Scenario, *, capacity: bool = False) -> tuple[Traffic, Workload]:
    """The workload controls in a box at the top of the page, and the workload they pick (or an
    error and the end of the page's run). `capacity`: Poisson only, without the rate (a capacity
    search sets it)."""
    with st.container(border=True):
        if capacity:
            kind = "poisson"
            st.markdown("**Workload**: Poisson arrivals; the search sets the rate.")
        else:
            kind = widgets.widget(CONTROLS["workload"], width=260)
        upload = None
        if kind == "burst":
            cols = st.columns([1, 3])
            widgets.widget(CONTROLS["burst"], cols[0])
            cols[1].caption(f"Each prompt is the sidebar's **{s.prompt:,} tokens** and emits "
                            f"{PROMPT_OUTPUT} tokens; the sidebar's **{s.decodes:,} "
                            f"streams** ({s.context:,} tokens of context, "
                            f"{DECODE_OUTPUT} tokens still to come) stream meanwhile.")
        elif kind == "poisson":
            cols = iter(st.columns(6))
            for key in ("requests", *(() if capacity else ("qps",)), "lengths"):
                lengths = widgets.widget(CONTROLS[key], next(cols))
            for key in (() if lengths in OWN_LENGTHS else ("plen", "olen")) + ("seed",):
                widgets.widget(CONTROLS[key], next(cols))
            if lengths in OWN_LENGTHS:
                st.caption(lengths_words(lengths))
        else:
            upload = upload_box()
            if upload is None:
                if (refused := refusal()) is not None:
                    _cant_use(f"the trace {literal(refused[0])}", refused[1])
                st.info("Upload a trace to run it, or pick another workload.",
                        icon=":material/upload_file:")
                st.stop()
    t = traffic_from(st.session_state, upload.digest if upload else None)
    if capacity:
        t = replace(t, kind="poisson")
    try:
        workload = trace_workload(upload) if upload else _generated(t)
    except InputError as e:
        _cant_use(f"the trace {literal(upload.name)}" if upload else "this workload", e)
    if upload:
        st.caption(f"Trace {literal(upload.name)}: {len(workload):,} requests over "
                   f"{workload.arrival_s[-1] - workload.arrival_s[0]:,.4g} s (kept for the other "
                   "traffic pages until you remove it).")
    return t, workload


def _cant_use(what: str, why: object) -> None:
    """Why the workload cannot be used, and the end of the page's run."""
    st.error(f"**Can't use {what}:** {literal(why, limit=None)}", icon=":material/error:")
    st.stop()


def lengths_words(lengths: str) -> str:
    """Where the ShareGPT lengths come from, for the caption under the workload's controls."""
    (prompt, prompt_p90), (output, output_p90) = SHAREGPT_PROMPT, SHAREGPT_OUTPUT
    if lengths == "sharegpt":
        return (f"**ShareGPT-like lengths**: drawn from lognormals fitted to the ShareGPT trace "
                f"Sarathi-Serve replays (median and P90: prompt {prompt:,} and {prompt_p90:,} "
                f"tokens, output {output:,} and {output_p90:,} tokens); a request outside the trace's limits "
                f"(an output over {SHAREGPT_MAX_OUTPUT:,} tokens, prompt + output over "
                f"{SHAREGPT_MAX_TOTAL:,}) is drawn again.")
    return (f"**The ShareGPT trace's own lengths**: of the {SHAREGPT_TRACE_ROWS:,} requests "
            f"Sarathi-Serve replays (Llama-2 tokens; prompt median {prompt:,} tokens, output "
            f"median {output:,}), as many as asked, taken in order from a row the random seed "
            "picks, so a conversation's turns stay together.")


@st.cache_resource(max_entries=16, show_spinner=False)
def _generated(t: Traffic) -> Workload:
    return t.workload()



# --- when a run is too long -------------------------------------------------------------------
def stop_on(error: InputError, what: str, shorter: str) -> None:
    """A failed run as a message (`shorter`: what makes the runs shorter, in words), and the end
    of the page's run."""
    if isinstance(error, SimulationLimitError):
        st.error(f"**Can't {what}:** a run needs more than {RUN_ITERATIONS:,} iterations, the "
                 f"most a run here takes. Make it shorter: {shorter}",
                 icon=":material/timer_off:")
    else:
        st.error(f"**Can't {what}:** {literal(error, limit=None)}")
    st.stop()


def smaller(t: Traffic, tokens: bool = False) -> str:
    """What makes this workload's runs shorter (`tokens`: keep fewer token times), in words."""
    fewer = {"burst": "fewer prompts in the burst, or fewer streams in the sidebar",
             "poisson": "fewer requests or shorter outputs (the lengths)",
             "upload": "a trace with fewer requests or shorter outputs"}[t.kind]
    also = {"burst": ", a shorter prompt or a larger budget", "poisson": ", a higher rate or a "
            "larger budget", "upload": ", or a larger budget"}[t.kind]
    return f"{fewer}{'' if tokens else also}. `python -m sim` has none of these page limits."


def refuse_if_too_big(jobs: list[Job], what: str, shorter: Callable[[bool], str],
                      fewer: str = "") -> None:
    """One run past a run's limits, or the runs' traces together past what a page keeps
    (PAGE_TOKENS): a message naming it, and the end of the page's run (`shorter(tokens)`: what
    makes the runs shorter, or, `tokens`, keep fewer token times; `fewer`: how to run fewer of
    them, "Fewer policies, or ", where the page lets the reader choose)."""
    for job in jobs:
        reason = too_big(job.estimate)
        if reason:
            st.error(f"**Can't {what}:** {job.label}: {reason}. Make it shorter: "
                     f"{shorter(job.estimate.tokens > RUN_TOKENS)}",
                     icon=":material/timer_off:")
            st.stop()
    held = total(job.work for job in jobs).tokens
    if held > PAGE_TOKENS:
        st.error(f"**Can't {what}:** the {len(jobs)} runs' traces would keep {held:,} token times "
                 f"together (one per output token), more than the {PAGE_TOKENS:,} a page keeps. "
                 f"{fewer or 'Make them shorter: '}{shorter(True)}", icon=":material/memory:")
        st.stop()
