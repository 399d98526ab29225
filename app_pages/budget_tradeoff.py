"""Budget trade-off: one workload at many token budgets, p50 TTFT against p99 TBT."""

import pandas as pd
import streamlit as st

import app_state
import app_traffic
import app_ui
from sim.errors import InputError
from sim.sweep import OVERHEAD_SHARE, budget_grid, engine_defaults, recommend
from sim.units import fmt_seconds

s = app_ui.scenario()
look = app_ui.look()
policy = s.chunked

st.header("Budget trade-off")
st.markdown(
    "The token budget is a dial. A larger budget gives each iteration more prompt tokens, so "
    "prompts drain in fewer iterations (first tokens come sooner); but every running stream "
    "waits for the whole, longer iteration (the gaps between its tokens grow). Here the same "
    f"workload runs under **{policy}** (the sidebar's chunked policy) at each budget from the "
    "smallest to the largest, doubling, plus your budget and the engines' defaults.")
t, workload = app_traffic.traffic(s)
cols = st.columns(4)
low = app_ui.widget(app_state.BUDGET_RANGE[0], cols[0])
high = app_ui.widget(app_state.BUDGET_RANGE[1], cols[1])
tpot_s = app_ui.widget(app_state.TPOT, cols[2]) / 1e3
ttft_s = app_ui.widget(app_state.TTFT, cols[3])

vllm, sglang = engine_defaults(s.gpu)
try:
    budgets = budget_grid(low, high, extra=(s.budget, vllm.budget, sglang.budget))
except InputError as e:
    st.error(f"**Can't sweep these budgets:** {e}")
    st.stop()
points, skipped = app_traffic.sweep_points(t, s, workload, policy, budgets)
if skipped:
    many = len(skipped) > 1
    st.warning(f"Budget{'s' if many else ''} {', '.join(f'{b:,}' for b in skipped)} left out: "
               f"{'each' if many else 'it'} needs more than {app_traffic.MAX_ITERATIONS:,} "
               "iterations (the most a run here takes). Raise the smallest budget or shorten "
               "the workload.", icon=":material/timer_off:")
if not points:
    st.stop()
recommended, reason = recommend(points, tpot_s)
(st.success if recommended else st.warning)(
    f"**Recommended budget: {recommended:,}.** " if recommended else "**No recommendation.** ",
    icon=":material/recommend:")
st.markdown(f"Why: {reason}. The check reads the p99 of every gap between two tokens against "
            f"the TPOT target ({fmt_seconds(tpot_s)}): a per-token target, met by the slow tail "
            "too, not only on average.")

figure = app_traffic.frontier_figure(t, s, policy, budgets, recommended, ttft_s, tpot_s, look,
                                     points)
app_ui.chart(app_traffic.frontier_spec(t, s, policy, budgets, recommended, ttft_s, tpot_s, look,
                                       points), lambda: figure, "budget-frontier")
st.caption(f"{t.words()}. {s.model.name} on {s.gpu.name}, {s.mode} cost model.")

st.subheader("The two ends of the dial")
first, last = points[0], points[-1]
st.markdown(
    f"- **Overhead-dominated** (purple): fixed share = t(1 token) / t(budget tokens) > "
    f"{OVERHEAD_SHARE:g}, each a fresh prompt chunk priced by the cost model. Every iteration "
    "pays for reading the weights (and any per-iteration overhead) whatever its size, so a "
    "budget whose full iteration costs less than two empty ones spends most of its time on that "
    f"fixed part. At {first.budget:,}: t(1) / t({first.budget:,}) = {first.fixed_share:.2f}.\n"
    f"- **No split** (orange): budget ≥ longest prompt + the most decodes in an iteration = "
    f"{last.no_split_budget:,} here. The prompt at the head of the queue then always fits whole "
    "beside the decodes, as it would unchunked; only prompts behind it in the same iteration "
    f"take a leftover chunk (at {last.budget:,}: {last.split_prompts:,} of "
    f"{int((~workload.prefilled).sum()):,} prompts split).\n"
    f"- **Engine defaults** for the {s.gpu.name} ({s.gpu.memory_bytes / 1e9:,.4g} GB): "
    f"{vllm.engine} `{vllm.flag}` **{vllm.budget:,}** ({vllm.rule}; {vllm.source}), "
    f"{sglang.engine} `{sglang.flag}` **{sglang.budget:,}** ({sglang.rule}; {sglang.source})"
    + "".join(f"; {d.engine}'s {d.budget:,} is outside the swept range"
              for d in (vllm, sglang) if not low <= d.budget <= high)
    + ". Neither knows your latency targets.")

table = pd.DataFrame([{
    "budget": f"{p.budget:,}", "p50 TTFT": fmt_seconds(p.metrics.ttft_s.p50),
    "p99 TTFT": fmt_seconds(p.metrics.ttft_s.p99), "p99 TBT": fmt_seconds(p.metrics.tbt_s.p99),
    "max TBT": fmt_seconds(p.metrics.tbt_s.max),
    "throughput": f"{p.metrics.throughput_tokens_per_s:,.0f} tokens/s",
    "median scheduling delay": fmt_seconds(p.median_delay_s),
    "t(1) / t(budget)": f"{p.fixed_share:.2f}", "prompts split": f"{p.split_prompts:,}",
    "meets the TPOT target": "yes" if p.meets_tbt(tpot_s) else "no"} for p in points])
st.table(table.set_index("budget"))
st.caption("TTFT: first token − arrival; TBT: every gap between two successive tokens of a "
           "request; throughput: output tokens / makespan; scheduling delay: arrival to the "
           "first iteration that runs the request (Sarathi-Serve's); prompts split: requests "
           "whose prefill took more than one chunk. Percentiles interpolate linearly.")
notes = [f"budget {p.budget:,}: {note}" for p in points for note in p.notes]
if notes:
    with st.expander(f"What the runs noted ({len(notes)})", icon=":material/info:"):
        st.markdown("\n".join(f"- {note}" for note in notes))
