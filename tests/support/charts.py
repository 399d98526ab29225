"""What the chart tests share: runs of a scenario, every figure the lab pages and the traffic pages
draw (the colour tests walk them all), a calibrated price for the fidelity charts, and for the
player tests the app's own side-by-side timeline on a small textbook scenario and a three-bar spec."""

import altair as alt
import pandas as pd
import pytest

import sim
from charts import budget_sweep as budget_charts
from charts import capacity as capacity_charts
from charts import memory as memory_charts
from charts import traffic as T
from charts.figure import stacked
from charts.theme import Look
from charts.views import budget_plan, roofline_figures, timeline
from sim.cost.iteration import Chunk, Composition, CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.policies import Limits, get_policy, lane_budget

SEED = CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple")
COMPOSITION = Composition((2000,) * 32, (Chunk(257),))


def fast_first(values) -> list:
    """A check's parameters with all but the first marked slow: `make test-fast` runs the check
    once on the path every value shares, `make test` on every value (another look, another
    scenario)."""
    return [value if index == 0 else pytest.param(value, marks=pytest.mark.slow)
            for index, value in enumerate(values)]


def run(scenario, policy):
    """A lane as the app runs it (vLLM V0 at its own budget: `lane_budget`)."""
    spec, workload = get_policy(policy), scenario.workload()
    return simulate(workload, spec, scenario.cost_model(),
                    budget=lane_budget(spec, workload, scenario.budget),
                    limits=Limits(max_seqs=scenario.max_seqs))


def serve(workload, policies, cost=SEED, budget=576):
    """Each policy as the traffic pages run it (vLLM V0 at its own budget)."""
    return {p: simulate(workload, get_policy(p), cost,
                        budget=lane_budget(get_policy(p), workload, budget)) for p in policies}


def lab_figures(scenario, unchunked, chunked, look):
    tl = timeline(unchunked, chunked)
    cost = scenario.cost_model()
    plan = budget_plan(cost, scenario.decodes, scenario.context, scenario.prompt, scenario.budget,
                       0.025)
    figures = roofline_figures(cost, plan, scenario.decodes, scenario.context, scenario.prompt,
                               look)
    roof, curve = figures.roof, figures.curve
    return {"side-by-side": tl.figure(look), "streams": tl.figure(look, streams=True),
            "roofline": roof, "curve": curve, "roofline+curve": stacked(roof, curve)}


def traffic_figures(traces, look, frontier, capacity, memory_bound):
    comparison, curves = capacity
    cost, kv_traces = memory_bound
    ttft, gaps = T.ttft_and_gaps(traces)
    return {
        "timeline": T.traffic_timeline(T.timeline_frame(traces), look),
        "ttft": T.cdf_chart(ttft, look, name="ttft", title="TTFT", x_title="s", log=True),
        "gaps": T.tail_chart(gaps, look, name="gaps", title="gaps", x_title="ms", threshold=100,
                             unit="ms"),
        "split": T.split_chart(T.split_frame(traces), look),
        "frontier": budget_charts.frontier_chart(frontier, look, ttft_slo_s=2.0, tbt_slo_ms=25.0),
        "capacity": capacity_charts.capacity_chart(capacity_charts.capacity_frame(comparison, curves),
                                     capacity_charts.capacity_marks(comparison), look, tbt_slo_ms=100,
                                     delay_slo_s=2),
        "kv": memory_charts.kv_chart(memory_charts.kv_frame(kv_traces, cost.kv_bytes_per_token), look),
    }


def calibrated(tp=2, gpu="a100-80gb"):
    return CostModel(get_gpu(gpu), get_model("llama-3.1-8b"), "calibrated", tp=tp).price(COMPOSITION)




def seed_chart(**scenario) -> tuple[dict, float, list[float]]:
    """(spec, t_max, iteration ends) of the side-by-side timeline, whole run, vllm-v0 above
    sarathi at budget 576, on a textbook scenario."""
    workload = sim.textbook_scenario(**scenario)
    lanes = timeline(sim.run(workload, "vllm-v0"), sim.run(workload, "sarathi"), "run")
    return lanes.figure(Look(), 900).spec(), lanes.t_max, lanes.boundaries


def tiny_spec(clock="t", title="bars"):
    t = alt.param(name=clock, value=0)
    data = pd.DataFrame({"start_s": [0.0, 0.1, 0.2], "tokens": [3, 5, 7]})
    return alt.Chart(data, title=title).mark_bar().encode(x="start_s:Q", y="tokens:Q").transform_filter(
        alt.datum.start_s <= t).add_params(t).to_dict()
