"""When a freeze shows in the p50, the p99 and the max gap, in words with a run's numbers (the
Traffic page): a freeze (a gap over 100 ms) reaches the p99 only when more than about 1% of all
gaps are freezes, and the p50 only past half of them, so the p99 may stay put while the max gap
moves. Pure Python (no Streamlit)."""

from __future__ import annotations

from sim.studies.stalls import Stalls
from sim.units import fmt_percent, fmt_seconds


def percentile_words(label: str, s: Stalls) -> str:
    """One policy's sentence (Markdown), chosen by where its freezes reach: none; only the max;
    the p99 too; the median too. `s`: sim.studies.stalls.stalls of its run."""
    if not s.gaps:
        return f"**{label}**: no request emitted two tokens, so there is no gap to rank."
    line = fmt_seconds(s.threshold_s)
    p50, p99, top = (fmt_seconds(x) for x in (s.median_gap_s, s.steady_gap_s, s.largest_gap_s))
    counted = f"{fmt_percent(s.share)} of all gaps ({s.gaps_over:,} of {s.gaps:,})"
    if not s.gaps_over:
        return (f"**{label}**: no gap is a freeze (over {line}): the max gap, {top}, is under the "
                f"line, and so are p50 {p50} and p99 {p99}.")
    if s.median_gap_s > s.threshold_s:
        return (f"**{label}**: {counted} are freezes (over {line}), more than half, so even the "
                f"median gap is one: p50 {p50}, p99 {p99}, max {top}.")
    if s.steady_gap_s > s.threshold_s:
        return (f"**{label}**: {counted} are freezes (over {line}), enough to reach the p99: p99 "
                f"{p99}, max {top}; p50 {p50} stays under the line until half the gaps are "
                "freezes.")
    if s.share > 0.01:
        return (f"**{label}**: {counted} are freezes (over {line}), just over 1%, yet the p99 "
                "falls between the last gap under the line and the first freeze (percentiles "
                f"interpolate between ranked gaps) and lands under it: p99 {p99} (p50 {p50}) "
                f"while the max gap is {top}.")
    return (f"**{label}**: a freeze reaches the p99 only when more than 1% of gaps are freezes "
            f"(over {line}): here {counted} are, so the p99 stays put: p99 {p99}, p50 {p50}, "
            f"while the max gap is {top}.")
