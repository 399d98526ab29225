"""Bounded runs on the command line, each a test that failed before the fix: no
traceback, no hang, no nonsense, nothing silently ignored, messages that name what to change.

Runs that used to hang or blow up go through `run_sim` (a child process with a timeout and a memory
limit), so a regression fails the test instead of stalling the suite."""

import json
import math
import os
import re
import subprocess
import sys

import pytest

from cli import sweeps as sweeps_cli
from cli.common import iteration_cap_message
from cli.export_effort import check_export_work
from cli.main import build_parser, main
from harness.bounded import ROOT, run_sim
from sim.effort.caps import RunAccount
from sim.effort.estimate import ITEM_COSTS
from sim.errors import InputError
from sim.presets.models import custom_model
from sim.serving.engine import SimulationLimitError
from sim.serving.policies import MAX_ITERATION_CAP
from sim.serving.trace_files import load_trace
from tests.support.cli import cli, refused

HEADER = "arrival_s,prompt_tokens,output_tokens\n"


def refused_in_child(*argv, timeout_s=30) -> str:
    """The same for a command that used to run for minutes or exhaust memory."""
    outcome = run_sim(*argv, timeout_s=timeout_s)
    assert not outcome.timed_out, f"still running after {timeout_s} s"
    assert outcome.code == 2 and outcome.stdout == "", outcome
    assert outcome.stderr.count("\n") == 1 and "Traceback" not in outcome.stderr
    return outcome.stderr


# --- no traceback ------------------------------------------------------------------------------
def test_tiny_params_are_refused_not_divided_by_zero(capsys):
    err = refused("worked-example", "--params", "5e-324", capsys=capsys)
    assert "--params must be ≥ 1,000, got 5e-324" in err


def test_a_broken_pipe_ends_quietly():
    """`python -m sim validate --json | head -1`: the reader leaves after one line."""
    writer = subprocess.Popen([sys.executable, "-m", "sim", "validate", "--json"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader = subprocess.run(["head", "-1"], stdin=writer.stdout, capture_output=True, timeout=60)
    writer.stdout.close()
    err = writer.stderr.read().decode()
    assert writer.wait(timeout=60) == 141          # as if ended by SIGPIPE, like other tools
    assert reader.stdout == b"{\n" and err == ""


@pytest.mark.parametrize("argv, shown", [
    (["simulate", "--prompt", "-1e3"], "--prompt must be ≥ 1, got −1000"),
    (["simulate", "--budget", "-5"], "--budget must be ≥ 1, got −5"),
    (["simulate", "--decodes", "-.5"], "--decodes must be ≥ 0, got −0.5"),
    (["simulate", "--context", "-inf"], "--context must be a finite number, got −inf"),
])
def test_negative_numbers_are_values_with_the_allowed_range(argv, shown, capsys):
    assert shown in refused(*argv, capsys=capsys)


def test_a_double_dash_as_a_value_is_refused_not_taken_as_an_empty_list(capsys):
    """Found by the fuzz slice: Python 3.11's argparse turns `--max-seqs=--` into [] and the
    work estimate then compared a list with a number (a traceback)."""
    assert "--max-seqs: expected a value, got '--'" in refused(
        "simulate", "--max-seqs=--", "--budget=209", "--gpu", "l40s", capsys=capsys)


# --- nonsense refused --------------------------------------------------------------------------
def test_extreme_worked_example_inputs_are_refused_not_printed_as_nan(capsys):
    err = refused("worked-example", "--peak-tflops", "1e-300", "--params", "1e15", "--prompt",
                  "1e9", capsys=capsys)
    assert "--peak-tflops must be ≥ 0.001, got 1e-300" in err


@pytest.mark.parametrize("extreme", [
    ["--peak-tflops", "0.001", "--params", "1e15", "--prompt", "1e9", "--bytes-per-param", "64",
     "--bandwidth-tbps", "0.000001", "--budgets", "1,1000000000", "--decodes", "0"],
    ["--peak-tflops", "1e6", "--params", "1000", "--bytes-per-param", "0.125",
     "--bandwidth-tbps", "1e4", "--kv-bytes", "0.125", "--prompt", "1", "--budgets", "2"],
    ["--layers", "1000000000", "--kv-heads", "1000000000", "--head-dim", "1000000000",
     "--kv-bytes", "64", "--long-prompt", "1000000000", "--burst", "1000000000", "--budgets",
     "65"],
])
def test_the_ends_of_every_worked_example_range_print_finite_short_numbers(extreme, capsys):
    code, out, _ = cli("worked-example", *extreme, "--wide", capsys=capsys)
    assert code == 0
    assert not re.search(r"\b(nan|inf)\b", out, re.IGNORECASE)
    assert not re.search(r"\d[\d,]{25,}", out)               # no 300-digit numbers
    _, out, _ = cli("worked-example", *extreme, "--json", capsys=capsys)
    values = [v for v in _numbers(json.loads(out))]
    assert values and all(math.isfinite(v) for v in values)


def _numbers(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from _numbers(v)
    elif isinstance(node, list):
        for v in node:
            yield from _numbers(v)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield node


def test_a_rate_too_low_for_float_arrival_times_is_refused(capsys):
    """At 1e-14 QPS the arrival times (~1e15 s) kept 0.125 s of precision: TBT p50 came out 0."""
    err = refused("simulate", "--requests", "10", "--qps", "1e-14", capsys=capsys)
    assert "--qps must be ≥ 0.001, got 1e-14" in err
    err = refused("simulate", "--requests", "20000", "--qps", "0.001", capsys=capsys)
    assert "spread arrivals over about 2e+07 s" in err and "raise --qps to at least 0.002" in err


# --- bounded time and memory -------------------------------------------------------------------
def test_a_sweep_too_long_for_the_budget_is_refused_up_front():
    """32 budgets x one decoder emitting 1,000,000 tokens took 108 s."""
    budgets = ",".join(str(b) for b in range(2, 34))
    err = refused_in_child("sweep", "--decodes", "1", "--decode-output", "1000000",
                           "--budgets", budgets)
    assert "a sweep of 32 budgets would take 32 runs of about 1,000,000 iterations" in err
    assert "over the 60 s time budget" in err and "fewer --budgets" in err


def test_a_run_the_old_bound_refused_runs_within_the_budget(tmp_path):
    """4,000 requests of 1,000 output tokens at 1,000 QPS: the old estimator counted each of
    their 4,000,000 decode steps as an iteration (63 s and 1.76 GB: refused); the run takes
    8,155 iterations, about a second and 200 MB."""
    outcome = run_sim("simulate", "--requests", "4000", "--qps", "1000", "--prompt-tokens", "100",
                      "--output-tokens", "1000", "--gpu", "h200", "--model", "llama-3.1-8b",
                      "--max-seqs", "1024", "--json", timeout_s=60, peak_file=str(tmp_path / "peak"))
    assert outcome.code == 0, outcome
    assert json.loads(outcome.stdout)["iterations"] == 8155
    assert 0 < outcome.peak_bytes < 500e6


@pytest.mark.parametrize("argv, caps", [
    (["simulate"], (100,)),
    (["sweep", "--budgets", "576,1024"], (10**6, 100)),
    (["export", "--mode", "simple"], (10**6, 100)),
])
def test_a_run_stopped_by_the_cap_the_budget_set_says_so(argv, caps, monkeypatch, tmp_path,
                                                         capsys):
    """Each run gets the iteration cap that keeps the command within its budget (at least its
    likely iterations): one that needs more stops there, and the message says why."""
    for module in ("cli.common", "cli.sweeps", "cli.export_effort"):
        monkeypatch.setattr(f"{module}.check_work", lambda work, what, remedy: caps)
    out = ["--out", str(tmp_path / "x.svg")] if argv[0] == "export" else []
    err = refused(*argv, *out, capsys=capsys)
    assert ("the run needed more than 100 iterations, more than estimated and the most that fit "
            "in the command's budget (60 s, 1.5 GB)") in err
    assert err.rstrip().endswith("use fewer --decodes or a smaller --decode-output")


CAPACITY = ("capacity", "--requests", "20", "--prompt-tokens", "256", "--output-tokens", "8",
            "--tbt-slo", "0.1", "--json")


def test_capacity_asks_its_account_before_every_run(monkeypatch, capsys):
    """The command hands its CPU account to the search as callbacks: an account that refuses
    stops both searches before their first run, in its own words."""
    class Refusing(RunAccount):
        def may_start(self, policy, budget):
            return "no room left"
    monkeypatch.setattr(sweeps_cli, "RunAccount", Refusing)
    code, out, _ = cli(*CAPACITY, capsys=capsys)
    payload = json.loads(out)
    assert code == 0
    for search in (payload["policy"], payload["baseline"]):
        assert search["points"] == []
        assert search["reason"].endswith("the search stopped after 0 runs: no room left")
        assert "capacity_qps" not in search              # not 0.0: nothing was tried
    assert "ratio" not in payload and len(payload["notes"]) == 2
    assert all(n.endswith("its capacity is undefined (shown as —, left out of --json)")
               for n in payload["notes"])


def test_capacity_charges_its_account_for_every_finished_run(monkeypatch, capsys):
    accounts = []

    class Kept(RunAccount):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            accounts.append(self)
    monkeypatch.setattr(sweeps_cli, "RunAccount", Kept)
    code, out, _ = cli(*CAPACITY, capsys=capsys)
    payload = json.loads(out)
    (account,) = accounts
    runs = len(payload["policy"]["points"]) + len(payload["baseline"]["points"])
    assert code == 0 and runs >= 2
    assert account.spent_s >= runs * ITEM_COSTS["runs"].seconds   # each run's fixed cost at least


def test_a_gif_too_large_for_the_budget_is_refused_from_frames_times_pixels(tmp_path):
    """600 frames at 4,000 px would take about 4 GB (cli/export_effort.py prices each frame)."""
    err = refused_in_child("export", "--format", "gif", "--frames", "600", "--width", "4000",
                           "--out", str(tmp_path / "x.gif"))
    assert "600-frame gif" in err and re.search(r"use at most \d+ --frames at --width 4,000", err)
    assert not (tmp_path / "x.gif").exists()


def test_the_frames_a_refusal_suggests_are_accepted_beside_the_runs(tmp_path, capsys):
    """The figure alone may fit where the figure and the two lanes' runs do not: the count the
    message suggests leaves room for both (it once suggested the very count it refused), from
    far over the limit and from just over it."""
    argv = ["export", "--format", "gif", "--width", "4000", "--out", str(tmp_path / "x.gif")]
    frames = 600
    for _ in range(2):
        err = refused(*argv, "--frames", str(frames), capsys=capsys)
        suggested = int(re.search(r"use at most (\d+) --frames", err).group(1))
        assert suggested < frames
        args = build_parser().parse_args([*argv, "--frames", str(suggested)])
        assert check_export_work(args, "gif", 4000, suggested)      # the lanes' caps: accepted
        frames = suggested + 1


def test_many_decoders_run_in_memory_linear_in_the_running_set(tmp_path):
    """60,000 decoders ran out of memory (every join stored the whole running set); the engine
    now keeps a row per stay in the running set, and the run takes tens of MB."""
    outcome = run_sim("simulate", "--decodes", "60000", "--max-seqs", "1000000", "--context", "1",
                      "--decode-output", "1", "--budget", "200000", "--json", timeout_s=60,
                      peak_file=str(tmp_path / "peak"))
    assert outcome.code == 0, outcome
    assert json.loads(outcome.stdout)["requests"] == 60_001
    assert 0 < outcome.peak_bytes < 500e6


@pytest.mark.parametrize("make", [os.mkfifo, os.mkdir])
def test_a_fifo_or_directory_is_refused_before_it_is_read(tmp_path, make):
    path = tmp_path / "trace"
    make(path)
    err = refused_in_child("simulate", "--trace-in", str(path))
    assert ("FIFO" if make is os.mkfifo else "directory") in err and "not a regular file" in err


def test_a_device_is_refused_as_a_trace(capsys):
    assert "character device" in refused("simulate", "--trace-in", "/dev/zero", capsys=capsys)


def test_a_fifo_is_refused_as_an_output_before_the_run(tmp_path):
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    err = refused_in_child("simulate", "--trace-out", str(fifo))
    assert "--trace-out" in err and "FIFO" in err


# --- nothing silently ignored ------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["simulate", "--burst", "-5"], "--burst must be ≥ 1, got −5"),
    (["simulate", "--burst", "5"], "--burst belongs to --scenario burst; the scenario is textbook"),
    (["simulate", "--prompt-tokens", "-5"], "--prompt-tokens must be ≥ 1, got −5"),
    (["simulate", "--prompt-tokens", "5"], "--prompt-tokens belongs to --scenario poisson"),
    (["simulate", "--requests", "10", "--qps", "1", "--decodes", "-5"], "--decodes must be ≥ 0"),
    (["simulate", "--requests", "10", "--qps", "1", "--decodes", "5"],
     "--decodes belongs to --scenario textbook or burst; the scenario is poisson"),
    (["sweep", "--prompt-tokens", "nan"], "--prompt-tokens must be a finite number, got nan"),
    (["sweep", "--prompt-tokens", "500"], "--prompt-tokens belongs to --scenario poisson"),
    (["simulate", "--trace-out", ""], "--trace-out needs a file name"),
    (["simulate", "--requests", "5", "--qps", "1", "--lengths", "sharegpt", "--output-tokens",
      "9"], "--output-tokens does not apply here: --lengths sharegpt draws its own"),
    (["simulate", "--policy", "orca", "--max-concurrent-prefills", "2"],
     "--max-concurrent-prefills does not apply here"),
    (["cost", "--decodes", "4", "--prefix", "100"], "--prefix does not apply here"),
    (["cost", "--chunk", "4", "--context", "100"], "--context does not apply here"),
    (["capacity", "--tbt-slo", "0.1", "--policy", "orca", "--baseline", "vllm-v0",
      "--max-concurrent-prefills", "2"], "--max-concurrent-prefills does not apply here"),
])
def test_a_flag_that_does_not_apply_is_an_error(argv, words, capsys):
    assert words in refused(*argv, capsys=capsys)


def test_export_refuses_flags_its_view_or_format_does_not_read(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "0,10,2\n")
    out = str(tmp_path / "x.png")
    err = refused("export", "--view", "roofline", "--trace-in", str(trace), "--out", out,
                  capsys=capsys)
    assert "--trace-in does not apply here: --view roofline" in err
    assert "--tpot-ms does not apply" in refused("export", "--tpot-ms", "30", "--out", out,
                                                 capsys=capsys)
    assert "--frames does not apply here" in refused("export", "--frames", "10", "--out", out,
                                                     capsys=capsys)


def test_orca_says_its_budget_is_not_used(capsys):
    code, out, _ = cli("simulate", "--policy", "orca", "--budget", "576", capsys=capsys)
    assert code == 0 and "Orca has no token budget" in out and "budget 576" not in out


# --- messages that help ------------------------------------------------------------------------
def test_the_iteration_cap_message_says_when_the_cap_is_the_maximum():
    assert "raise --max-iterations (at most 5,000,000)" in iteration_cap_message(100)
    at_max = iteration_cap_message(MAX_ITERATION_CAP)
    assert "the most --max-iterations allows" in at_max and "raise --max-iterations" not in at_max


def test_a_run_over_the_cap_names_the_flag(capsys):
    assert "raise --max-iterations" in refused("simulate", "--max-iterations", "100",
                                               capsys=capsys)


def test_a_run_that_must_overrun_the_cap_is_refused_before_it_starts():
    err = refused_in_child("simulate", "--decode-output", "6000000", "--max-iterations",
                           "5000000", timeout_s=20)
    assert "needs at least 6,000,000 iterations (its longest request emits 6,000,000 tokens" in err
    assert "the most --max-iterations allows" in err and "raise --max-iterations" not in err


def test_a_run_at_the_largest_cap_does_not_ask_to_raise_it(monkeypatch, capsys):
    def over_the_cap(*args, **kwargs):
        raise SimulationLimitError("needed more iterations")
    monkeypatch.setattr("sim.serving.run.Run.simulate", over_the_cap)
    err = refused("simulate", "--max-iterations", str(MAX_ITERATION_CAP), capsys=capsys)
    assert "the most --max-iterations allows" in err


def test_a_custom_model_too_large_names_the_fields_that_make_it_so():
    with pytest.raises(InputError) as error:
        custom_model(layers=1000, hidden=1_000_000, heads=32, kv_heads=8, head_dim=128,
                     intermediate=10_000_000, vocab=128256)
    message = str(error.value)
    assert "over the 1e+15 this lab prices" in message and "params must be" not in message
    assert "the MLP: layers 1,000" in message and "intermediate 10,000,000" in message


def test_trace_errors_count_spreadsheet_rows_across_a_multiline_cell():
    body = "arrival_s,prompt_tokens,output_tokens,note\n0,5,2,\"two\nlines\"\n1,ten,2,x\n"
    with pytest.raises(InputError, match=r"^row 3, column prompt_tokens"):
        load_trace(body.encode())


@pytest.mark.parametrize("body, words", [
    ("arrival_s,prompt_tokens,output_tokens,prompt_tokens\n0,5,2,7\n",
     "row 1 (header): column 'prompt_tokens' appears 2 times (columns 2, 4)"),
    (HEADER + "0,5,2\n1,5,2,9\n", "row 3: a value in column 4, which has no name in the header"),
    ("arrival_s,,prompt_tokens,output_tokens\n0,x,5,2\n", "row 2: a value in column 2"),
])
def test_duplicate_columns_and_stray_cells_are_errors(body, words):
    with pytest.raises(InputError) as error:
        load_trace(body.encode())
    assert words in str(error.value)


def test_empty_trailing_cells_are_not_values():
    assert len(load_trace((HEADER + "0,5,2,,\n").encode())) == 1


def test_main_returns_2_not_a_traceback_for_every_refusal(capsys):
    assert main(["simulate", "--qps", "1"]) == 2
    assert "--qps belongs to --scenario poisson" in capsys.readouterr().err


def test_export_keeps_max_concurrent_prefills_for_its_chunked_lane(tmp_path, capsys):
    out = str(tmp_path / "lanes.svg")
    code, _, err = cli("export", "--mode", "simple", "--max-concurrent-prefills", "1", "--out", out,
                       capsys=capsys)
    assert code == 0, err
    assert "--max-concurrent-prefills does not apply" in refused(
        "export", "--policy", "orca", "--max-concurrent-prefills", "1", "--out", out, capsys=capsys)


def test_the_textbook_scenarios_earlier_name_is_accepted_and_said_in_the_help(capsys):
    """`--scenario seed`, the textbook scenario's name before it was told apart from `--seed`
    (the random seed), still runs it, and the help says so."""
    old, new = (cli("simulate", "--scenario", name, "--mode", "simple", "--json", capsys=capsys)
                for name in ("seed", "textbook"))
    assert old == new and old[0] == 0
    with pytest.raises(SystemExit):
        cli("simulate", "--help", capsys=capsys)
    assert "seed still means textbook" in " ".join(capsys.readouterr().out.split())
