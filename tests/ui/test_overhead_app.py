"""The overhead strips on Side by side, Budget trade-off and Capacity, opened in AppTest: each
shows its headline at 0, 4 and 10 ms of CPU per iteration, the page's own level marked and equal
to what the page shows above it; Capacity's runs its searches only on request."""

from charts.overhead import LEVEL
from tests.support.apptest import assert_clean, metrics, open_app, shown, tables

SIDE = "pages/learn/side_by_side.py"
BUDGET = "pages/under_load/budget_tradeoff.py"
CAPACITY = "pages/advanced/capacity.py"
LEVELS = ["0 ms (no overhead)", "4 ms (measured)", "10 ms (high)"]


def strip_table(at):
    return next(t for t in tables(at) if t.index.name == LEVEL)


def test_side_by_side_strip_marks_the_simple_modes_zero_and_matches_the_cards():
    at = open_app(SIDE)
    assert_clean(at)
    rows = strip_table(at)
    assert list(rows.index) == [f"{LEVELS[0]}, as above", *LEVELS[1:]]
    cards = dict(metrics(at))            # the chunked lane's cards come last, overriding
    assert rows.iloc[0]["chunked: longest wait"] == cards["Largest gap"] == "23.04 ms"
    assert rows.iloc[0]["chunked: TTFT"] == cards["New request TTFT"]
    assert rows.iloc[0]["unchunked: longest wait"] == "333 ms"
    assert list(rows["chunked: longest wait"]) == ["23.04 ms", "27.04 ms", "33.04 ms"]
    assert "How sure is this?" in shown(at)


def test_side_by_side_strip_says_an_overlapped_lane_does_not_move():
    at = open_app(SIDE, gpu="h100-sxm", model="llama-3.1-8b", mode="calibrated",
                  chunked="vllm-v1")
    assert_clean(at)
    rows = strip_table(at)
    assert rows.index[1] == f"{LEVELS[1]}, as above"
    assert len(set(rows["chunked: longest wait"])) == 1
    assert len(set(rows["unchunked: longest wait"])) == 3
    assert "vLLM V1 (overlapped, as in vLLM 0.33.0: max(GPU, CPU) per iteration)" in shown(at)


def test_budget_strip_recommends_what_the_page_does_at_its_own_level():
    at = open_app(BUDGET)
    assert_clean(at)
    rows = strip_table(at)
    assert rows.loc[f"{LEVELS[0]}, as above", "budget (largest within the TBT target)"] == "576"
    assert rows.loc[f"{LEVELS[0]}, as above", "meets every target"] == "yes: recommended"
    assert "Recommended budget: 576" in at.success[0].value
    # at 10 ms the recipe's 256 keeps the TBT target but misses the 3 s TTFT one: not recommended
    assert rows.loc[LEVELS[2], "meets every target"].startswith("no: p50 TTFT ")


def test_capacity_strip_waits_for_the_search_and_then_for_its_own_button():
    """100 ShareGPT-like requests: the four more searches are estimated over the 3 s a page runs
    without asking, so they wait for their button, and the page says why."""
    query = dict(requests=100, lengths="sharegpt", gpu="a100-80gb", model="mistral-7b",
                 mode="calibrated")
    at = open_app(CAPACITY, **query)
    assert "How sure is this?" not in shown(at)       # nothing before the page's own search
    at.button(key="find_capacity").click().run()
    assert_clean(at)
    assert not any(t.index.name == LEVEL for t in tables(at))
    assert "To replay it at 0 ms / 4 ms / 10 ms of CPU time" in shown(at)
    at.button(key="overhead_capacity").click().run()
    assert_clean(at)
    rows = strip_table(at)
    assert list(rows.index) == [LEVELS[0], f"{LEVELS[1]}, as above", LEVELS[2]]
    assert rows.loc[f"{LEVELS[1]}, as above", "ratio"] == dict(metrics(at))["Capacity ratio"]
    ratios = [float(r.rstrip("×")) for r in rows["ratio"]]
    assert ratios == sorted(ratios)          # vLLM V0 pays the overhead on every decode step
