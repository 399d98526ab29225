"""`simulate --requests-out`: one row per request that `--trace-in` replays as it is, to the same
per-request results."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from tests.support.cli import cli

# A small GPU that runs out of KV: requests are preempted, so the column has something to say.
PREEMPTING = ("--gpu", "l4", "--model", "llama-3.1-8b", "--policy", "vllm-v1", "--budget", "512")
COLUMNS = ["arrival_s", "prompt_tokens", "output_tokens", "ttft_s", "max_gap_s", "preemptions",
           "cached_tokens"]
# the ShareGPT trace's rows read as conversations: the file says which share their start
TRACE_COLUMNS = COLUMNS[:3] + ["prefix_group", "prefix_tokens"] + COLUMNS[3:]


def rows(path, columns=COLUMNS) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == columns
        return list(reader)


def number(cell: str) -> float:
    return float(cell) if cell else float("nan")


def test_the_file_replays_through_trace_in_to_the_same_results(tmp_path, capsys):
    first, again = tmp_path / "requests.csv", tmp_path / "replayed.csv"
    code, out, err = cli("simulate", *PREEMPTING, "--requests", "60", "--qps", "5", "--lengths",
                         "sharegpt-trace", "--seed", "4", "--requests-out", str(first), "--json",
                         capsys=capsys)
    assert code == 0, err
    run = json.loads(out)
    code, out, err = cli("simulate", *PREEMPTING, "--trace-in", str(first), "--requests-out",
                         str(again), "--json", capsys=capsys)
    assert code == 0, err
    replay = json.loads(out)
    assert rows(again, TRACE_COLUMNS) == rows(first, TRACE_COLUMNS)
    assert {k: replay[k] for k in ("iterations", "makespan_s", "ttft_s", "tbt_s")} == \
        {k: run[k] for k in ("iterations", "makespan_s", "ttft_s", "tbt_s")}
    # the rows are the run's own: its requests, its worst TTFT and gap, its preemptions
    table = rows(first, TRACE_COLUMNS)
    assert len(table) == run["requests"] == 60
    assert max(number(r["ttft_s"]) for r in table) == pytest.approx(run["ttft_s"]["max"])
    assert max(number(r["max_gap_s"]) for r in table) == pytest.approx(run["max_gap_s"])
    assert sum(int(r["preemptions"]) for r in table) == run["preemptions"] > 0
    arrivals = [float(r["arrival_s"]) for r in table]
    assert arrivals == sorted(arrivals) and all(int(r["output_tokens"]) >= 1 for r in table)


def test_requests_already_streaming_have_no_ttft_and_a_note_says_how_a_replay_differs(
        tmp_path, capsys):
    path = tmp_path / "seed.csv"
    code, out, err = cli("simulate", "--decodes", "3", "--decode-output", "4", "--requests-out",
                         str(path), capsys=capsys)
    assert code == 0, err
    table = rows(path)
    assert [r["ttft_s"] for r in table[:3]] == ["", "", ""] and number(table[3]["ttft_s"]) > 0
    assert [int(r["prompt_tokens"]) for r in table] == [4000, 4000, 4000, 8192]
    assert "the 3 requests already streaming" in out and "replay them as new prompts" in out


def test_a_single_token_request_has_no_gap(tmp_path, capsys):
    path = tmp_path / "one.csv"
    code, _, err = cli("simulate", "--requests", "5", "--qps", "1", "--output-tokens", "1",
                       "--requests-out", str(path), capsys=capsys)
    assert code == 0, err
    assert {r["max_gap_s"] for r in rows(path)} == {""}
    assert np.all(np.array([number(r["ttft_s"]) for r in rows(path)]) > 0)
