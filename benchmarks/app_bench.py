"""The app's speed targets: a page rerun after a control change < 250 ms server time.

Each rerun case drives the real app with Streamlit's AppTest and changes a control to a value not
seen before, so every rerun misses the caches (simulation, frames, figures) the way a user's change
does; AppTest's own overhead is included, so the figures are an upper bound on the server time.
The `data + figure` cases time the same work without Streamlit. Names carry the chart data size
(target < 1 MB per page).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from charts import fidelity
from charts.theme import Look
from charts.views import budget_plan, roofline_figures, timeline
from sim.cost.validation import validate
from sim.studies.budget import scenario_iterations
from ui.learn.runs import MAX_ITERATIONS
from ui.shell.chart_view import COMPONENT as CHART
from ui.shell.scenario import scenario_from

from .smoke import capped

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGE_FILES = {p.stem: str(p.relative_to(Path(APP).parent))
              for p in Path(APP).parent.joinpath("pages").glob("*/*.py")}
RERUN_TARGET = 0.250
EXTREME = dict(gpu="mi300x", model="qwen2.5-7b", prompt=1_000_000, decodes=1024, context=100)
# a smoke test's sizes (`cases(small=True)`, limits_bench --smoke): the most of each link value
SMOKE_SIZES = dict(prompt=20_000, decodes=64, requests=20, olen=64, bmax=4096, exprompt=256)


def sized(query: dict, small: bool) -> dict:
    """`query`, at a smoke test's sizes when `small`."""
    return capped(query, SMOKE_SIZES) if small else query


def _page(page: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({k: v if isinstance(v, list) else str(v) for k, v in query.items()})
    at.run()
    if page != "home":
        at.switch_page(PAGE_FILES[page]).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _rerun_after_change(page: str, key: str, start: int, **query):
    """A callable: set `key` to the next unseen value and rerun the page."""
    at = _page(page, **query)
    values = itertools.count(start)

    def rerun():
        at.number_input(key=key).set_value(next(values)).run()
        assert not at.exception, [e.value for e in at.exception]
    return rerun


def _scenario_figures(**values):
    """Simulate both lanes and build every figure's spec (what a cache-missing page does)."""
    s = scenario_from(values)
    side = timeline(*(s.run(p, MAX_ITERATIONS) for p in (s.unchunked, s.chunked))).figure(Look()).spec()
    cost = s.cost_model()
    plan = budget_plan(cost, s.decodes, s.context, s.prompt, s.budget, 0.025)
    figures = roofline_figures(cost, plan, s.decodes, s.context, s.prompt, Look())
    return side, figures.roof.spec(), figures.curve.spec()


def _fidelity_specs():
    """The fidelity page's chart specs at the defaults (the waterfall on the A100-80GB)."""
    points = fidelity.validate_frame(validate())
    s = scenario_from({"gpu": "a100-80gb", "mode": "calibrated"})
    fused = scenario_iterations(s.cost_model(), s.decodes, s.context, s.prompt, s.budget)[2].cost
    return (fidelity.time_vs_tokens(fidelity.times_frame(points, fidelity.curves_frame()),
                                    Look()).spec(),
            fidelity.accuracy(points, Look()).spec(),
            fidelity.factors_waterfall(fidelity.factors_frame(fused), Look()).spec())


def _kib(*specs) -> str:
    return f"{sum(len(json.dumps(s)) for s in specs) / 1024:,.0f} KiB"


def cases(small: bool = False):
    extreme = sized(EXTREME, small)
    side, roof, curve = _scenario_figures()
    x_side, x_roof, x_curve = _scenario_figures(**extreme)
    budgets = itertools.count(3577)
    return [
        (f"app: Home rerun after a budget change (chart data {_kib(side)})", RERUN_TARGET,
         _rerun_after_change("home", "budget", 577)),
        (f"app: Side by side rerun after a budget change ({_kib(side)})", RERUN_TARGET,
         _rerun_after_change("side_by_side", "budget", 1577)),
        ("app: Worked example rerun after a prompt change", RERUN_TARGET,
         _rerun_after_change("worked_example", "prompt", 8193)),
        (f"app: Roofline rerun after a budget change ({_kib(roof, curve)})", RERUN_TARGET,
         _rerun_after_change("roofline", "budget", 2577)),
        (f"app: Side by side, 1,000,000-token prompt + 1,024 decoders ({_kib(x_side)})",
         RERUN_TARGET, _rerun_after_change("side_by_side", "budget", 1025, **extreme)),
        (f"app: Roofline, same extreme ({_kib(x_roof, x_curve)})", RERUN_TARGET,
         _rerun_after_change("roofline", "budget", 2025, **extreme)),
        (f"app: How close to a real GPU, rerun after a budget change ({_kib(*_fidelity_specs())})",
         RERUN_TARGET, _rerun_after_change("fidelity", "budget", 4577)),
        ("app: Side by side with ideal and calibrated compared, budget change", RERUN_TARGET,
         _rerun_after_change("side_by_side", "budget", 5577, gpu="h100-sxm", mode="roofline",
                             compare="true")),
        ("data + figures without Streamlit, defaults (2 runs, 3 specs)", None,
         lambda: _scenario_figures(budget=next(budgets))),
        *traffic_cases(small),
    ]


# --- the traffic pages (Traffic, Budget trade-off, Capacity, Memory) --------------------------
BUSY = dict(workload="poisson", requests=1000, qps=6, lengths="sharegpt")
THREE = ["vllm-v0", "sarathi", "vllm-v1"]


def _sent_kib(at: AppTest) -> str:
    """Chart data the page sent: every chart's compiled spec with its data (ui/shell/chart_view.py)
    and every player's page, its spec inside (ui/learn/player.py: Disaggregation, Pipeline)."""
    size = sum(len(e.proto.json) for e in at.get("bidi_component")
               if e.proto.component_name == CHART)
    size += sum(len(e.proto.srcdoc) for e in at.get("iframe"))
    return f"{size / 1024:,.0f} KiB"


def _revisit(page: str, **query):
    """A callable: rerun the page with nothing changed (every run, sweep and figure cached), and
    the page's chart data size."""
    at = _page(page, **query)

    def rerun():
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    return rerun, _sent_kib(at)


def _capacity_revisit(small: bool):
    """The Capacity page once its search is stored: what coming back to it costs."""
    at = _page("capacity", **sized(dict(requests=300), small))
    at.button(key="find_capacity").click().run()
    assert at.metric, "the search did not finish"
    return lambda: at.run()


def traffic_cases(small: bool):
    busy_link = sized(BUSY, small)
    traffic, traffic_kib = _revisit("traffic")
    busy, busy_kib = _revisit("traffic", **busy_link, policies=THREE)
    budget, budget_kib = _revisit("budget_tradeoff")
    memory, memory_kib = _revisit("memory", **busy_link)
    split, split_kib = _revisit("disaggregation")
    stages, stages_kib = _revisit("pipeline")
    prefix, prefix_kib = _revisit("prefix_caching")
    return [
        ("app: Traffic rerun after a budget change (burst, 2 policies)", None,
         _rerun_after_change("traffic", "budget", 4577)),
        ("app: Traffic, 1,000 ShareGPT requests x 3 policies, budget change", None,
         _rerun_after_change("traffic", "budget", 5577, **busy_link, policies=THREE)),
        (f"app: Traffic revisit, cached ({traffic_kib})", RERUN_TARGET, traffic),
        (f"app: Traffic revisit, 1,000 requests x 3 policies ({busy_kib})", RERUN_TARGET, busy),
        ("app: Budget trade-off, a new largest budget (one new run)", None,
         _rerun_after_change("budget_tradeoff", "bmax", 16385)),
        (f"app: Budget trade-off revisit, cached ({budget_kib})", RERUN_TARGET, budget),
        ("app: Capacity revisit after its search (300 requests)", RERUN_TARGET,
         _capacity_revisit(small)),
        ("app: Memory rerun after a budget change (1,000 requests)", None,
         _rerun_after_change("memory", "budget", 6577, **busy_link)),
        (f"app: Memory revisit, 1,000 requests ({memory_kib})", RERUN_TARGET, memory),
        # three new runs (0.12 s of simulation here), like a Traffic change: no target
        ("app: Disaggregation rerun after a rate change (3 runs: 1:1 and 2 colocated)", None,
         _rerun_after_change("disaggregation", "qps", 5)),
        (f"app: Disaggregation revisit, cached ({split_kib})", RERUN_TARGET, split),
        ("app: Disaggregation revisit after its goodput search", RERUN_TARGET,
         _goodput_revisit(small)),
        # three new staged runs of the worked example over two stages and the stage chart
        ("app: Pipeline rerun after a prompt change (3 schedules, 2 stages)", RERUN_TARGET,
         _rerun_after_change("pipeline", "prompt", 7001)),
        (f"app: Pipeline revisit, cached ({stages_kib})", RERUN_TARGET, stages),
        # two new runs (caching off and on) of 200 requests sharing the new prefix
        ("app: Prefix caching rerun after a prefix change (2 runs, 200 requests)", RERUN_TARGET,
         _rerun_after_change("prefix_caching", "prefix", 2049)),
        (f"app: Prefix caching revisit, cached ({prefix_kib})", RERUN_TARGET, prefix),
    ]


def _goodput_revisit(small: bool):
    """The Disaggregation page once its goodput search is stored."""
    at = _page("disaggregation", **sized(dict(requests=200), small))
    at.button(key="find_goodput").click().run()
    assert "Goodput (the highest" in " ".join(m.value for m in at.markdown), "no goodput"
    return lambda: at.run()
