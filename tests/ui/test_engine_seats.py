"""Each policy on the traffic pages runs at its own engine's max running requests (its profile,
sim/serving/policies.py), not one figure for all: the Traffic and Memory pages' runs and captions,
the Budget trade-off's sweep, and the Capacity page's search with its baseline at its own."""

import pytest

from sim.serving.engine import simulate
from sim.serving.metrics import summarize
from sim.serving.policies import POLICIES, Limits, get_policy, lane_budget
from sim.units import fmt_seconds
from tests.support.apptest import assert_clean, open_app, shown, tables
from ui.shell.scenario import scenario_from, traffic_from
from ui.under_load import capacity, overhead, sweep

TRAFFIC = "pages/under_load/traffic.py"
BUDGET = "pages/under_load/budget_tradeoff.py"
CAPACITY = "pages/advanced/capacity.py"
MEMORY = "pages/advanced/memory.py"
# 60 requests inside 0.3 s: more run at once than Orca's 16 seats
CROWD = dict(workload="poisson", requests=60, qps=200, lengths="fixed", plen=256, olen=32)


@pytest.mark.parametrize("policy, gpu, model, seats", [
    ("orca", "a100-80gb", "mistral-7b", 16), ("orca", "h100-sxm", "llama-3.1-70b", 8),
    ("sarathi", "a100-80gb", "mistral-7b", 128), ("vllm-v0", "h100-sxm", "dense-8b", 128),
    ("vllm-v1", "a100-80gb", "mistral-7b", 256), ("vllm-v1", "h100-sxm", "dense-8b", 1024),
    # SGLang's by its KV cache: over 4 x Mistral's 32,768 of context, so its ceiling
    ("sglang", "a100-80gb", "mistral-7b", 4096)])
def test_poisson_runs_seat_each_engines_own_number(policy, gpu, model, seats):
    s = scenario_from({"gpu": gpu, "model": model})
    t = traffic_from({"workload": "poisson"})
    assert t.max_seqs(policy, s) == seats
    assert t.limits(policy, s) == Limits(max_seqs=seats)


def test_a_burst_raises_only_the_engines_that_cannot_seat_it_all():
    s = scenario_from({})
    t = traffic_from({})                       # 64 streams and a burst of 10
    assert (t.max_seqs("orca", s), t.max_seqs("sarathi", s)) == (74, 128)
    assert traffic_from({"burst": 1000, "decodes": 4096}).max_seqs("sarathi", s) == 5096
    words = t.seats_words(["sarathi", "orca"], s)
    assert words.startswith("at most 128 requests running at once for Sarathi-Serve, 74 for Orca")
    assert "raised for Orca to 64 streams + 10 burst prompts = 74, so all run at once" in words
    assert "20 streams + 1 burst prompt = 21" in traffic_from({"decodes": 20, "burst": 1}) \
        .seats_words(["orca"], s)
    assert "raised" not in traffic_from(CROWD).seats_words(["sarathi", "orca"], s)


def test_the_limit_knobs_ride_on_each_policys_own_seats():
    s, t = scenario_from({}), traffic_from(CROWD)
    assert t.limits("orca", s, {"prefills": 2}) == Limits(max_seqs=16, max_concurrent_prefills=2)


def _ttft_p50(policy: str, seats: int) -> str:
    s, t = scenario_from({}), traffic_from(CROWD)
    spec, workload = get_policy(policy), t.workload()
    trace = simulate(workload, spec, s.cost_model(), budget=lane_budget(spec, workload, s.budget),
                     limits=Limits(max_seqs=seats))
    return fmt_seconds(summarize(trace).ttft_s.p50)


def test_traffic_page_runs_orca_at_16_and_says_each_figure():
    at = open_app(TRAFFIC, **CROWD, policies=["sarathi", "orca"])
    assert_clean(at)
    assert ("at most 128 requests running at once for Sarathi-Serve, 16 for Orca (each engine's "
            "own max running requests on this GPU for this model)") in shown(at)
    row = next(t for t in tables(at) if "TTFT p50" in t.index)
    assert _ttft_p50("orca", 16) != _ttft_p50("orca", 128)      # the seats matter here
    orca, sarathi = (POLICIES[p].label for p in ("orca", "sarathi"))   # the table's columns
    assert row.loc["TTFT p50", orca] == _ttft_p50("orca", 16)
    assert row.loc["TTFT p50", sarathi] == _ttft_p50("sarathi", 128)


def test_memory_page_says_each_engines_figure():
    at = open_app(MEMORY, **CROWD, gpu="a100-80gb", model="mistral-7b",
                  kvpolicies=["sglang", "vllm-v1"])
    assert_clean(at)
    assert "at most 4,096 requests running at once for SGLang, 256 for vLLM V1" in shown(at)


def _spy(monkeypatch, module, name: str, seen: list, position: int | None = None):
    """Wrap `module.name` to record the Limits of every call: (limits, baseline_limits), limits
    passed by keyword, or those of the run (sim/serving/run.py) at `position`."""
    real = getattr(module, name)

    def wrapped(*args, **kwargs):
        limits = kwargs.get("limits") if position is None else args[position].limits
        seen.append((limits, kwargs.get("baseline_limits")))
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, wrapped)


def test_budget_sweep_runs_the_chunked_policy_at_its_engines_seats(monkeypatch):
    points, strip = [], []
    _spy(monkeypatch, sweep, "run_point", points, position=0)
    _spy(monkeypatch, overhead, "budget_headline", strip, position=0)
    at = open_app(BUDGET, **{**CROWD, "seed": 4321}, gpu="a100-80gb", model="mistral-7b",
                  chunked="vllm-v1", bmin=256, bmax=1024)
    assert_clean(at)
    assert points and strip      # vLLM V1 on an A100: 256, in the sweep and its overhead strip
    assert {limits.max_seqs for limits, _ in points + strip} == {256}


def test_capacity_searches_the_baseline_at_its_own_seats(monkeypatch):
    searches, curves, strip = [], [], []
    _spy(monkeypatch, capacity, "compare_capacity", searches)
    _spy(monkeypatch, capacity, "rate_curve", curves)
    _spy(monkeypatch, overhead, "capacity_headline", strip)
    at = open_app(CAPACITY, requests=30, lengths="fixed", plen=512, olen=16, seed=4321,
                  unchunked="orca")
    at.button(key="find_capacity").click().run()
    if any(b.key == "overhead_capacity" for b in at.button):
        at.button(key="overhead_capacity").click().run()
    assert_clean(at)
    [(ours, theirs)] = searches
    assert (ours.max_seqs, theirs.max_seqs) == (128, 16)    # Sarathi-Serve, Orca
    assert [limits.max_seqs for limits, _ in curves] == [128, 16]
    [(ours, theirs)] = strip                                # the overhead strip's searches
    assert (ours.max_seqs, theirs.max_seqs) == (128, 16)
    assert "at most 128 requests running at once for Sarathi-Serve, 16 for Orca" in shown(at)
