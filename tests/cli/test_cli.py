"""`python -m sim`: every command with --json parses; bad input exits 2 naming the bad value."""

import json
import subprocess
import sys

import pytest

from tests.support.cli import cli


def test_worked_example_json(capsys):
    code, out, _ = cli("worked-example", "--json", capsys=capsys)
    j = json.loads(out)
    assert code == 0
    assert j["budgets"][0]["ttft_s"] == pytest.approx(0.36864)
    assert j["burst_last_ttft_s"] == pytest.approx(3.6864)


def test_worked_example_table_shows_formulas_and_slips(capsys):
    code, out, _ = cli("worked-example", capsys=capsys)
    assert code == 0
    assert "weight bytes / bandwidth" in out and "5.333 ms" in out
    assert "2,112" in out


def test_worked_example_starved_budget_leaves_ttft_out_not_error(capsys):
    """A starved budget has no TTFT: the key is left out (--json prints no null) and the row says
    it is starved."""
    code, out, _ = cli("worked-example", "--budgets", "32", "--json", capsys=capsys)
    row = json.loads(out)["budgets"][0]
    assert code == 0 and row["starved"] is True and "ttft_s" not in row and "null" not in out


def test_cost_json_keys(capsys):
    code, out, _ = cli("cost", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--decodes", "64",
                       "--context", "4000", "--chunk", "512", "--prefix", "1024", "--json",
                       capsys=capsys)
    j = json.loads(out)
    assert code == 0
    assert set(j) == {"time_s", "compute_s", "memory_s", "flops", "bytes", "bound", "components",
                      "overhead_s", "engine"}
    assert set(j["components"]) == {"linear", "attention", "lm_head"}
    assert set(j["components"]["linear"]) == {"flops", "bytes", "time_s"}
    assert j["time_s"] == pytest.approx(max(j["compute_s"], j["memory_s"]))


def test_cost_simple_mode_is_the_source_articles(capsys):
    _, out, _ = cli("cost", "--mode", "simple", "--decodes", "64", "--chunk", "512", "--json",
                    capsys=capsys)
    assert json.loads(out)["time_s"] == pytest.approx(0.02304)


SIM_KEYS = {"policy", "engine", "engine_version", "budget", "iterations", "makespan_s",
            "requests", "preemptions", "throughput_tokens_per_s", "max_gap_s", "ttft_s", "tbt_s",
            "tpot_s", "notes", "prefix_hit_tokens", "prefix_hit_rate"}


def test_simulate_seed_json(capsys):
    code, out, _ = cli("simulate", "--mode", "simple", "--json", capsys=capsys)
    j = json.loads(out)
    assert code == 0
    assert SIM_KEYS | {"new_request_ttft_s", "decode_max_gap_s"} == set(j)
    assert set(j["ttft_s"]) == {"p50", "p90", "p99", "max"}
    assert j["new_request_ttft_s"] == pytest.approx(0.36864)
    assert j["decode_max_gap_s"] == pytest.approx(0.02304)
    assert (j["engine"], j["engine_version"], j["budget"]) == ("Sarathi-Serve", "OSDI'24 artifact", 576)


@pytest.mark.parametrize("policy, engine, version", [
    ("vllm-v1", "vLLM V1", "0.33.0"), ("sglang", "SGLang", "0.5.23"),
    ("vllm-v0", "vLLM V0", "0.4.0.post1"), ("orca", "Orca", "Sarathi-Serve's OSDI'24 artifact")])
def test_simulate_names_the_engine_and_its_release(policy, engine, version, capsys):
    code, out, _ = cli("simulate", "--mode", "simple", "--policy", policy, "--json", capsys=capsys)
    assert code == 0
    assert (json.loads(out)["engine"], json.loads(out)["engine_version"]) == (engine, version)


def test_vllm_v0_without_a_budget_runs_at_its_own_and_below_a_prompt_is_refused(capsys):
    """vLLM V0 without --budget runs at its budget without chunking, max(max_model_len, 2048)
    (vllm/config.py:562 at v0.4.0.post1): 8,192 + 32 for the worked example; asked for less
    than the prompt, the command says what vLLM V0 does with it (FINISHED_IGNORED) and refuses."""
    code, out, _ = cli("simulate", "--mode", "simple", "--policy", "vllm-v0", capsys=capsys)
    assert code == 0 and "runs at its own budget without chunking" in out and "8,224" in out
    code, _, err = cli("simulate", "--mode", "simple", "--policy", "vllm-v0", "--budget", "576",
                       capsys=capsys)
    assert code == 2 and "FINISHED_IGNORED" in err and "8,192" in err


def test_simulate_poisson_json_and_trace_out(capsys, tmp_path):
    out_csv = tmp_path / "trace.csv"
    code, out, _ = cli("simulate", "--gpu", "a100-80gb", "--model", "llama-2-7b", "--policy",
                       "vllm-v1", "--budget", "512", "--requests", "40", "--qps", "4",
                       "--lengths", "sharegpt", "--seed", "7", "--trace-out", str(out_csv), "--json",
                       capsys=capsys)
    j = json.loads(out)
    assert code == 0 and set(j) == SIM_KEYS and j["requests"] == 40
    lines = out_csv.read_text().splitlines()
    assert lines[0].startswith("iteration,start_s,end_s")
    assert len(lines) == j["iterations"] + 1
    # the CPU overhead each iteration added: none on the roofline; calibrated, vLLM V1 hides its
    # 4 ms behind every A100 step of this workload (each over 4 ms on the GPU), vLLM V0 adds it
    for mode in ("roofline", "calibrated"):
        cli("simulate", "--gpu", "a100-80gb", "--model", "llama-2-7b", "--policy", "vllm-v1",
            "--budget", "512", "--requests", "40", "--qps", "4", "--lengths", "sharegpt", "--seed",
            "7", "--mode", mode, "--trace-out", str(out_csv), "--force", capsys=capsys)
        rows = [line.split(",") for line in out_csv.read_text().splitlines()]
        column = rows[0].index("overhead_s")
        assert {row[column] for row in rows[1:]} == {"0"}
    cli("simulate", "--gpu", "a100-80gb", "--model", "llama-2-7b", "--policy", "vllm-v0",
        "--budget", "8192", "--requests", "40", "--qps", "4", "--lengths", "sharegpt", "--seed",
        "7", "--mode", "calibrated", "--trace-out", str(out_csv), "--force", capsys=capsys)
    rows = [line.split(",") for line in out_csv.read_text().splitlines()]
    assert {row[rows[0].index("overhead_s")] for row in rows[1:]} == {"0.004"}   # synchronous


def test_simulate_starvation_is_refused_unless_asked(capsys):
    code, _, err = cli("simulate", "--budget", "64", capsys=capsys)
    assert code == 2 and "--budget 64" in err and "64 running decodes" in err
    code, out, _ = cli("simulate", "--budget", "64", "--allow-starvation", "--decode-output", "5",
                       "--json", capsys=capsys)
    assert code == 0 and "starvation" in json.loads(out)["notes"][0]


@pytest.mark.parametrize("args, named", [
    (["simulate", "--budget", "0"], "--budget"),
    (["simulate", "--budget", "-5"], "--budget"),
    (["simulate", "--budget", "nan"], "--budget"),
    (["simulate", "--prompt", "0"], "prompt"),
    (["simulate", "--decodes", "-1"], "decodes"),
    (["simulate", "--gpu", "a100"], "'a100'"),
    (["simulate", "--model", "gpt-5"], "'gpt-5'"),
    (["simulate", "--policy", "fifo"], "'fifo'"),
    (["simulate", "--mode", "exact"], "'exact'"),
    (["simulate", "--prompt", "1000000"], "KV"),
    (["simulate", "--requests", "10"], "--qps"),
    (["simulate", "--requests", "10", "--qps", "0"], "--qps"),
    (["cost", "--decodes", "0"], "--decodes"),
    (["cost", "--chunk", "-3"], "--chunk"),
    (["cost", "--gpu", "h100", "--decodes", "1"], "'h100'"),
    (["worked-example", "--prompt", "0"], "prompt"),
    (["worked-example", "--budgets", "abc"], "abc"),
    (["worked-example", "--peak-tflops", "inf"], "--peak-tflops"),
    (["simulate", "--budget"], "--budget"),
    (["nonsense"], "nonsense"),
])
def test_bad_input_exits_2_with_one_line(args, named, capsys):
    code, out, err = cli(*args, capsys=capsys)
    assert code == 2
    assert named in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:")
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, shown", [
    (["simulate", "--x\x1b[31m", "a\nb"], "unrecognized arguments: '--x\\x1b[31m' 'a\\nb'"),
    (["simulate", "--max=\x1b]0;title\x07"], "ambiguous option '--max=\\x1b]0;title\\x07': it "
                                              "could be --max-seqs, "),
    (["simulate", "--policy", "x\ny"], "invalid choice: 'x\\ny'"),
    (["simulate", "--budget", "1\r2"], "must be a number, got '1\\r2'"),
])
def test_what_was_typed_is_echoed_quoted_with_control_characters_escaped(argv, shown, capsys):
    """argparse echoed an unrecognized argument, or an abbreviation of several flags, as typed: a
    newline in it made a second line, an escape sequence reached the terminal."""
    code, out, err = cli(*argv, capsys=capsys)
    assert code == 2 and shown in err
    assert err.count("\n") == 1 and not any(c in err for c in "\x1b\x07\r"), repr(err)


def test_module_entry_point():
    done = subprocess.run([sys.executable, "-m", "sim", "worked-example", "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["long_prompt_chunks"] == 250
    bad = subprocess.run([sys.executable, "-m", "sim", "simulate", "--budget", "x"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_sim_imports_neither_streamlit_nor_altair():
    code = ("import sys, sim, cli.main; "
            "print(any(m.split('.')[0] in ('streamlit', 'altair') for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False"
