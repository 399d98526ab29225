"""`--json` never prints null (an undefined value is left out and a note says why), and a refusal's
advice names only flags the command line's mode accepts."""

from __future__ import annotations

import json

import pytest

from cli.output import NO_SECOND_TOKEN, finite
from tests.support.cli import cli

ONE_TOKEN = ("--requests", "5", "--qps", "1", "--output-tokens", "1")


@pytest.mark.parametrize("argv", [
    ("simulate", *ONE_TOKEN),
    ("sweep", "--budgets", "256,512", *ONE_TOKEN),
    ("capacity", "--tbt-slo", "0.1", "--requests", "5", "--output-tokens", "1", "--max-runs", "2"),
])
def test_no_second_token_leaves_tbt_out_of_the_json_with_a_note(argv, capsys):
    """No request emits a second token: every TBT percentile printed null."""
    code, out, err = cli(*argv, "--json", capsys=capsys)
    assert code == 0, err
    assert "null" not in out and "NaN" not in out
    data = json.loads(out)
    notes = [n for p in data for n in p["notes"]] if isinstance(data, list) else data["notes"]
    assert NO_SECOND_TOKEN in notes
    code, text, _ = cli(*argv, capsys=capsys)
    assert "no request emitted a second token" in text


def test_simulate_leaves_out_exactly_the_undefined_keys(capsys):
    _, out, _ = cli("simulate", *ONE_TOKEN, "--json", capsys=capsys)
    data = json.loads(out)
    assert "tbt_s" not in data and "tpot_s" not in data and "max_gap_s" not in data
    assert set(data["ttft_s"]) == {"p50", "p90", "p99", "max"}


def test_a_sweep_without_an_slo_leaves_out_meets_tbt_slo(capsys):
    _, out, _ = cli("sweep", "--budgets", "256", "--requests", "5", "--qps", "1", "--json",
                    capsys=capsys)
    assert "null" not in out and "meets_tbt_slo" not in json.loads(out)[0]


def test_finite_drops_undefined_values_at_any_depth():
    assert finite({"a": float("nan"), "b": {"c": None}, "d": [1.0, float("inf"), {"e": 2}],
                   "f": 0}) == {"d": [1.0, {"e": 2}], "f": 0}


@pytest.mark.parametrize("argv", [
    ("simulate", "--requests", "1000000", "--qps", "1000", "--lengths", "sharegpt"),
    ("sweep", "--requests", "200000", "--qps", "100", "--lengths", "sharegpt"),
    ("capacity", "--tbt-slo", "0.1", "--lengths", "sharegpt", "--requests", "20000",
     "--max-iterations", "5000000"),
    ("simulate", "--requests", "1000000", "--qps", "1000", "--lengths", "sharegpt-trace"),
    ("capacity", "--tbt-slo", "0.1", "--lengths", "sharegpt-trace", "--requests", "20000",
     "--max-iterations", "5000000"),
])
def test_advice_under_sharegpt_lengths_never_names_output_tokens(argv, capsys):
    """--lengths sharegpt (and sharegpt-trace) refuse --output-tokens, and their refusals
    advised it."""
    code, _, err = cli(*argv, capsys=capsys)
    assert code == 2 and "--requests" in err
    assert "--output-tokens" not in err and "--prompt-tokens" not in err
    code, _, err = cli(*argv, "--output-tokens", "10", capsys=capsys)
    assert code == 2 and ("does not apply" in err or "do not apply" in err)
