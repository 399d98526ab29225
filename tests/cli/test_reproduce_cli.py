"""`python -m sim reproduce`: the shipped table as JSON with the keys scripts read, every row's
figures; the text names the command and commit that made it; `--rerun` recomputes one scenario
and says at what effort; bad input exits 2 naming the choices."""

import json

import pytest

from sim.studies.reproduce import FULL, RERUN, load_shipped
from tests.support.cli import cli

KEYS = {"scenario", "metric", "simulated", "paper", "ratio", "note"}
UNDEFINED = {"simulated", "ratio"}   # left out (as every command's JSON leaves out what is undefined)


def test_json_is_a_list_of_rows_with_every_paper_figure(capsys):
    code, out, err = cli("reproduce", "--json", capsys=capsys)
    assert code == 0, err
    rows = json.loads(out)
    shipped = load_shipped().rows
    assert len(rows) == len(shipped) >= 20
    for row, r in zip(rows, shipped):
        assert (row["scenario"], row["metric"], row["paper"]) == (r.scenario, r.metric, r.paper)
        if r.simulated is None:   # not expressible: no number, and the note says why
            assert set(row) >= KEYS - UNDEFINED and not set(row) & UNDEFINED
            assert "not expressible" in row["note"]
        else:
            assert set(row) >= KEYS
            assert row["ratio"] == pytest.approx(row["simulated"] / row["paper"])


def test_the_table_says_which_command_and_commit_made_it(capsys):
    code, out, _ = cli("reproduce", capsys=capsys)
    shipped = load_shipped()
    flat = " ".join(out.split())
    assert code == 0
    assert f"`{shipped.command}` at commit {shipped.commit}" in flat
    assert "not expressible" in flat and "simulated / paper" in flat


@pytest.mark.slow   # a capacity search or whole runs measured: make test runs it
def test_a_capacity_rerun_says_its_reduced_effort(capsys):
    code, out, _ = cli("reproduce", "--rerun", "mistral-7b-relaxed", capsys=capsys)
    flat = " ".join(out.split())
    assert code == 0
    assert f"reduced effort: {RERUN.describe()} (shipped: {FULL.describe()})" in flat


def test_an_exact_rerun_prints_the_shipped_figures_again(capsys):
    code, out, _ = cli("reproduce", "--rerun", "batch-times", "--json", capsys=capsys)
    assert code == 0
    rerun = json.loads(out)
    assert [r["simulated"] for r in rerun] == \
        [r.simulated for r in load_shipped().rows if r.scenario == "batch-times"]


def test_an_unknown_scenario_exits_2_naming_the_choices(capsys):
    code, out, err = cli("reproduce", "--rerun", "table-9", capsys=capsys)
    assert code == 2 and not out
    assert "table-9" in err and "ablation" in err and len(err.strip().splitlines()) == 1
