"""Every benchmark runs to its end, once, at a small size (`--smoke`, or its smallest flags), in a
child process: a case that breaks fails here, not in the next `make bench`. What is checked is
that each exits 0 and names every one of its cases (so a case dropped fails too); no timing is
asserted. The benchmarks' own figures are read by a person (README, "Benchmarks")."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.browser import CHROMIUM
from sim.studies.reproduce import SCENARIOS, SHIPPED_RESULTS

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 300
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason=f"{CHROMIUM} is missing (Debian package chromium)")

ENGINE_CASES = [
    "textbook scenario, unchunked (vllm-v0) + chunked (sarathi 576)",
    "1,000 Poisson requests, llama-2-7b a100-80gb, sarathi 512",
    "20,000 Poisson requests, same settings",
    "1,000,000-token prompt, 1,024 decoders, sarathi 512 (mi300x)",
]
# `python -m benchmarks`: the engine's, then traffic_bench's, app_bench's (each name's start: some
# end with the chart data's size), export_bench's, exactness_bench's and pipeline_bench's
SUITE_CASES = [
    *ENGINE_CASES,
    "sweep, 12 budgets x 1,000 Poisson requests (a100, llama)",
    "capacity, sarathi 512 vs vllm-v0, 1,000 ShareGPT requests",
    "mixed traffic, 1,000 chat+documents requests at 4 QPS, vllm-v1 (h100, llama-3.1-8b)",
    "disaggregated 1:1, 1,000 ShareGPT-like requests at 4 QPS, sarathi 512 (h100, llama-3.1-8b)",
    "app: Home rerun after a budget change",
    "app: Side by side rerun after a budget change",
    "app: Worked example rerun after a prompt change",
    "app: Roofline rerun after a budget change",
    "app: Side by side, 1,000,000-token prompt + 1,024 decoders",
    "app: Roofline, same extreme",
    "app: How close to a real GPU, rerun after a budget change",
    "app: Side by side with ideal and calibrated compared, budget change",
    "data + figures without Streamlit, defaults (2 runs, 3 specs)",
    "app: Traffic rerun after a budget change (burst, 2 policies)",
    "app: Traffic, 1,000 ShareGPT requests x 3 policies, budget change",
    "app: Traffic revisit, cached",
    "app: Traffic revisit, 1,000 requests x 3 policies",
    "app: Budget trade-off, a new largest budget (one new run)",
    "app: Budget trade-off revisit, cached",
    "app: Capacity revisit after its search (300 requests)",
    "app: Memory rerun after a budget change (1,000 requests)",
    "app: Memory revisit, 1,000 requests",
    "export: 48-frame GIF, Side by side at the defaults (900 px)",
    "export: PNG at 2x, same figure",
    "exactness, a 4,096-token prompt, one pass + chunks of 64 (float32 + float64)",
    "pipeline, --pp 4, 1,000 ShareGPT-like requests at 2 QPS, sarathi 512 (h100, llama-3.1-70b)",
]
WORK_CASES = [
    "iterations: 1 decoder x 300,000 tokens",
    "chunks: a 200,000-token prompt at budget 1",
    "tokens: 1,000 decoders x 1,000 tokens",
    "requests: 50,000 one-token requests at once",
    "stays: 20,000 requests one at a time, vLLM V0",
    "partial rows: vLLM V1, 1,000 decoders, budget 100",
    "passes: vLLM V1, 20,000 decoders, budget 10",
    "passes, fewer: vLLM V1, 5,000 decoders, budget 10",
    "window: 1 decoder x 100,000 tokens, mistral-7b",
    "window rows: 1,000 decoders x 1,000, mistral-7b",
    "the worked example (64 streams, 1 prompt)",
    "ShareGPT: 3,000 requests at 1,000 QPS",
    "ShareGPT: 1,000 at 1,000 QPS, mistral-7b",
    "ShareGPT: 1,000 at 5 QPS, vLLM V0",
    "ShareGPT: 1,000 at 20 QPS, SGLang",
    "ShareGPT: 1,000 at 50 QPS, vLLM V1, budget 256",
    "burst: 10 x 8,192-token prompts beside 64 streams, Orca",
]
# limits_bench: the command line's dimensions (their sizes follow), then each page case's page
# and what it is
LIMITS_CASES = [
    "a run's estimated work: ", "trace: ", "arguments: ", "sweep: ", "capacity: ",
    "home.py ", "4,096 decoders + a 1,000,000-token prompt in chunks of 21: two lanes at the "
    "50,000 cap: ran",
    "side_by_side.py ", "the same, compared with the calibrated mode: four lanes: ran",
    "roofline.py ", "a 2,000,000-token prompt beside 4,096 decoders: ran",
    "worked_example.py ", "a 2,000,000-token prompt, second budget 1: ran",
    "exactness.py ", "a 4,096-token prompt in 4,096 chunks of 1, then the near-tie search: ran",
    "fidelity.py ", "defaults: ran",
    "traffic.py ", "5 policies x 2,400,000 token times: the 12,000,000 a page keeps, at once: ran",
    "5 policies, 1,000 requests at 1/s: ~1.8 million iterations, on the button: ran",
    "memory.py ", "5 policies x 2,400,000 token times, at once: ran",
    "budget_tradeoff.py ", "budgets 1 to 10,000,000 on 1,000,000 token times a run, on the "
    "button: ran",
    "capacity.py ", "click Find the capacity", "1,000 requests of 1,000 output tokens, on the "
    "button: ran",
    "every case in turn in one process, caches kept: ",
]


def benchmark(module: str, *args: str) -> str:
    """`python -m <module> ARGS` from the repository root, which must exit 0: its output."""
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def assert_names_each(output: str, names: list[str]) -> None:
    assert [name for name in names if name not in output] == []


@pytest.mark.slow
def test_every_case_of_make_bench_runs_once_small():
    output = benchmark("benchmarks", "--smoke")
    assert output.startswith("smoke: ")
    assert_names_each(output, SUITE_CASES)
    assert "FAILED" not in output and "target" in output


def copy_of_sim(folder: Path) -> Path:
    """A checkout holding only sim/, all that engine_bench's timing process imports."""
    shutil.copytree(ROOT / "sim", folder / "sim", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def test_engine_bench_times_this_tree_against_another(tmp_path):
    other = copy_of_sim(tmp_path)
    output = benchmark("benchmarks.engine_bench", "--against", str(other), "--smoke")
    assert f"this: {ROOT / 'sim'}; other: {other / 'sim'}\n" in output     # the sim each imported
    assert_names_each(output, ENGINE_CASES)
    assert "this tree / the other: median over cases" in output


def test_engine_bench_names_the_case_and_the_tree_that_failed(tmp_path):
    other = copy_of_sim(tmp_path)
    with open(other / "sim" / "serving" / "engine.py", "a") as engine:
        engine.write("\n\ndef simulate(*args, **kwargs):\n    raise ValueError('broken here')\n")
    done = subprocess.run([sys.executable, "-m", "benchmarks.engine_bench", "--against",
                           str(other), "--smoke"], cwd=ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode != 0
    assert f"{ENGINE_CASES[0]}, in {other}: ValueError: broken here" in done.stderr


def test_engine_bench_refuses_a_folder_without_sim(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.engine_bench", "--against",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 2 and "no sim/ there" in done.stderr


@pytest.mark.slow
def test_export_bench_runs_small():
    output = benchmark("benchmarks.export_bench", "--smoke")
    assert output.startswith("smoke: ")
    assert_names_each(output, ["-frame GIF, Side by side at the defaults (900 px), median of 1",
                               "  time ", "  size ", "peak resident memory"])


@pytest.mark.slow
def test_limits_bench_runs_small():
    output = benchmark("benchmarks.limits_bench", "--smoke")
    assert output.startswith("smoke: ")
    assert_names_each(output, LIMITS_CASES)
    assert "TRACEBACK" not in output


@pytest.mark.slow
def test_work_bench_runs_small():
    output = benchmark("benchmarks.work_bench", "--smoke")
    assert output.startswith("smoke: ")
    assert_names_each(output, WORK_CASES)
    assert "over the cases, measured / real counts priced" in output


@pytest.mark.slow
def test_reproduce_runs_small_beside_the_shipped_results(tmp_path):
    shipped = SHIPPED_RESULTS.read_bytes()
    output = benchmark("benchmarks.reproduce", "--smoke", "--out", str(tmp_path / "smoke.json"))
    assert output.startswith("smoke: ")
    assert_names_each(output, list(SCENARIOS))
    written = json.loads((tmp_path / "smoke.json").read_text())
    assert written["command"] == "python -m benchmarks.reproduce --smoke"
    assert {row["scenario"] for row in written["rows"]} == set(SCENARIOS)
    assert SHIPPED_RESULTS.read_bytes() == shipped


@pytest.mark.parametrize("module", ["benchmarks", *sorted(
    f"benchmarks.{path.stem}" for path in (ROOT / "benchmarks").glob("*.py")
    if path.stem != "__main__" and "ArgumentParser(" in path.read_text())])
def test_every_benchmark_command_says_its_help(module):
    """--help is text, never a traceback (argparse reads a help's % as a format: 'to 2%' broke
    the reproduce command's)."""
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0 and done.stdout.startswith("usage:"), done.stderr


def test_reproduce_smoke_never_writes_the_shipped_results():
    done = subprocess.run([sys.executable, "-m", "benchmarks.reproduce", "--smoke"], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 2 and "--smoke: give --out another file" in done.stderr


@pytest.mark.slow
def test_load_test_runs_small():
    browser = Path(CHROMIUM).exists()
    output = benchmark("benchmarks.load_test", "--sessions", "2", "--changers", "1", "--spread",
                       "0.5", *([] if browser else ["--no-browser"]))
    assert_names_each(output, ["the teacher's first open", "open: connect -> script finished   n=2",
                               "change: rerun -> script finished   n=1",
                               "server peak resident memory",
                               "Chromium among them: " + ("rendered in" if browser else "not run")])


@needs_chromium
@pytest.mark.slow
def test_player_bench_runs_small():
    output = benchmark("benchmarks.player_bench", "--seconds", "0.5")
    assert_names_each(output, ["inline: chart drawn", "static: chart drawn"])


@needs_chromium
@pytest.mark.slow
def test_first_render_runs_small():
    output = benchmark("benchmarks.first_render", "--repeats", "1", "--pages", "")
    assert_names_each(output, ["\n/ ", "median over pages: "])
