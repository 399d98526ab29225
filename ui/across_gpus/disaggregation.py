"""The Disaggregation page's runs and figures: one Poisson workload served disaggregated (a
prefill pool and a decode pool, the KV handed over a link) and colocated on the same GPUs
(instances of the sidebar's chunked policy, requests round-robin), through the traffic pages'
bounded jobs and trace store; goodput's search for both behind a button with a progress bar and
a cancel (ui/shell/jobs.py), kept in the results store."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import streamlit as st

from charts import disaggregation as charts
from charts.figure import Figure
from charts.theme import Look
from sim.cost.iteration import CostModel
from sim.effort.estimate import Counts, token_times
from sim.errors import InputError
from sim.presets.links import Link, get_link, gpu_link
from sim.serving.disaggregated import Disaggregation, round_robin_shares
from sim.serving.engine import SimulationLimitError
from sim.serving.policies import Limits, engine_max_seqs, get_policy
from sim.serving.run import Run
from sim.serving.workloads import Workload, poisson
from sim.studies.capacity import (
    MAX_RUNS,
    GoodputComparison,
    GoodputSlo,
    compare_goodput,
    compute_ceiling_qps,
)
from sim.units import fmt_counted

from ..learn.player import draw_whole_run
from ..shell import presenter
from ..shell.cached_figure import cached_figure
from ..shell.controls import GPU_LINK
from ..shell.jobs import Job, capped_run, refuse_over_limit, run_alone, run_jobs, show_note
from ..shell.scenario import Scenario
from ..shell.store import RESULTS, TRACES
from ..shell.work import BUTTON_DEADLINE_S, Work, run_work, too_big, total
from ..under_load.workload_box import refuse_if_too_big, stop_on


def smaller(tokens: bool = False) -> str:
    """What makes the page's runs shorter (`tokens`: keep fewer token times), in words."""
    fewer = ("fewer requests or fewer output tokens" if tokens else
             "fewer requests, fewer output tokens, a shorter prompt (the sidebar's) or a larger "
             "budget")
    return (f"{fewer}. `python -m sim simulate --disaggregate` and `python -m sim capacity "
            "--goodput` have none of these page limits.")


SMALLER = smaller()
NAMES = {"disaggregated": "disaggregated", "colocated": "colocated"}


def link_for(s: Scenario, choice: str) -> Link:
    """The link picked, or the GPU's own (a message and the end of the page's run where the
    GPU preset has none)."""
    if choice != GPU_LINK:
        return get_link(choice)
    try:
        return gpu_link(s.gpu)
    except InputError as e:
        st.info(f"{e}: pick a link in the KV link box.", icon=":material/cable:")
        st.stop()


@dataclass(frozen=True)
class Setup:
    """What the page serves: its workload's knobs and the split, on the sidebar's scenario."""
    scenario: Scenario
    requests: int
    qps: float
    output: int
    seed: int
    prefill_gpus: int
    decode_gpus: int
    link: str
    layerwise: bool
    prefill_tp: int = 0    # GPUs per prefill instance (0: the sidebar's tp)
    decode_tp: int = 0

    @property
    def gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus

    def workload_at(self, qps: float) -> Workload:
        """Poisson arrivals of the sidebar's prompt length (the goodput search varies the rate)."""
        return poisson(self.requests, qps, seed=self.seed, lengths="fixed",
                       prompt=self.scenario.prompt, output=self.output)

    def run(self) -> Run:
        """The disaggregated run at the page's rate: the sidebar's chunked policy and budget in
        both pools, each instance on the sidebar's tp, its engine's own max running requests."""
        s = self.scenario
        spec, cost = get_policy(s.chunked), s.cost_model()
        return Run(workload=self.workload_at(self.qps), policy=spec, cost=cost, budget=s.budget,
                   limits=Limits(max_seqs=engine_max_seqs(spec, cost, s.budget)),
                   disaggregation=Disaggregation(self.prefill_gpus, self.decode_gpus,
                                                 self.prefill_tp or None, self.decode_tp or None,
                                                 link=self.link, layerwise_send=self.layerwise))

    def instance_counts(self) -> tuple[int, int]:
        """(the disaggregated setup's instances, both pools; the colocated setup's): each is
        simulated as its own run."""
        prefill, decode = self.run().disaggregation.instances(self.scenario.tp)
        return prefill + decode, self.gpus // self.scenario.tp

    def sender_cost(self) -> CostModel:
        """The pool whose GPUs send the larger KV shards (fewer of them): what a transfer
        moves per GPU, as the run prices it."""
        pools = self.run().disaggregation.pool_costs(self.scenario.cost_model())
        return max(pools, key=lambda cost: cost.kv_bytes_per_token)

    def colocated(self) -> tuple[Run, ...]:
        """The same workload on the same GPUs as (X + Y) / tp colocated instances, round-robin."""
        run = self.run()
        instances = self.gpus // self.scenario.tp
        return tuple(replace(run, workload=share, disaggregation=None)
                     for share in round_robin_shares(run.workload, instances))


@dataclass(frozen=True, eq=False)
class Served:
    setup: Setup
    run: Run
    trace: object            # DisaggregatedTrace
    colocated: tuple         # each colocated instance's Trace

    @property
    def key(self) -> tuple[str, ...]:
        return (self.run.digest, *(r.digest for r in self.setup.colocated()))


def refuse_uneven_split(setup: Setup) -> None:
    """GPUs a pool's tp does not divide, refused in the page's words: no smaller run would help,
    so no size advice (`workload_box.stop_on`'s)."""
    tp = setup.scenario.tp
    prefill_tp, decode_tp = setup.prefill_tp or tp, setup.decode_tp or tp
    problems = [f"{fmt_counted(gpus, f'{pool} GPU')} {'does' if gpus == 1 else 'do'} not split "
                f"into instances of tp {pool_tp}"
                for pool, gpus, pool_tp in (("prefill", setup.prefill_gpus, prefill_tp),
                                            ("decode", setup.decode_gpus, decode_tp))
                if gpus % pool_tp]
    if setup.gpus % tp:
        problems.append(f"{setup.gpus} GPUs do not split into colocated instances of tp {tp}")
    if problems:
        st.error(f"**Can't split these GPUs:** {'; '.join(problems)}. Give each pool a multiple "
                 "of its instance tp, or set Prefill / Decode instance tp (0 takes the sidebar's "
                 "tp); colocated, the sidebar's tp must divide all the GPUs.",
                 icon=":material/error:")
        st.stop()


def runs(setup: Setup) -> Served:
    """The disaggregated run and each colocated instance's, within the page's bounds."""
    what = "serve this workload both ways"
    refuse_uneven_split(setup)
    try:
        run, colocated = setup.run(), setup.colocated()
        jobs = [Job(("disaggregation", run), "disaggregated", run_work(run),
                    partial(capped_run, run))]
        jobs += [Job(("disaggregation", r), f"colocated {i + 1}", run_work(r),
                     partial(capped_run, r)) for i, r in enumerate(colocated)]
        refuse_if_too_big(jobs, what, smaller)
        results = run_jobs(jobs, TRACES, what=what, change=SMALLER, key="run_disaggregation")
    except InputError as e:
        stop_on(e, what, SMALLER)
    return Served(setup, run, results[jobs[0].key], tuple(results[j.key] for j in jobs[1:]))


@cached_figure(max_entries=16)
def lanes_figure(key: tuple[str, ...], look: Look, width: int, _served: Served) -> Figure:
    """Both setups' lanes (`key`: the runs' digests)."""
    return charts.lanes_chart(charts.lane_frames(_served.trace, _served.colocated), look,
                              width=width)


LANES = "disaggregation-lanes"   # the player's key (its kept position) and the downloads' name


def draw_lanes(served: Served, look: Look) -> None:
    """Both setups' lanes in the player, with their downloads (the whole run)."""
    draw_whole_run(lanes_figure.figure(served.key, look, presenter.chart_width(look), served),
                   served.key, LANES, "Play replays the run: each iteration as it runs, each "
                   "hand-off as its prefill ends.")


# --- goodput ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class GoodputQuery:
    setup: Setup
    slo: GoodputSlo


def stored_goodput(q: GoodputQuery) -> GoodputComparison | None:
    return RESULTS.get(("goodput", q))


def _goodput_job(q: GoodputQuery) -> Job:
    """Both searches as one job; its estimate: MAX_RUNS runs of each setup at half the compute
    ceiling of all the GPUs (the search halves from there, then bisects)."""
    run = q.setup.run()
    ceiling = compute_ceiling_qps(q.setup.workload_at(1.0), run.cost) * q.setup.gpus / run.cost.tp
    at = q.setup.workload_at(ceiling / 2)
    disaggregated = replace(run, workload=at)
    colocated = [replace(disaggregated, workload=share, disaggregation=None)
                 for share in round_robin_shares(at, q.setup.gpus // run.cost.tp)]
    work = total(run_work(r) for _ in range(MAX_RUNS) for r in (disaggregated, *colocated))
    return Job(("goodput", q), "goodput", work, partial(_search, q))


def _search(q: GoodputQuery, cap: int, report) -> GoodputComparison:
    run = q.setup.run()
    run = replace(run, limits=replace(run.limits, max_iterations=cap))
    done = {"runs": 0}

    def progress(runs: int, point) -> None:
        done["runs"] += 1
        report(min(1.0, done["runs"] / (2 * MAX_RUNS)),
               f"{point.qps:.3g} requests/s: {point.slo_attainment:.0%} meet both targets")
    found = compare_goodput(q.setup.workload_at, run, q.slo, progress=progress)
    if found.disaggregated.result.capped or found.colocated.result.capped:
        raise SimulationLimitError(f"a search run needed more than {cap:,} iterations", cap)
    return found


def goodput_estimate(q: GoodputQuery) -> Work:
    what = "find the goodput"
    try:
        job = _goodput_job(q)
        reason = too_big(Work(Counts(runs=1, tokens=token_times(q.setup.workload_at(1.0)))))
        if reason:
            st.error(f"**Can't {what}:** each run: {reason}. Make it shorter: "
                     f"{smaller(tokens=True)}",
                     icon=":material/timer_off:")
            st.stop()
    except InputError as e:
        stop_on(e, what, SMALLER)
    refuse_over_limit(job.estimate, what, SMALLER)
    show_note("find_goodput")
    return job.estimate


def find_goodput(q: GoodputQuery) -> GoodputComparison:
    try:
        found = run_alone(_goodput_job(q), RESULTS, "find_goodput")
    except InputError as e:
        stop_on(e, "find the goodput", SMALLER)
    if found is None:
        st.error(f"**Stopped the search** after {BUTTON_DEADLINE_S:g} s, the most one click "
                 f"runs. Make it shorter: {SMALLER}", icon=":material/timer_off:")
        st.stop()
    return found


@cached_figure()
def goodput_figure(q: GoodputQuery, look: Look, _found: GoodputComparison) -> Figure:
    points, marks = charts.goodput_frame(_found, NAMES)
    return charts.goodput_chart(points, marks, q.slo.share, look)
