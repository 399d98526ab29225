"""The Capacity page's figure: p99 TBT and median scheduling delay against the arrival rate for a
chunked policy and its baseline, with the SLO lines and each policy's capacity marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import pandas as pd

from sim.studies.capacity import CapacityComparison, CapacityPoint

from .figure import Figure
from .theme import Look
from .traffic import NAMED_POLICY, policy_color, with_policy_names


# --- capacity -------------------------------------------------------------------------------
def capacity_frame(comparison: CapacityComparison,
                   curves: Mapping[str, Sequence[CapacityPoint]]) -> pd.DataFrame:
    """Every rate each policy was run at: the bisection's and the evenly spaced curve's."""
    rows = []
    for result in (comparison.policy, comparison.baseline):
        for source, points in (("search", result.points), ("curve", curves.get(result.policy, ()))):
            for p in points:
                rows.append(dict(policy=result.policy, qps=p.qps, p99_tbt_ms=p.p99_tbt_s * 1e3,
                                 median_delay_s=p.median_delay_s, sustained=p.sustained,
                                 meets="meets both SLOs" if p.sustained else "misses an SLO",
                                 source=source))
    frame = pd.DataFrame(rows)
    return frame.sort_values(["policy", "qps"], ignore_index=True) if len(frame) else frame


def capacity_marks(comparison: CapacityComparison) -> pd.DataFrame:
    """A dashed rule at each policy's capacity (none where a cut-short search left it undefined)."""
    return pd.DataFrame([dict(policy=r.policy, qps=r.capacity_qps,
                              text=f"{r.policy}: {r.capacity_qps:.3g} QPS")
                         for r in (comparison.policy, comparison.baseline) if not r.undefined],
                        columns=["policy", "qps", "text"])


def capacity_chart(frame: pd.DataFrame, marks: pd.DataFrame, look: Look, *, tbt_slo_ms: float,
                   delay_slo_s: float, width: int = 420) -> Figure:
    """p99 TBT and median scheduling delay against the arrival rate, each with its SLO line and
    a dashed rule at each policy's capacity. Filled points meet both SLOs, hollow ones miss."""
    names = list(dict.fromkeys(marks.policy))
    color = policy_color(names, look)
    x = alt.X("qps:Q", title="arrival rate (requests/s)", scale=alt.Scale(zero=True))
    tooltip = [NAMED_POLICY, alt.Tooltip("qps:Q", title="QPS", format=",.4g"),
               alt.Tooltip("p99_tbt_ms:Q", title="p99 TBT (ms)", format=",.4g"),
               alt.Tooltip("median_delay_s:Q", title="median delay (s)", format=",.4g"),
               alt.Tooltip("meets:N"), alt.Tooltip("source:N", title="run by")]
    caps = alt.Chart(alt.Data(name="capacities")).mark_rule(strokeDash=[6, 3], strokeWidth=2) \
        .encode(x=x, color=color, tooltip=[alt.Tooltip("text:N", title="capacity")])

    def panel(field: str, title: str, slo: float, slo_text: str, log: bool) -> alt.LayerChart:
        y = alt.Y(f"{field}:Q", title=None, axis=alt.Axis(format=",.4~g"),
                  scale=alt.Scale(type="log") if log else alt.Scale(zero=True))
        base = with_policy_names(alt.Chart(alt.Data(name="capacity")))
        line = base.mark_line(strokeWidth=2).encode(x=x, y=y, color=color, order="qps:Q")
        size = 110 if look.presenter else 70
        meets = base.transform_filter(alt.datum.sustained).mark_point(
            size=size, filled=True, opacity=1).encode(x=x, y=y, color=color, tooltip=tooltip)
        misses = base.transform_filter(~alt.datum.sustained).mark_point(
            size=size, strokeWidth=2, fill=look.background, opacity=1).encode(
            x=x, y=y, color=color, tooltip=tooltip)
        rule_data = alt.Chart(alt.Data(values=[{field: slo, "text": slo_text}]))
        rule = rule_data.mark_rule(color=look.ink, strokeWidth=1.5).encode(y=y)
        text = rule_data.mark_text(align="left", baseline="bottom", x=4, dy=-3, color=look.ink,
                                   fontSize=look.font_size).encode(y=y, text="text:N")
        return alt.layer(caps, rule, text, line, meets, misses, width=width,
                         height=320 if look.presenter else 260, title=title)

    chart = alt.hconcat(
        panel("p99_tbt_ms", "p99 time between tokens (ms, log scale)", tbt_slo_ms,
              f"SLO {tbt_slo_ms:,.4g} ms", log=True),
        panel("median_delay_s", "median scheduling delay (s)", delay_slo_s,
              f"SLO {delay_slo_s:,.4g} s", log=False))
    return Figure(chart, look, {"capacity": frame, "capacities": marks})


