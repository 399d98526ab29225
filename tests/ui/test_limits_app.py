"""Bounded runs in the app, through AppTest: heavy pages are estimated and refused (or put
behind a button) before anything runs, traces are kept only in the store bounded in bytes, and
the traffic workload survives moving between pages.

The reported cases (1,000 requests of 32,768 output tokens at 1,000 QPS under five policies:
23-25 s and up to 4.8 GB before) are refused at once here. Where the old code would run for
minutes, smaller equivalents stand in: 2,500-token outputs (12.5 million token times for five
policies, over the 12 million a page keeps) and 1,000-token outputs for the budget sweep."""

import pytest
from streamlit.runtime.caching.cache_resource_api import _resource_caches

from sim.serving.engine import Trace
from tests.support.apptest import ALL_PAGES, assert_clean, charts, open_app, shown, tables
from ui.shell import work
from ui.shell.controls import CONTROLS
from ui.shell.store import TRACES

TRAFFIC = "pages/under_load/traffic.py"
BUDGET = "pages/under_load/budget_tradeoff.py"
MEMORY = "pages/advanced/memory.py"
ROOFLINE = "pages/learn/roofline.py"
CAPACITY = "pages/advanced/capacity.py"
FIVE = ["vllm-v0", "sarathi", "vllm-v1", "sglang", "orca"]
HEAVY = dict(workload="poisson", requests=1000, qps=1000, lengths="fixed", olen=32768)
PAGEFUL = dict(workload="poisson", requests=1000, qps=1000, lengths="fixed", plen=128, olen=2500,
               gpu="mi300x", model="qwen2.5-7b", budget=4096)


@pytest.mark.parametrize("page, pick", [(TRAFFIC, "policies"), (MEMORY, "kvpolicies")])
def test_a_heavy_workload_is_refused_before_it_runs(page, pick):
    at = open_app(**HEAVY, **{pick: FIVE})
    kept = len(TRACES)                                  # Home's two lanes
    at.switch_page(page).run()
    assert_clean(at)
    error = at.error[0].value
    assert "32,768,000 token times" in error and f"{work.RUN_TOKENS:,}" in error
    assert "Make it shorter: fewer requests or shorter outputs (the lengths)." in error
    assert len(TRACES) == kept                          # nothing ran


@pytest.mark.parametrize("page, pick", [(TRAFFIC, "policies"), (MEMORY, "kvpolicies")])
def test_five_policies_over_what_a_page_keeps_are_refused_two_run(page, pick):
    at = open_app(page, **PAGEFUL, **{pick: FIVE})
    assert_clean(at)
    assert "12,500,000 token times together" in at.error[0].value
    assert "Fewer policies" in at.error[0].value
    at = open_app(page, **PAGEFUL, **{pick: FIVE[:2]})
    assert_clean(at)
    assert not at.error and len(charts(at)) >= 1


def test_a_heavy_budget_sweep_is_refused_at_once():
    at = open_app(BUDGET, **HEAVY, bmin=1, bmax=10_000_000)
    assert_clean(at)
    assert "Can't sweep this workload" in at.error[0].value
    assert "32,768,000 token times" in at.error[0].value


def test_a_wide_budget_sweep_leaves_out_the_budgets_too_long_and_waits_for_the_button():
    at = open_app(BUDGET, workload="poisson", requests=1000, qps=1000, lengths="fixed", olen=1000,
                  gpu="mi300x", model="qwen2.5-7b", bmin=1, bmax=10_000_000)
    assert_clean(at)
    ask = at.info[0].value
    assert "23 budgets (3 left out, too long for a run: 1, 2, 4)" in ask
    assert "23 runs, about" in ask and "iterations × 8 µs" in ask and "token times × 100 ns" in ask
    assert "for the requests, prompt chunks and running set = **" in ask
    assert at.button(key="run_sweep").label.startswith("Run (")
    assert not tables(at)                                  # nothing ran


def test_a_sweep_behind_the_button_runs_on_a_click():
    """Ten 65,536-token prompts at budget 1 need ~655,000 iterations (a run may take 500,000):
    left out; budgets 2 and 4 together ~490,000: behind the button."""
    at = open_app(BUDGET, burst=10, prompt=65536, decodes=0, bmin=1, bmax=4)
    assert_clean(at)
    assert "left out, too long for a run: 1" in at.info[0].value
    at.button(key="run_sweep").click().run()
    assert_clean(at)
    assert "budget 1: it needs about 655,680 iterations (estimated)" in at.warning[0].value
    assert list(tables(at)[0].index) == ["2", "4"]


def test_capacity_weighs_each_run_of_its_search_on_its_own():
    """44 runs of 300 x 500 tokens: 6.6 million token times in all, 150,000 a run: allowed."""
    at = open_app(CAPACITY, gpu="mi300x", model="qwen2.5-7b", requests=300, lengths="fixed",
                  olen=500)
    assert_clean(at)
    assert not at.error and "44 runs, about" in shown(at) and at.button(key="find_capacity")
    at = open_app(CAPACITY, **{**HEAVY, "qps": 1})
    assert "each run: its trace would keep 32,768,000 token times" in at.error[0].value
    assert "find_capacity" not in [b.key for b in at.button]


def test_a_run_estimated_past_the_iteration_cap_is_refused_before_it_runs():
    """100 requests of 32,768 output tokens, 100 s apart: 3.3 million decode iterations."""
    at = open_app(TRAFFIC, workload="poisson", requests=100, qps=0.01, lengths="fixed", plen=1,
                  olen=32768, policies="sarathi")
    assert_clean(at)
    assert "iterations (estimated), and a run here may take at most 500,000" in at.error[0].value


def test_traces_are_kept_only_in_the_store_bounded_in_bytes():
    for requests in (21, 22, 23):
        assert_clean(open_app(TRAFFIC, workload="poisson", requests=requests, qps=4))
    cached = [result.value for caches in _resource_caches._function_caches.values()
              for cache in caches.values() for result in cache._mem_cache.values()]
    assert cached and not any(isinstance(value, Trace) for value in cached)
    assert TRACES.nbytes <= TRACES.max_bytes and len(TRACES) >= 6


# --- shared controls survive page moves -------------------------------------------------------
def test_the_traffic_workload_survives_moving_to_memory_and_stays_in_the_link():
    at = open_app(TRAFFIC, workload="poisson", requests=10, qps=2, budget=1024, gpu="h100-sxm")
    at.switch_page(MEMORY).run()
    assert_clean(at)
    assert "10 Poisson arrivals" in shown(at) and "prompts of 8,192 tokens" not in shown(at)
    assert at.query_params["workload"] == "poisson" and at.query_params["qps"] in ("2", "2.0")


def test_a_change_on_one_traffic_page_follows_to_the_next():
    at = open_app(TRAFFIC, workload="poisson", requests=10)
    at.number_input(key="requests").set_value(12).run()
    at.switch_page(CAPACITY).run()                      # draws the request count, not the rate
    at.switch_page(BUDGET).run()
    assert_clean(at)
    assert at.number_input(key="requests").value == 12
    assert at.selectbox(key="workload").value == "poisson"


def test_the_tpot_target_follows_from_roofline_to_budget_tradeoff():
    at = open_app(ROOFLINE)
    at.number_input(key="tpot").set_value(40.0).run()
    at.switch_page(BUDGET).run()
    assert_clean(at)
    assert at.number_input(key="tpot").value == 40.0


def _page_controls(page: str, **link) -> set[str]:
    """URL keys of the controls `page` draws outside the sidebar with this link."""
    at = open_app(page, **link)
    sidebar = {w.key for w in at.sidebar.get("number_input")} | {
        w.key for kind in ("selectbox", "toggle", "multiselect") for w in at.sidebar.get(kind)}
    drawn = {w.key for kind in ("number_input", "selectbox", "toggle", "multiselect")
             for w in at.get(kind)}
    return {key for key in drawn - sidebar if key in CONTROLS}


def _drawn_value(at, key: str):
    """The value the page's widget with URL key `key` shows (None: not drawn)."""
    return next((w.value for kind in ("number_input", "selectbox", "toggle", "multiselect")
                 for w in at.get(kind) if w.key == key), None)


def _other_value(key: str):
    """A valid value of control `key` other than its default, as a link gives it."""
    c = CONTROLS[key]
    if c.kind == "bool":
        return str(not c.default).lower()
    if c.kind == "multi":
        return [o for o in c.options if o not in c.default][:1]
    if c.kind == "choice":
        return next(o for o in c.options if o != c.default)
    return str(c.clean(c.default + c.step if c.default + c.step <= c.high else c.low))


def test_every_control_drawn_on_several_pages_survives_a_move_between_them():
    pages = {}
    for page in ALL_PAGES:
        for link in (dict(workload="poisson", lengths="fixed"), dict(workload="burst")):
            for key in _page_controls(page, **link):
                pages.setdefault(key, []).append(page)
    shared = {key: sorted(set(on)) for key, on in pages.items() if len(set(on)) > 1}
    assert {"workload", "burst", "requests", "qps", "plen", "olen", "seed", "tpot",
            "compare"} <= set(shared)
    for key, (first, second, *_) in shared.items():
        value = _other_value(key)
        link = {"workload": "burst" if key == "burst" else "poisson", "lengths": "fixed",
                key: value}
        at = open_app(first, **link)
        at.switch_page(second).run()
        assert_clean(at)
        assert _drawn_value(at, key) == CONTROLS[key].parse(value)[0], (key, first, second)
