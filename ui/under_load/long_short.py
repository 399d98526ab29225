"""The Long and short requests page's runs and figure: a traffic mix served by vLLM V1 and SGLang,
each at its base setting and with one knob changed (`long_short_words.knob_rows`), through the same
bounded jobs and trace store as the Traffic page (ui/shell/jobs.py, ui/shell/store.py), and the
per-class metrics and figure cached on the runs' digests.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import streamlit as st

from charts import long_short as charts
from charts.figure import Figure
from charts.theme import Look
from sim.errors import InputError
from sim.serving.engine import Trace
from sim.serving.metrics import ClassMetrics, Percentiles, class_metrics, summarize
from sim.serving.policies import Limits, engine_max_seqs, get_policy, lane_budget
from sim.serving.run import Run
from sim.serving.workloads import MIXES, Workload, mixed

from ..shell import presenter
from ..shell.cached_figure import cached_figure
from ..shell.jobs import Job, capped_run, run_jobs
from ..shell.scenario import Scenario
from ..shell.store import TRACES
from ..shell.work import run_work
from .long_short_words import Setting
from .workload_box import refuse_if_too_big, stop_on


def smaller(tokens: bool = False) -> str:
    """What makes the page's runs shorter (`tokens`: keep fewer token times), in words."""
    return (f"fewer requests{'' if tokens else ', a higher rate or a larger budget'}. "
            "`python -m sim simulate --mix` has none of these page limits.")


SMALLER = smaller()


@st.cache_resource(max_entries=16, show_spinner=False)
def workload(mix: str, requests: int, qps: float, seed: int) -> Workload:
    return mixed(requests, qps, MIXES[mix], seed=seed)


@dataclass(frozen=True, eq=False)
class Served:
    """The mix served at each setting: its run and its trace, by setting."""
    workload: Workload
    runs: dict[Setting, Run]
    traces: dict[Setting, Trace]

    def key(self, *settings: Setting) -> tuple[str, ...]:
        return tuple(self.runs[x].digest for x in settings)


def runs(s: Scenario, served: Workload, settings: tuple[Setting, ...]) -> Served:
    """Each setting's run of the workload (its engine's own max running requests on this GPU and
    model), within the page's bounds, or a message and the end of the page's run."""
    what = "serve this mix"
    try:
        cost = s.cost_model()
        planned = {}
        for x in dict.fromkeys(settings):
            spec = get_policy(x.policy)
            budget = lane_budget(spec, served, x.budget)
            seats = Limits(max_seqs=engine_max_seqs(spec, cost, budget))
            planned[x] = Run(workload=served, policy=spec, cost=cost, budget=budget,
                             limits=x.limits(seats))
        jobs = [Job(("long_short", run), x.label, run_work(run), partial(capped_run, run))
                for x, run in planned.items()]
        refuse_if_too_big(jobs, what, smaller)
        traces = run_jobs(jobs, TRACES, what=what, change=SMALLER, key="run_long_short")
    except InputError as e:   # SimulationLimitError among them
        stop_on(e, what, SMALLER)
    return Served(served, planned, {x: traces[job.key] for x, job in zip(planned, jobs)})



@st.cache_resource(max_entries=64, show_spinner=False)
def metrics(key: str, _trace: Trace, _workload: Workload) -> tuple[dict[str, ClassMetrics],
                                                                     Percentiles]:
    """One run's per-class metrics and its every-gap TBT percentiles (`key`: the run's digest)."""
    return class_metrics(_trace, _workload), summarize(_trace).tbt_s


def measured(served: Served, x: Setting) -> tuple[dict[str, ClassMetrics], Percentiles]:
    return metrics(served.runs[x].digest, served.traces[x], served.workload)


@cached_figure(max_entries=16)
def figure(key: tuple[str, ...], look: Look, width: int, _traces: dict[str, Trace],
           _workload: Workload) -> Figure:
    """The two settings' class timelines (`key`: their runs' digests; `width`: the plot's)."""
    frames = charts.class_timeline_frame(_traces, _workload.request_class, _workload.classes)
    return charts.class_timeline(frames, look, width=width)


def draw(served: Served, before: Setting, after: Setting, look: Look) -> None:
    """The class timeline with its downloads (files named `long-short-timeline`)."""
    traces = {x.label: served.traces[x] for x in (before, after)}
    figure.draw("long-short-timeline", served.key(before, after), look, presenter.chart_width(look),
                traces, served.workload)
