"""The fidelity page's last check: the papers' published figures beside the lab's, the rows
`python -m sim reproduce` prints (sim/studies/reproduce.py, shipped results), as a table."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from sim.presets.models import MODELS
from sim.serving.policies import POLICIES
from sim.studies.reproduce import CAPACITY, Shipped, load_shipped, numbered_notes

COLUMNS = ("scenario", "metric", "simulated", "paper", "simulated / paper", "note")
# the scenarios that are not capacity searches, as the table names them (`reproduce --rerun`
# takes the key)
STUDY_NAMES = {"batch-times": "One iteration's time", "chunking-overhead": "Chunking overhead",
               "ablation": "Ablation (Table 4)",
               "distserve-example": "DistServe's example: OPT-13B, 2 prefill + 1 decode GPUs"}


def scenario_name(key: str) -> str:
    """A scenario as the table names it: a capacity search by its model, SLO and baseline."""
    if key in CAPACITY:
        c = CAPACITY[key]
        return (f"{MODELS[c.model].name}, P99 TBT ≤ {c.tbt_slo_s:g} s, "
                f"vs {POLICIES[c.baseline].engine}")
    return STUDY_NAMES.get(key, key)


def point_set_name(key: str) -> str:
    """A set of measured points as the error table names it: "held_out_tp2" is "held out, TP = 2"
    (`python -m sim validate` prints the key)."""
    held, _, tp = key.partition("_tp")
    return held.replace("_", " ") + (f", TP = {tp}" if tp else "")


@st.cache_data(show_spinner=False)
def shipped() -> Shipped:
    """The shipped results, read once per server."""
    return load_shipped()


def table(results: Shipped) -> pd.DataFrame:
    """One row per paper figure, in words as the command line prints them: times as times,
    ratios as 3.20x, "not expressible" (and no ratio) where the lab has no such setup; the note
    by its number in `notes` (a table cell would cut it short)."""
    numbers, _ = numbered_notes(results.rows)
    return pd.DataFrame([(scenario_name(r.scenario), r.metric, r.shown(r.simulated), r.shown(r.paper),
                          "" if r.ratio is None else f"{r.ratio:.2f}", number)
                         for r, number in zip(results.rows, numbers)], columns=COLUMNS)


def notes(results: Shipped) -> str:
    """The notes as a numbered Markdown list, each once."""
    return "\n".join(f"{n}. {note[0].upper()}{note[1:]}."
                     for n, note in enumerate(numbered_notes(results.rows)[1], 1))


def sources(results: Shipped) -> list[str]:
    """Where the paper figures come from, each once, in the table's order."""
    return list(dict.fromkeys(r.source for r in results.rows))
