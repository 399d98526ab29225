"""Charts for the player tests: the app's own side-by-side timeline on a small seed scenario, and
a three-bar spec."""

import altair as alt
import pandas as pd

import sim
from charts.theme import Look
from charts.views import timeline


def seed_chart(**scenario) -> tuple[dict, float, list[float]]:
    """(spec, t_max, iteration ends) of the side-by-side timeline, whole run, vllm-v0 above
    sarathi at budget 576, on a seed scenario."""
    workload = sim.seed_scenario(**scenario)
    lanes = timeline(sim.run(workload, "vllm-v0"), sim.run(workload, "sarathi"), "run")
    return lanes.figure(Look(), 900).spec(), lanes.t_max, lanes.boundaries


def tiny_spec(clock="t", title="bars"):
    t = alt.param(name=clock, value=0)
    data = pd.DataFrame({"start_s": [0.0, 0.1, 0.2], "tokens": [3, 5, 7]})
    return alt.Chart(data, title=title).mark_bar().encode(x="start_s:Q", y="tokens:Q").transform_filter(
        alt.datum.start_s <= t).add_params(t).to_dict()
