"""The workload served by each policy picked (the Traffic and Memory pages, the tour's burst):
runs within the page's limits, and the Traffic page's figures.

Runs are not behind cache decorators: they are estimated first and run within the page's limits
(ui/shell/jobs.py, ui/shell/work.py), with a progress bar a cache would record and replay, and kept in a store
bounded in bytes (ui/shell/store.py) under each run itself (sim/serving/run.py). Frames and figures are
cached, keyed on the runs' digests (`Served.key`); the traces follow from those and are not
hashed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import pandas as pd
import streamlit as st

from charts import traffic as charts
from charts.figure import Figure
from charts.theme import Look
from sim.errors import InputError
from sim.serving.engine import Trace
from sim.serving.policies import get_policy, lane_budget, lane_budget_note
from sim.serving.run import Run
from sim.serving.workloads import Workload
from sim.studies.stalls import STALL_S, Stalls, stalls

from ..shell import presenter
from ..shell.cached_figure import cached_figure
from ..shell.jobs import Job, capped_run, run_jobs
from ..shell.scenario import Scenario, Traffic
from ..shell.store import TRACES
from ..shell.work import run_work
from .workload_box import refuse_if_too_big, smaller, stop_on


@dataclass(frozen=True, eq=False)
class Served:
    """A workload served by each policy picked: each one's run (sim/serving/run.py) and trace."""
    runs: dict[str, Run]
    traces: dict[str, Trace]

    @property
    def key(self) -> tuple[str, ...]:
        """What the figures drawn from the traces are cached on: the runs themselves, so a
        changed limit, or any field a run gains, draws them anew."""
        return tuple(run.digest for run in self.runs.values())


def runs(t: Traffic, s: Scenario, workload: Workload, policies, budget: int,
         knobs: Mapping[str, object] | None = None) -> Served:
    """The workload under each policy at its own Limits (`Traffic.limits`: its engine's max
    running requests, with the limit knobs among the widget values `knobs`), each run kept in
    the trace store under the run itself, within the page's bounds (ui/shell/work.py), or a message
    and the end of the page's run."""
    what = "simulate this workload"
    try:
        cost = s.cost_model()
        planned = {}
        for spec in (get_policy(p) for p in policies):
            planned[spec.name] = Run(workload=workload, policy=spec, cost=cost,
                                     budget=lane_budget(spec, workload, budget),
                                     limits=t.limits(spec.name, s, knobs))
            note = lane_budget_note(spec, workload, budget)
            if note:
                st.caption(f"{note}.")
        jobs = [Job(("traffic", run), name, run_work(run), partial(capped_run, run))
                for name, run in planned.items()]
        refuse_if_too_big(jobs, what, partial(smaller, t), fewer="Fewer policies, or ")
        traces = run_jobs(jobs, TRACES, what=what, change=smaller(t), key="run_traffic")
    except InputError as e:
        stop_on(e, what, smaller(t))
    return Served(planned, {job.label: traces[job.key] for job in jobs})



def notes(traces: dict[str, Trace]) -> None:
    for name, trace in traces.items():
        for note in trace.notes:
            st.info(f"{name}: {note}", icon=":material/info:")


# --- the Traffic page's figures ---------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class TrafficFrames:
    timeline: charts.TimelineFrames
    split: charts.Split
    table: pd.DataFrame    # the metrics table
    ttft: pd.DataFrame
    gaps: pd.DataFrame
    stalls: dict[str, Stalls]   # per policy: its freezes, for the words on when they show


@st.cache_resource(max_entries=16, show_spinner=False)
def frames(key: tuple[str, ...], _traces: dict[str, Trace]) -> TrafficFrames:
    """What the Traffic page draws and tabulates, from the traces (`Served.key`, `.traces`)."""
    ttft, gaps = charts.ttft_and_gaps(_traces)
    table = charts.metrics_frame(_traces).rename(columns=lambda p: get_policy(p).label
                                                 if p in _traces else p)   # a column per policy
    return TrafficFrames(charts.timeline_frame(_traces), charts.split_frame(_traces), table,
                         ttft, gaps, {p: stalls(t) for p, t in _traces.items()})


FIGURES = ("timeline", "ttft", "gaps", "split")


@cached_figure(max_entries=16 * len(FIGURES))
def figure(key: tuple[str, ...], look: Look, name: str, width: int,
           _traces: dict[str, Trace]) -> Figure:
    """One of the Traffic page's figures (`name`: one of FIGURES; `width`: the timeline's and the
    split's plot width)."""
    f = frames(key, _traces)
    if name == "timeline":
        return charts.traffic_timeline(f.timeline, look, width=width)
    if name == "ttft":
        return charts.cdf_chart(f.ttft, look, name="ttft", title="Time to first token",
                                x_title="TTFT (s, log scale)", log=True)
    if name == "gaps":
        return charts.tail_chart(f.gaps, look, name="gaps", title="Time between tokens: the tail",
                                 x_title="gap between two tokens (ms, log scale)",
                                 threshold=STALL_S * 1e3, unit="ms")
    if name == "split":
        return charts.split_chart(f.split, look, width=width)
    raise ValueError(f"no Traffic figure {name!r}; the figures: {', '.join(FIGURES)}")


def draw(name: str, served: Served, look: Look) -> None:
    """One of the Traffic page's figures, with its downloads (files named `traffic-name`)."""
    figure.draw(f"traffic-{name}", served.key, look, name, presenter.chart_width(look), served.traces)
