"""The Memory page's chart: each policy's panel against its own KV capacity."""

from __future__ import annotations

import vl_convert as vlc

from charts import memory as memory_charts
from charts.theme import Look
from sim.serving.policies import get_policy
from sim.studies.memory import kv_capacity


def capacity_lines(spec: dict) -> list[str]:
    """The dashed line's label on each panel (its rule and its text share one row of data)."""
    return [" | ".join(sorted({v["text"] for layer in panel["layer"]
                               for v in layer.get("data", {}).get("values", [])}))
            for panel in spec["vconcat"]]


def test_each_panel_draws_its_own_policys_capacity(memory_bound):
    """Sarathi-Serve keeps 15% of the L4's memory back, vLLM V1 8%: two capacities, each on its
    own panel, each the one the page's table shows for that engine (not the first policy's on
    both)."""
    cost, traces = memory_bound
    frame = memory_charts.kv_frame(traces, cost.kv_bytes_per_token, points=40)
    figure = memory_charts.kv_chart(frame, Look())
    spec = figure.spec()
    vlc.vegalite_to_svg(spec)
    expected = [kv_capacity(cost, get_policy(p), 576).tokens.value for p in traces]
    assert len(set(expected)) == 2
    assert capacity_lines(spec) == [f"KV capacity {c:,} tokens" for c in expected]
    assert spec["vconcat"][0]["layer"][0]["encoding"]["y"]["scale"]["domain"][1] == \
        max(expected) * 1.08
    for name, trace in traces.items():
        assert set(frame[frame.policy == name].capacity_tokens) == {trace.kv_capacity_tokens}
