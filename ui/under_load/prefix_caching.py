"""The Prefix caching page's runs and figure: one Poisson workload whose requests share a prefix,
served by the sidebar's chunked engine with prefix caching off and on, through the bounded jobs
and trace store the traffic pages use (ui/shell/jobs.py, ui/shell/store.py); the outcomes and the
figure cached on the runs' digests.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import streamlit as st

from charts import prefix_caching as charts
from charts.figure import Figure
from charts.theme import Look
from sim.errors import InputError
from sim.serving.engine import Trace
from sim.serving.policies import Limits, engine_max_seqs, get_policy, lane_budget
from sim.serving.run import Run
from sim.serving.workloads import Workload

from ..shell import presenter
from ..shell.cached_figure import cached_figure
from ..shell.jobs import Job, capped_run, run_jobs
from ..shell.scenario import Scenario
from ..shell.store import TRACES
from ..shell.work import run_work
from .prefix_caching_words import Outcome, outcome, shared_workload
from .workload_box import refuse_if_too_big, stop_on

SWITCHES = ("off", "on")


def smaller(tokens: bool = False) -> str:
    """What makes the page's runs shorter (`tokens`: keep fewer token times), in words."""
    return (f"fewer requests{'' if tokens else ' or fewer output tokens'}. "
            "`python -m sim simulate --prefix-tokens` has none of these page limits.")


SMALLER = smaller()


workload = st.cache_resource(max_entries=16, show_spinner=False)(shared_workload)


@dataclass(frozen=True, eq=False)
class Served:
    """The workload served with caching off and on: runs and traces by switch."""
    workload: Workload
    runs: dict[str, Run]
    traces: dict[str, Trace]
    block: int

    def outcome(self, switch: str) -> Outcome:
        return measured(self.runs[switch].digest, self.traces[switch], self.block)


def runs(s: Scenario, served: Workload, order: str) -> Served:
    """The sidebar's chunked engine (its own max running requests on this GPU and model) with
    caching off and on, within the page's bounds, or a message and the end of the page's run."""
    what = "serve these requests"
    try:
        cost = s.cost_model()
        spec = get_policy(s.chunked)
        budget = lane_budget(spec, served, s.budget)
        base = Limits(max_seqs=engine_max_seqs(spec, cost, budget), order=order)
        planned = {x: Run(workload=served, policy=spec, cost=cost, budget=budget,
                          limits=replace(base, prefix_caching=x)) for x in SWITCHES}
        jobs = [Job(("prefix_caching", run), f"caching {x}", run_work(run),
                    partial(capped_run, run)) for x, run in planned.items()]
        refuse_if_too_big(jobs, what, smaller)
        traces = run_jobs(jobs, TRACES, what=what, change=SMALLER, key="run_prefix_caching")
    except InputError as e:   # SimulationLimitError among them
        stop_on(e, what, SMALLER)
    return Served(served, planned, {x: traces[job.key] for x, job in zip(planned, jobs)},
                  spec.profile.kv_block_tokens)


@st.cache_resource(max_entries=64, show_spinner=False)
def measured(key: str, _trace: Trace, block: int) -> Outcome:
    """One run's outcome (`key`: its digest)."""
    return outcome(_trace, block)


@cached_figure(max_entries=16)
def figure(key: str, look: Look, width: int, block: int, _trace: Trace,
           _workload: Workload) -> Figure:
    """The cached run's per-request bars and KV pool (`key`: its digest; `width`: the plot's;
    `block`: its engine's KV block)."""
    shared = _workload.prefix_tokens if _workload.prefix_tokens is not None else \
        np.zeros(len(_workload), np.int64)
    return charts.prefix_figure(charts.request_frame(_trace, shared, block),
                                charts.kv_frame(_trace), _trace.kv_capacity_tokens, look,
                                width=width)


def draw(served: Served, look: Look) -> None:
    """The figure with its downloads (files named `prefix-caching`)."""
    figure.draw("prefix-caching", served.runs["on"].digest, look, presenter.chart_width(look),
                served.block, served.traces["on"], served.workload)
