"""Budget trade-off: one workload at many token budgets, p50 TTFT against p99 TBT."""

import pandas as pd
import streamlit as st

from sim.errors import InputError
from sim.studies.sweep import (
    SweepPoint,
    budget_grid,
    engine_defaults,
    misses,
    offline_tradeoff,
    recommend,
    ttft_trend,
)
from sim.units import fmt_seconds
from ui.shell import controls, presenter, widgets
from ui.under_load import overhead, sweep, workload_box
from ui.under_load import words as traffic_words

s = widgets.scenario()
look = widgets.look()
policy = s.chunked

st.header("Budget trade-off")
st.markdown(traffic_words.budget_intro(policy), unsafe_allow_html=True)
t, workload = workload_box.show(s)
cols = st.columns(4)
low = widgets.widget(controls.BUDGET_RANGE[0], cols[0])
high = widgets.widget(controls.BUDGET_RANGE[1], cols[1])
tpot_s = widgets.widget(controls.TPOT, cols[2]) / 1e3
ttft_s = widgets.widget(controls.TTFT, cols[3])

vllm, sglang = engine_defaults(s.gpu)
try:
    budgets = budget_grid(low, high, extra=(s.budget, vllm.budget, sglang.budget))
except InputError as e:
    st.error(f"**Can't sweep these budgets:** {e}")
    st.stop()
points, skipped = sweep.sweep_points(t, s, workload, policy, budgets)
if skipped:
    st.warning("Left out of the sweep: " + "; ".join(f"budget {b:,}: {why}"
                                                     for b, why in skipped.items())
               + ". Raise the smallest budget or shorten the workload.",
               icon=":material/timer_off:")
if not points:
    st.stop()


def max_within(p: SweepPoint) -> bool:
    """Even the longest gap between two tokens meets the target (no gaps: nothing to miss)."""
    return not p.metrics.tbt_s.max > tpot_s


recommended, reason = recommend(points, tpot_s, ttft_s)
target = fmt_seconds(tpot_s)
pick = next((p for p in points if p.budget == recommended), None)
missed = misses(pick, tpot_s, ttft_s) if pick else []
if pick is None:
    st.warning("**No recommendation.**", icon=":material/recommend:")
elif missed:
    st.warning(f"**Recommended budget: {recommended:,}, but it misses a target:** "
               f"{'; '.join(missed)}. No budget in the sweep meets both (below).",
               icon=":material/recommend:")
elif not max_within(pick):
    st.warning(f"**Recommended budget by p99 TBT: {recommended:,}**, but its longest gap between "
               f"two tokens ({fmt_seconds(pick.metrics.tbt_s.max)}) misses the {target} target "
               "(below).", icon=":material/recommend:")
else:
    st.success(f"**Recommended budget: {recommended:,}**: it meets every target drawn below.",
               icon=":material/recommend:")
st.markdown(f"Why: {reason}. The check reads the p99 of every gap between two tokens against "
            f"the TPOT target ({target}) and the median TTFT against the TTFT target "
            f"({fmt_seconds(ttft_s)})"
            + (f"; the slow tail meets it too: the longest gap at {pick.budget:,} is "
               f"{fmt_seconds(pick.metrics.tbt_s.max)}." if pick and max_within(pick) else "."))
st.markdown(ttft_trend(points))
offline = offline_tradeoff(points, recommended, s.cost_model().weight_bytes)
if offline:
    st.markdown(offline)
hidden = [p for p in points if p.meets_tbt(tpot_s) and not max_within(p)]
if hidden:
    worst = pick if pick in hidden else max(hidden, key=lambda p: p.metrics.tbt_s.max)
    whole = [p for p in points if max_within(p)]
    calmest = min(points, key=lambda p: p.metrics.tbt_s.max)
    st.warning(
        f"**The p99 hides a stall.** At {'the recommended ' if worst is pick else ''}budget "
        f"{worst.budget:,} the p99 TBT is {fmt_seconds(worst.metrics.tbt_s.p99)}, within the "
        f"{target} target, but the longest gap between two tokens is "
        f"**{fmt_seconds(worst.metrics.tbt_s.max)}**, above it. An iteration that holds up every "
        "running stream at once (prompt tokens only, decodes waiting) gives each stream one long "
        "gap among its many short ones: too few of all the gaps to reach the p99, yet each of "
        f"those streams pauses that long. {len(hidden):,} of the {len(points):,} budgets swept "
        "meet the target at p99 but not at max (the max TBT column). "
        + (f"The largest budget whose every gap meets it: **{whole[-1].budget:,}**." if whole else
           "No budget in the sweep keeps every gap within it: the smallest max TBT is "
           f"{fmt_seconds(calmest.metrics.tbt_s.max)}, at {calmest.budget:,}."),
        icon=":material/warning:")

with presenter.figure():
    sweep.frontier.draw("budget-frontier", t, s, policy, budgets, recommended, ttft_s, tpot_s,
                        look, points)
st.caption(f"{t.words()}. {s.model.name} on {s.gpu.name}, {s.mode} cost model; "
           f"{t.seats_words([policy], s)}.")
strip_slot = st.container()   # filled last: it may wait for a button

st.subheader("The two ends of the dial")
ends = traffic_words.dial_ends(points, int((~workload.prefilled).sum()))
st.markdown("\n".join(f"- {end}" for end in ends)
            + f"\n- {sweep.engine_defaults_words(s.gpu, (low, high))}")

table = pd.DataFrame([{
    "budget (tokens)": f"{p.budget:,}", "p50 TTFT": fmt_seconds(p.metrics.ttft_s.p50),
    "p99 TTFT": fmt_seconds(p.metrics.ttft_s.p99), "p99 TBT": fmt_seconds(p.metrics.tbt_s.p99),
    "max TBT": fmt_seconds(p.metrics.tbt_s.max),
    "throughput": f"{p.metrics.throughput_tokens_per_s:,.0f} tokens/s",
    "median scheduling delay": fmt_seconds(p.median_delay_s),
    "t(1) / t(budget)": f"{p.fixed_share:.2f}", "prompts split": f"{p.split_prompts:,}",
    "p50 TTFT ≤ target": "yes" if not p.metrics.ttft_s.p50 > ttft_s else "no",
    "p99 TBT ≤ target": "yes" if p.meets_tbt(tpot_s) else "no",
    "max TBT ≤ target": "yes" if max_within(p) else "no"} for p in points])
widgets.table(table.set_index("budget (tokens)"))
st.caption("TTFT: first token − arrival; TBT: every gap between two successive tokens of a "
           "request; throughput: output tokens / makespan; scheduling delay: arrival to the "
           "first iteration that runs the request (Sarathi-Serve's); prompts split: requests "
           "whose prefill took more than one chunk. Percentiles interpolate linearly.")
notes = [f"budget {p.budget:,}: {note}" for p in points for note in p.notes]
if notes:
    with st.expander(f"What the runs noted ({len(notes)})", icon=":material/info:"):
        st.markdown("\n".join(f"- {note}" for note in notes))

with strip_slot:
    overhead.budget_tradeoff(t, s, workload, policy, points, tpot_s, ttft_s)
