"""The Memory page's figure: KV cache in use over time per policy, against the capacity."""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import numpy as np
import pandas as pd

from sim.serving.engine import Trace

from .figure import Figure
from .frames import iterations_frame
from .theme import Look
from .traffic import NAMED_POLICY, policy_color, policy_title, with_policy_names

KV_POINTS = 400          # points per KV curve


# --- KV memory ------------------------------------------------------------------------------
def kv_frame(traces: Mapping[str, Trace], kv_bytes_per_token: float,
             points: int = KV_POINTS) -> pd.DataFrame:
    """KV tokens in use over time per policy: per iteration, or (long runs) the most in each of
    the timeline's bars (`charts.frames.iterations_frame`), so the peak is kept; with the
    preemptions in each, and the policy's own KV capacity (its engine's reserve and blocks)."""
    parts = []
    for name, trace in traces.items():
        bars = iterations_frame(trace, name, points)
        first = bars.iteration.to_numpy()
        used = np.maximum.reduceat(trace.kv_used_tokens, first)
        parts.append(pd.DataFrame({
            "policy": name, "time_s": bars.start_ms.to_numpy() / 1e3, "kv_tokens": used,
            "kv_gib": used * kv_bytes_per_token / 2**30,
            "share": used / trace.kv_capacity_tokens,
            "capacity_tokens": trace.kv_capacity_tokens,
            "preemptions": np.add.reduceat(trace.iteration_preemptions, first),
            "iterations": bars.iterations.to_numpy()}))
    return pd.concat(parts, ignore_index=True)


def kv_chart(frame: pd.DataFrame, look: Look, *, width: int = 900) -> Figure:
    """A panel per policy, on one scale: KV in use against that policy's own capacity (engines
    keep back different shares of memory), and a tick wherever the policy preempted."""
    names = list(dict.fromkeys(frame.policy))
    capacity = frame.groupby("policy", sort=False).capacity_tokens.first()
    color = policy_color(names, look)
    # the domain is given: a panel's preemption ticks are often none, and an empty layer's
    # extent (Infinity, -Infinity) makes Vega warn
    x = alt.X("time_s:Q", title="time (s)", axis=alt.Axis(format=",.3~f"),
              scale=alt.Scale(domain=[0, float(frame.time_s.max())]))
    y = alt.Y("kv_tokens:Q", title="KV tokens in use", axis=alt.Axis(format=",.3~s"),
              scale=alt.Scale(domain=[0, int(capacity.max()) * 1.08]))
    tooltip = [NAMED_POLICY, alt.Tooltip("time_s:Q", title="time (s)", format=",.4f"),
               alt.Tooltip("kv_tokens:Q", title="KV tokens", format=","),
               alt.Tooltip("kv_gib:Q", title="KV (GiB)", format=",.3f"),
               alt.Tooltip("share:Q", title="of capacity", format=".1%"),
               alt.Tooltip("preemptions:Q", format=","),
               alt.Tooltip("iterations:Q", title="iterations in this point", format=",")]
    panels = []
    for name in names:
        cap = alt.Chart(alt.Data(values=[{"kv_tokens": int(capacity[name]),
                                          "text": f"KV capacity {int(capacity[name]):,} tokens"}]))
        cap_rule = cap.mark_rule(color=look.ink, strokeWidth=1.5, strokeDash=[6, 3]).encode(y=y)
        cap_text = cap.mark_text(align="left", baseline="bottom", x=4, dy=-3, color=look.ink,
                                 fontSize=look.font_size).encode(y=y, text="text:N")
        base = with_policy_names(alt.Chart(alt.Data(name="kv")).transform_filter(
            alt.datum.policy == name))
        area = base.mark_area(interpolate="step-after", opacity=0.35).encode(
            x=x, y=y, color=color)
        line = base.mark_line(interpolate="step-after", strokeWidth=2).encode(
            x=x, y=y, color=color, tooltip=tooltip)
        ticks = base.transform_filter(alt.datum.preemptions > 0).mark_tick(
            thickness=2, size=16, color=look.ink).encode(x=x, y=y, tooltip=tooltip)
        panels.append(alt.layer(area, cap_rule, cap_text, line, ticks, width=width,
                                height=170 if look.presenter else 120,
                                title=policy_title(name)))
    chart = alt.vconcat(*panels, resolve=alt.Resolve(scale=alt.ScaleResolveMap(
        x="shared", y="shared"))).properties(title=alt.TitleParams(
            "KV cache in use", subtitle="ticks: iterations that preempted a request (its KV "
                                        "freed, its work to be recomputed)"))
    return Figure(chart, look, {"kv": frame})


