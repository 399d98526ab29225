"""`python -m sim exactness`: its JSON keys and numbers, its table, and bad input refused in one line
naming the flag and its range."""

import json

import pytest

from sim.studies import exactness as ex
from tests.support.cli import cli, refused


def test_json_has_the_documented_keys_and_the_studys_numbers(capsys):
    code, out, err = cli("exactness", "--prompt", "100", "--chunk", "30", "--seed", "4",
                         "--search-s", "0", "--json", capsys=capsys)
    assert code == 0, err
    data = json.loads(out)
    study = ex.exactness(100, 30, 4).as_dict()
    assert data == study
    assert (data["chunks"], data["last_chunk"]) == (4, 10)
    assert data["max_abs_diff_float64"] < 1e-12 and data["max_abs_diff_float32"] < 1e-4
    assert data["same_greedy_tokens"] is True
    assert "near_tie_search" not in data


def test_the_default_reads_a_256_token_prompt_and_reports_its_search_found_or_not(capsys):
    """The deadline itself is tested on a clock of the test's own
    (tests/sim/studies/test_exactness.py)."""
    code, out, err = cli("exactness", "--search-s", "0.2", "--json", capsys=capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["prompt"] == 256 and data["chunk"] == ex.DEFAULT_CHUNK
    search = data["near_tie_search"]
    assert search["seconds"] == 0.2 and search["found"] == ("found_seed" in search)
    assert search["seeds_tried"] == 0 or search["smallest_margin"] > 0


def test_the_table_says_how_the_prompt_was_cut_and_what_it_found(capsys):
    code, out, _ = cli("exactness", "--prompt", "10", "--chunk", "4", "--search-s", "0",
                       capsys=capsys)
    assert code == 0
    out = " ".join(out.split())   # long lines wrap at 120 columns
    assert "in 3 chunks of up to 4 tokens (the last 2)" in out
    assert "float32" in out and "float64" in out and "Near-tie search" not in out
    _, one, _ = cli("exactness", "--prompt", "10", "--chunk", "99", "--search-s", "0",
                    capsys=capsys)
    one = " ".join(one.split())
    assert "in 1 chunk (a chunk of 99 tokens holds the whole prompt" in one
    assert "0 (bit-identical)" in one


@pytest.mark.parametrize("argv, words", [
    (("--prompt", "0"), "--prompt must be ≥ 1, got 0"),
    (("--prompt", "4097"), "--prompt must be ≤ 4,096, got 4097"),
    (("--chunk", "0"), "--chunk must be ≥ 1, got 0"),
    (("--chunk", "1.5"), "--chunk must be a whole number, got 1.5"),
    (("--seed", "-3"), "--seed must be ≥ 0, got −3"),
    (("--search-s", "11"), "--search-s must be ≤ 10, got 11"),
    (("--budget", "5"), "unrecognized arguments: '--budget' '5'"),
])
def test_bad_input_is_one_line_naming_the_flag_and_its_range(argv, words, capsys):
    assert words in refused("exactness", *argv, capsys=capsys)
