"""The Long and short requests page's settings and words (no Streamlit): which runs the page
makes (one engine at two settings of one of its knobs), and sentences and table cells chosen by
what those runs measured, so each says what its numbers show ("falls", "rises", "stays").

Every number here is a `ClassMetrics` percentile (sim/serving/metrics.py) of a run: TTFT and TBT
per class of requests, and the head-of-line wait (a request's time in the queue while another
class's prompt was being prefilled).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from sim.knobs import KNOBS
from sim.serving.metrics import ClassMetrics, Percentiles
from sim.serving.policies import POLICIES, Limits
from sim.serving.workloads import Workload
from sim.units import fmt_change, fmt_seconds, fmt_wait, shown_same

from ..shell.controls import VARY

# Each engine knob's flag as the engine spells it (the engine profiles cite each,
# sim/serving/engines.py); the budget's is the profile's own BudgetFlag.
ENGINE_FLAGS = {"long_prefill_token_threshold": "--long-prefill-token-threshold",
                "mixed_chunk": "--enable-mixed-chunk"}


@dataclass(frozen=True)
class Setting:
    """One run of the page: an engine (its policy) at a budget, with its knobs (`Limits` fields
    set apart from the page's base run)."""
    policy: str
    budget: int
    threshold: int = 0
    mixed_chunk: bool = False

    @property
    def label(self) -> str:
        engine = POLICIES[self.policy].engine
        if self.policy == "sglang":
            return f"{engine}, budget {self.budget:,}, mixed chunk {'on' if self.mixed_chunk else 'off'}"
        cap = f"threshold {self.threshold:,}" if self.threshold else "no threshold"
        return f"{engine}, budget {self.budget:,}, {cap}"

    def limits(self, base: Limits) -> Limits:
        return replace(base, long_prefill_token_threshold=self.threshold,
                       mixed_chunk=self.mixed_chunk)


@dataclass(frozen=True)
class KnobRow:
    """A row of "what each knob does": an engine's knob, from the base run's setting to another."""
    engine: str
    flag: str
    default: str
    before: Setting
    after: Setting
    values: tuple[str, str]   # the knob's value in each run, "0" and "256"

    @property
    def change(self) -> str:
        return " → ".join(self.values)


def knob_rows(budget: int, budget2: int, threshold: int, default_budgets: Mapping[str, int],
              budget_flags: Mapping[str, str]) -> tuple[KnobRow, ...]:
    """The table's rows, each one knob changed from its engine's base run at the sidebar's
    `budget` (vLLM V1 and SGLang at their defaults otherwise): vLLM V1's threshold to
    `threshold`, SGLang's mixed chunk on, and each engine's budget to `budget2`.
    `default_budgets` and `budget_flags`: each engine's own (its profile, on this GPU)."""
    v1, sg = Setting("vllm-v1", budget), Setting("sglang", budget)
    rows = []
    for base in (v1, sg):
        engine = POLICIES[base.policy].engine
        if base.policy == "vllm-v1":
            rows.append(KnobRow(engine, ENGINE_FLAGS["long_prefill_token_threshold"],
                                KNOBS["long_prefill_token_threshold"].shown_default or "",
                                base, replace(base, threshold=threshold), ("0", f"{threshold:,}")))
        else:
            rows.append(KnobRow(engine, ENGINE_FLAGS["mixed_chunk"], "off", base,
                                replace(base, mixed_chunk=True), ("off", "on")))
        rows.append(KnobRow(engine, budget_flags[base.policy],
                            f"{default_budgets[base.policy]:,} on this GPU", base,
                            replace(base, budget=budget2), (f"{budget:,}", f"{budget2:,}")))
    return tuple(rows)


def compared(vary: str, rows: tuple[KnobRow, ...]) -> KnobRow:
    """The row whose two settings the page draws side by side for the picker's `vary`."""
    wanted = {"threshold": ("vllm-v1", ENGINE_FLAGS["long_prefill_token_threshold"]),
              "mixedchunk": ("sglang", ENGINE_FLAGS["mixed_chunk"]),
              "budget": ("vllm-v1", None)}.get(vary)
    for row in rows:
        if wanted and row.before.policy == wanted[0] and (
                row.flag == wanted[1] if wanted[1] else row.before.budget != row.after.budget):
            return row
    raise ValueError(f"no comparison {vary!r}; the comparisons: {', '.join(VARY.options)}")


# --- the classes ---------------------------------------------------------------------------
def short_and_long(workload: Workload) -> tuple[str, str]:
    """The class with the shortest mean prompt and the one with the longest (the page's "short"
    and "long" requests)."""
    means = [float(np.mean(workload.prompt[workload.request_class == code]))
             if np.any(workload.request_class == code) else np.nan
             for code in range(len(workload.classes))]
    if len(workload.classes) < 2:
        raise ValueError("the page compares two classes of requests; this workload has "
                         f"{len(workload.classes)}")
    return workload.classes[int(np.nanargmin(means))], workload.classes[int(np.nanargmax(means))]


# --- changes in words -----------------------------------------------------------------------
def arrow(before: float, after: float) -> str:
    """A table cell: 'before → after', or the one value where both show alike."""
    return fmt_seconds(after) if shown_same(before, after) else \
        f"{fmt_seconds(before)} → {fmt_seconds(after)}"


@dataclass(frozen=True)
class Claim:
    """One sentence and the numbers it states: `metric` ("ttft_s", "tbt_s", "hol_wait_s") at
    percentile `p` of class `of` in the two runs."""
    text: str
    of: str
    metric: str
    p: str
    before: float
    after: float


METRIC_WORDS = {"ttft_s": "time to first token", "tbt_s": "gap between two tokens",
                "hol_wait_s": "head-of-line wait"}
# how each metric's times read: a wait of 0 as "none"
SHOWN = {"ttft_s": fmt_seconds, "tbt_s": fmt_seconds, "hol_wait_s": fmt_wait}


def claims(short: str, long: str, before: Mapping[str, ClassMetrics],
           after: Mapping[str, ClassMetrics], row: KnobRow) -> tuple[Claim, ...]:
    """What changing `row`'s knob did, in sentences: the short requests' p99 TTFT and p99
    head-of-line wait, the long requests' p50 TTFT, and the short requests' p99 gap."""
    def claim(of: str, metric: str, p: str, lead: str) -> Claim:
        x = getattr(getattr(before[of], metric), p)
        y = getattr(getattr(after[of], metric), p)
        return Claim(f"{lead} {fmt_change(x, y, ratio=False, shown=SHOWN[metric])}", of, metric,
                     p, x, y)

    said = [claim(short, "ttft_s", "p99", f"With {row.engine}'s `{row.flag}` from "
                                          f"{row.values[0]} to {row.values[1]}, the {short} "
                                          "requests' p99 time to first token"),
            claim(short, "hol_wait_s", "p99", f"Their p99 {METRIC_WORDS['hol_wait_s']} (time in "
                                              f"the queue while a {long} prompt was prefilled)"),
            claim(long, "ttft_s", "p50", f"The {long} requests' median time to first token"),
            claim(short, "tbt_s", "p99", f"The {short} requests' p99 gap between two tokens")]
    return tuple(said)


def verdict(said: tuple[Claim, ...]) -> str:
    """One sentence over the claims: whom the change helps and who pays, by the directions."""
    short_ttft, _, long_ttft, _ = said
    short, long = short_ttft.of, long_ttft.of
    helped, paid = falls(short_ttft), rises(long_ttft)
    if helped and paid:
        return (f"The trade: the {short} requests' p99 first token comes sooner, and the {long} "
                "requests pay for it with a later median first token.")
    if helped:
        return (f"The {short} requests' p99 first token comes sooner, and the {long} requests' "
                "median first token comes no later: here the change costs nothing.")
    if paid:
        return (f"The {long} requests' median first token comes later, and the {short} "
                "requests' p99 first token comes no sooner: here the change costs without buying.")
    return (f"The {short} requests' p99 first token comes no sooner and the {long} requests' "
            "median no later: at this load the change barely matters.")


def falls(c: Claim) -> bool:
    """The claim's number falls by more than its display shows as equal."""
    return c.after < c.before and not shown_same(c.after, c.before)


def rises(c: Claim) -> bool:
    return c.after > c.before and not shown_same(c.after, c.before)


def table_cells(row: KnobRow, short: str, long: str, before: Mapping[str, ClassMetrics],
                after: Mapping[str, ClassMetrics], tbt_before: Percentiles,
                tbt_after: Percentiles) -> dict[str, str]:
    """One row of "what each knob does" as text, every effect from the two runs."""
    return {"engine": row.engine, "flag": f"`{row.flag}`", "engine's default": row.default,
            "run at": row.change,
            f"{short} TTFT p99": arrow(before[short].ttft_s.p99, after[short].ttft_s.p99),
            f"{long} TTFT p50": arrow(before[long].ttft_s.p50, after[long].ttft_s.p50),
            "TBT p99 (every gap)": arrow(tbt_before.p99, tbt_after.p99)}


def percentile_rows(short: str, long: str, metrics: Mapping[str, ClassMetrics]) -> dict[str, str]:
    """A column of the per-class percentiles table for one run: each class's TTFT, TBT and
    head-of-line wait at p50 and p99."""
    column = {}
    for of in (short, long):
        for metric, name in (("ttft_s", "TTFT"), ("tbt_s", "TBT"), ("hol_wait_s", "HOL wait")):
            for p in ("p50", "p99"):
                column[f"{of}: {name} {p}"] = SHOWN[metric](getattr(getattr(metrics[of], metric), p))
    return column
