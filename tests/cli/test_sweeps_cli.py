"""The traffic commands (`sweep`, `capacity`, `simulate --scenario burst / --trace-in`) driven in
process: their --json, a capacity search stopped at the iteration cap, bad input exiting 2 with one
line that names the bad value."""

import json

import pytest

from sim.serving.trace_files import COLUMNS
from tests.support.cli import cli

HEADER = ",".join(COLUMNS) + "\n"


def test_cli_capacity_at_the_iteration_cap_prints_its_result(capsys):
    code, out, err = cli("capacity", "--gpu", "a100-80gb", "--model", "mistral-7b",
                   "--tbt-slo", "0.03", "--requests", "40", "--prompt-tokens", "512",
                   "--output-tokens", "20", "--max-iterations", "300", "--json", capsys=capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["policy"]["capacity_qps"] > 0 and "(the cap)" in data["baseline"]["reason"]


@pytest.mark.parametrize("sides, cut", [
    (("--policy", "sarathi", "--baseline", "vllm-v0"), "baseline"),
    (("--policy", "vllm-v0", "--budget", "2048", "--baseline", "sarathi", "--baseline-budget",
      "512"), "policy"),
])
def test_a_capacity_search_the_run_cap_cuts_short_leaves_its_capacity_undefined(sides, cut,
                                                                                capsys):
    """With --max-runs 1 vLLM V0 misses the SLO at the compute ceiling, its one run: its capacity
    was printed as 0.0, "missed ... at every rate tried", with no word of the cap (a whole search
    finds a capacity), and as the policy compared its ratio was 0.0."""
    argv = ("capacity", *sides, "--slo", "mistral-7b-strict", "--requests", "300", "--max-runs", "1")
    code, out, err = cli(*argv, "--json", capsys=capsys)
    assert code == 0, err
    data = json.loads(out)
    cut, proved = data[cut], data["baseline" if cut == "policy" else "policy"]
    assert "capacity_qps" not in cut and "ratio" not in data and proved["capacity_qps"] > 0
    assert cut["reason"].endswith("at every rate tried, down to 24.2 QPS; the search stopped at "
                                  "its cap of 1 run")
    assert data["notes"] == ["vllm-v0: the search stopped at its cap of 1 run, before any rate "
                             "tried met the SLOs; its capacity is undefined (shown as —, left "
                             "out of --json)"]
    code, out, _ = cli(*argv, capsys=capsys)
    assert code == 0 and "vllm-v0  2,048   128          —" in out
    assert "capacity ratio" in out and "undefined (vllm-v0: capacity undefined)" in out


def test_a_capacity_the_run_cap_cuts_short_after_a_rate_passed_is_a_lower_bound(capsys):
    code, out, err = cli("capacity", "--baseline", "sarathi", "--baseline-budget", "8192",
                         "--budget", "2048", "--slo", "mistral-7b-strict", "--requests", "300",
                         "--max-runs", "3", "--json", capsys=capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["baseline"]["capacity_qps"] == pytest.approx(18.1, abs=0.05)
    assert data["notes"] == ["sarathi: the search stopped at its cap of 3 runs, so its capacity, "
                             "18.1 QPS, is the best rate proved by then (a lower bound)"]


def test_cli_sweep_json(capsys):
    code, out, _ = cli("sweep", "--requests", "40", "--qps", "4", "--budgets",
                       "256,1024", "--tbt-slo", "0.05", "--json", capsys=capsys)
    assert code == 0
    rows = json.loads(out)
    assert [r["budget"] for r in rows] == [256, 1024]
    for r in rows:
        assert {"budget", "ttft_s", "tbt_s", "throughput_tokens_per_s"} <= set(r)
        assert set(r["ttft_s"]) >= {"p50", "p99"} and set(r["tbt_s"]) >= {"p50", "p99"}
        assert r["throughput_tokens_per_s"] > 0
    assert sum(r["recommended"] for r in rows) <= 1


def test_cli_capacity_json(capsys):
    code, out, _ = cli("capacity", "--policy", "sarathi", "--budget", "512",
                       "--baseline", "vllm-v0", "--tbt-slo", "0.1", "--requests", "60",
                       "--max-runs", "4", "--json", capsys=capsys)
    assert code == 0
    data = json.loads(out)
    for side in ("policy", "baseline"):
        assert {"name", "budget", "capacity_qps"} <= set(data[side])
    assert data["policy"]["name"] == "sarathi" and data["policy"]["budget"] == 512
    assert data["baseline"]["budget"] == 2048    # vLLM V0: max(longest request, 2048)
    assert data["ratio"] == pytest.approx(
        data["policy"]["capacity_qps"] / data["baseline"]["capacity_qps"])


@pytest.mark.parametrize("given, seats", [((), (128, 16)), (("--max-seqs", "40"), (40, 40))])
def test_cli_capacity_seats_each_engines_own_requests(capsys, given, seats):
    """Without --max-seqs each side runs at its engine's own batch size: Sarathi-Serve 128, Orca
    16 as the Sarathi-Serve artifact runs it (osdi-experiments/figure-5-6 configs); a given
    --max-seqs applies to both."""
    code, out, err = cli("capacity", "--gpu", "a100-80gb", "--model", "mistral-7b",
                         "--baseline", "orca", "--tbt-slo", "0.1", "--requests", "40",
                         "--max-runs", "2", *given, "--json", capsys=capsys)
    assert code == 0, err
    data = json.loads(out)
    assert (data["policy"]["max_seqs"], data["baseline"]["max_seqs"]) == seats


def test_cli_simulate_burst_and_trace(capsys, tmp_path):
    code, out, _ = cli("simulate", "--scenario", "burst", "--burst", "10",
                       "--prompt-output", "1", "--mode", "simple", "--json", capsys=capsys)
    assert code == 0
    assert json.loads(out)["last_ttft_s"] == pytest.approx(3.6864)
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "0,500,4\n0.01,300,4\n")
    code, out, _ = cli("simulate", "--trace-in", str(path), "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["requests"] == 2


@pytest.mark.parametrize("argv, named", [
    (("sweep", "--budgets", "128,-4"), "−4"),
    (("sweep", "--budgets", "12x"), "12x"),
    (("capacity", "--tbt-slo", "0.1", "--requests", "0"), "--requests"),
    (("capacity", "--slo", "fast"), "fast"),
    (("capacity", "--tbt-slo", "0.1", "--baseline", "nope"), "nope"),
    (("simulate", "--scenario", "burst", "--burst", "-1"), "burst"),
    (("simulate", "--trace-in", "/no/such/file.csv"), "/no/such/file.csv"),
])
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, named):
    code, out, err = cli(*argv, capsys=capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and named in err


def test_cli_trace_error_names_row_and_column(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(HEADER + "0,100,4\n0.5,abc,4\n")
    code, _, err = cli("simulate", "--trace-in", str(path), capsys=capsys)
    assert code == 2 and "row 3, column prompt_tokens" in err
