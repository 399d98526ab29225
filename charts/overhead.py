"""The overhead strips' tables: a page's headline at each CPU overhead level
(sim/studies/overhead.py), one row a level, the page's own level marked. Pure (pandas)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from sim.studies.capacity import CapacityComparison
from sim.studies.overhead import BudgetHeadline, LaneHeadline, Strip
from sim.units import fmt_seconds

LEVEL = "CPU time per iteration"


def _frame(found: Strip, columns: Sequence[tuple[str, Callable[[object], str]]],
           label: Callable[[float, float], str]) -> pd.DataFrame:
    rows = [{LEVEL: label(level.cpu_s, found.current_s),
             **{title: cell(level.result) for title, cell in columns}} for level in found.levels]
    return pd.DataFrame(rows).set_index(LEVEL)


def lanes_frame(found: Strip[tuple[LaneHeadline, ...]], lanes: Sequence[str],
                label: Callable[[float, float], str]) -> pd.DataFrame:
    """Each lane's streams' longest wait and the new request's TTFT, `lanes` naming them."""
    columns = []
    for index, name in enumerate(lanes):
        columns += [(f"{name}: longest wait", lambda r, i=index: fmt_seconds(r[i].longest_wait_s)),
                    (f"{name}: TTFT", lambda r, i=index: fmt_seconds(r[i].ttft_s))]
    return _frame(found, columns, label)


def budget_frame(found: Strip[BudgetHeadline],
                 label: Callable[[float, float], str]) -> pd.DataFrame:
    """The recipe's budget with its p99 TBT and p50 TTFT, and the targets it misses (a budget
    that misses one is not called recommended)."""
    return _frame(found, [
        ("budget (largest within the TBT target)",
         lambda r: "none" if r.budget is None else f"{r.budget:,}"),
        ("its p99 TBT", lambda r: fmt_seconds(r.p99_tbt_s)),
        ("its p50 TTFT", lambda r: fmt_seconds(r.p50_ttft_s)),
        ("meets every target", lambda r: "—" if r.budget is None else
         "yes: recommended" if not r.misses else f"no: {'; '.join(r.misses)}")], label)


def capacity_frame(found: Strip[CapacityComparison],
                   label: Callable[[float, float], str]) -> pd.DataFrame:
    """Both capacities and their ratio."""
    first = found.levels[0].result
    return _frame(found, [
        (f"{first.policy.policy} capacity", lambda c: f"{c.policy.capacity_qps:.3g} requests/s"),
        (f"{first.baseline.policy} capacity",
         lambda c: f"{c.baseline.capacity_qps:.3g} requests/s"),
        ("ratio", lambda c: "undefined" if c.ratio is None else f"{c.ratio:.2f}×")], label)
