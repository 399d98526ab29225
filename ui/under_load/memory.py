"""The Memory page's figure: the KV cache each policy holds over a workload's run, against the
capacity."""

from __future__ import annotations

from charts import memory as memory_charts
from charts.figure import Figure
from charts.theme import Look
from sim.serving.engine import Trace

from ..shell.cached_figure import cached_figure


@cached_figure()
def kv(key: tuple[str, ...], kv_bytes_per_token: float, look: Look, width: int,
       _traces: dict[str, Trace]) -> Figure:
    """KV in use over time under each policy against its own capacity (time bins on long runs,
    each keeping its peak), keyed on the runs (ui.under_load.traffic.Served.key)."""
    return memory_charts.kv_chart(memory_charts.kv_frame(_traces, kv_bytes_per_token), look,
                                  width=width)
