"""`--mix`: mixed traffic on the command line: simulate's per-class JSON, the refusal beside
--lengths, a class column that --requests-out writes and --trace-in replays, sweep and capacity."""

import csv
import json

import pytest

from cli.main import build_parser
from sim.knobs import KNOBS
from sim.serving.trace_files import CLASS_COLUMN, TRACE_COLUMNS_WORDS
from sim.serving.workloads import MIXES
from tests.support.cli import cli, refused, simulate_json

H100 = ("--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--policy", "vllm-v1", "--budget", "2048")
MIXED = ("--mix", "chat+documents", "--requests", "100", "--qps", "4", "--seed", "3")
PERCENTILES = {"p50", "p90", "p99", "max"}


def test_the_json_has_each_class_in_the_top_levels_percentile_shape(capsys):
    run = simulate_json(*H100, *MIXED, capsys=capsys)
    assert list(run["classes"]) == ["chat", "documents"]
    assert sum(c["requests"] for c in run["classes"].values()) == run["requests"] == 100
    assert run["classes"]["documents"]["requests"] == 5
    for c in run["classes"].values():
        assert set(c) == {"requests", "ttft_s", "tbt_s", "hol_wait_s"}
        for metric in ("ttft_s", "tbt_s", "hol_wait_s"):
            assert set(c[metric]) == PERCENTILES == set(run["ttft_s"])
    # the classes' tails make up the whole run's
    assert max(c["ttft_s"]["max"] for c in run["classes"].values()) == run["ttft_s"]["max"]
    assert max(c["tbt_s"]["max"] for c in run["classes"].values()) == run["tbt_s"]["max"]


def test_a_workload_without_classes_has_no_classes_key(capsys):
    run = simulate_json(*H100, "--requests", "20", "--qps", "4", "--lengths", "sharegpt",
                        capsys=capsys)
    assert "classes" not in run


def test_the_table_shows_each_class_and_defines_the_hol_wait(capsys):
    code, out, err = cli("simulate", *H100, *MIXED, capsys=capsys)
    assert code == 0, err
    assert "Poisson arrivals, mix chat+documents" in out
    assert "HOL wait p99" in out and "documents" in out
    chat = next(line.split() for line in out.splitlines() if line.startswith("chat "))
    assert chat[-5] == "none" and "0 µs" not in out          # its median request waited behind none
    assert "prefill another class's prompt" in " ".join(out.split())


def test_a_class_spec_on_the_command_line_is_a_mix(capsys):
    run = simulate_json(*H100, "--mix", "short:80%:100-200:10,long:20%:4000:10,late:@2:9000:5",
                        "--requests", "11", "--qps", "5", capsys=capsys)
    assert {name: c["requests"] for name, c in run["classes"].items()} == \
        {"short": 8, "long": 2, "late": 1}


@pytest.mark.parametrize("extra, named", [
    (("--lengths", "sharegpt"), "--mix takes the place of --lengths"),
    (("--lengths", "fixed"), "drop --lengths fixed"),
    (("--prompt-tokens", "100"), "--prompt-tokens does not apply here: --mix chat+documents"),
])
def test_length_flags_beside_a_mix_are_refused(extra, named, capsys):
    assert named in refused("simulate", *MIXED, *extra, capsys=capsys)


@pytest.mark.parametrize("argv, named", [
    (("--mix", "chat+documents"), "--mix belongs to --scenario poisson"),
    (("--mix", "chat:0.9:100:10", "--requests", "5", "--qps", "1"), "add up to 0.9"),
    (("--mix", "nonsense", "--requests", "5", "--qps", "1"), "--mix: unknown mix 'nonsense'"),
    (("--mix", "chat+one-long", "--requests", "1", "--qps", "1"), "at least 2 requests"),
])
def test_a_mix_that_cannot_run_is_refused_with_what_would(argv, named, capsys):
    assert named in refused("simulate", *argv, capsys=capsys)


def test_requests_out_writes_the_class_and_trace_in_replays_it_to_the_same_classes(
        tmp_path, capsys):
    first, again = tmp_path / "requests.csv", tmp_path / "again.csv"
    run = simulate_json(*H100, *MIXED, "--requests-out", str(first), capsys=capsys)
    with open(first, newline="") as f:
        table = list(csv.DictReader(f))
    assert list(table[0])[:4] == ["arrival_s", "prompt_tokens", "output_tokens", "class"]
    assert sum(r["class"] == "documents" for r in table) == 5
    assert all(16_384 <= int(r["prompt_tokens"]) <= 32_768 for r in table
               if r["class"] == "documents")
    replay = simulate_json(*H100, "--trace-in", str(first), "--requests-out", str(again),
                           capsys=capsys)
    assert replay["classes"] == run["classes"]
    assert again.read_text() == first.read_text()


def test_sweep_and_capacity_take_a_mix(capsys):
    code, out, err = cli("sweep", *H100[:-2], *MIXED, "--budgets", "512,2048", "--json",
                         capsys=capsys)
    assert code == 0, err
    assert [p["budget"] for p in json.loads(out)] == [512, 2048]
    code, out, err = cli("capacity", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--mix",
                         "chat+documents", "--requests", "60", "--tbt-slo", "0.1", "--max-runs",
                         "3", capsys=capsys)
    assert code == 0, err
    assert "60 requests, mix chat+documents" in " ".join(out.split())
    assert "--mix takes the place of --lengths" in refused(
        "capacity", "--mix", "chat+documents", "--lengths", "sharegpt", "--tbt-slo", "0.1",
        capsys=capsys)


def test_each_sweep_point_has_the_classes_simulate_gives_at_its_budget(capsys):
    code, out, err = cli("sweep", *H100[:-2], *MIXED, "--budgets", "512,2048", "--json",
                         capsys=capsys)
    assert code == 0, err
    points = {p["budget"]: p for p in json.loads(out)}
    for budget in (512, 2048):
        alone = simulate_json(*H100[:-1], str(budget), *MIXED, capsys=capsys)
        assert points[budget]["classes"] == alone["classes"]
    assert points[512]["classes"] != points[2048]["classes"]
    code, out, err = cli("sweep", *H100[:-2], "--requests", "20", "--qps", "4", "--budgets",
                         "512", "--json", capsys=capsys)
    assert code == 0, err
    assert "classes" not in json.loads(out)[0]


def test_trace_in_help_says_a_trace_may_name_each_requests_class_as_the_app_does():
    """In the app's upload words (tests/ui/test_upload_limits.py checks that side)."""
    help_text = build_parser()._subparsers._group_actions[0].choices["simulate"].format_help()
    flat = " ".join(help_text.split())
    assert f"replay a CSV trace: {' '.join(TRACE_COLUMNS_WORDS.split())} (default: none)" in flat
    assert f"optionally {CLASS_COLUMN}, each request's class name" in flat


def test_the_flag_is_the_knob_tables_and_its_help_lists_the_presets():
    help_text = build_parser()._subparsers._group_actions[0].choices["simulate"].format_help()
    flat = " ".join(help_text.split())
    assert " ".join(KNOBS["mix"].what.split()) in flat
    assert set(KNOBS["mix"].choices) == set(MIXES)
