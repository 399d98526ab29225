"""Fuzzing `python -m sim`: hypothesis draws command lines (any command, any subset of its flags,
values that are typical, at the ends of their ranges, past them, or not numbers at all; files that
are traces, broken traces, FIFOs, directories and devices), and each runs in a child process with a
timeout and a memory limit (harness.bounded).

A case is a clean run (exit 0, nothing on stderr, output without nan, inf or runaway digits, JSON
that parses without NaN or null, table lines within 120 columns unless --wide) or a clean refusal (exit 2,
nothing on stdout, one line on stderr starting "error: "), neither printing a raw control character
(what was typed is shown escaped); either way within the command budget
(60 s of CPU time, 1.5 GB). Anything else is a failure, reported with the command line that
reproduces it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import threading
import unicodedata

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st

from harness.bounded import run_sim
from sim.cost.iteration import MODES
from sim.presets.hardware import GPUS
from sim.presets.models import MODELS
from sim.serving.policies import POLICIES
from sim.serving.workloads import LENGTHS as LENGTH_NAMES
from sim.studies.capacity import SLO_PRESETS
from sim.studies.reproduce import SCENARIOS as REPRODUCE_SCENARIOS

from .report import Result, over_budget

SUITE = "cli"
WIDTH = 120
TIMEOUT_S = 300.0          # well past the 60 s budget, even on a busy machine: a hang

# --- values -------------------------------------------------------------------------------------
NOT_NUMBERS = ["", "abc", "nan", "inf", "-inf", "1e", "0x10", "1,5", " ", "--", "None", "½"]
EXTREMES = ["0", "-0", "-1", "-1e3", "-.5", "5e-324", "1e-300", "1e300", "1e308", "2e308",
            "9999999999999999999999", "0.5", "1.5", "-1e-3", "1e-9"]


def numbers(low: float, high: float, whole: bool, typical: tuple[float, float]):
    """A flag's value: 17 in 20 typical, else at or past its range's ends, extreme, or not a
    number."""
    lo, hi = typical
    inside = st.integers(int(lo), int(hi)) if whole else st.floats(lo, hi)
    ends = st.sampled_from([low, high, low - (1 if whole else low * 0.5 or 1e-3),
                            high * 1.01 + 1])
    kinds = [st.sampled_from(NOT_NUMBERS), st.sampled_from(EXTREMES), ends.map(_text)]
    return st.integers(0, 19).flatmap(lambda k: kinds[k] if k < len(kinds) else
                                      inside.map(_text))


def _text(x) -> str:
    return repr(x) if isinstance(x, float) else str(x)


def names(valid):
    return st.integers(0, 9).flatmap(lambda k: st.sampled_from(
        ["", "nope", "A100", "sarathi ", "../etc"] if k == 0 else sorted(valid)))


def budgets_list():
    element = st.one_of(st.integers(1, 20_000).map(str), st.sampled_from(["0", "-4", "x", "1e9"]))
    return st.lists(element, min_size=0, max_size=40).map(",".join)


# --- flags per command: name -> strategy of its value (None: a switch) ------------------------
HARDWARE = {
    "--gpu": names(GPUS), "--model": names(MODELS), "--mode": names(MODES),
    "--overhead-ms": numbers(0, 10_000, False, (0, 5)),
    "--tp": numbers(1, 64, True, (1, 8)),
}
POLICY = {
    "--policy": names(POLICIES), "--budget": numbers(1, 10_000_000, True, (1, 8192)),
    "--max-seqs": numbers(1, 1_000_000, True, (1, 2048)),
    "--max-concurrent-prefills": numbers(1, 1_000_000, True, (1, 8)),
    "--max-iterations": numbers(1, 5_000_000, True, (50, 2_000_000)),
}
LENGTHS = {
    "--prompt-tokens": numbers(1, 10_000_000, True, (1, 8192)),
    "--output-tokens": numbers(1, 10_000_000, True, (1, 1024)),
    "--lengths": names(LENGTH_NAMES),
    "--seed": numbers(0, 2**32 - 1, True, (0, 100)),
}
RUN = {
    **HARDWARE, **POLICY, **LENGTHS,
    "--scenario": names(("textbook", "seed", "burst", "poisson")),
    "--decodes": numbers(0, 100_000, True, (0, 256)),
    "--context": numbers(1, 10_000_000, True, (1, 32_000)),
    "--prompt": numbers(1, 10_000_000, True, (1, 32_000)),
    "--decode-output": numbers(1, 10_000_000, True, (1, 2000)),
    "--prompt-output": numbers(1, 10_000_000, True, (1, 500)),
    "--burst": numbers(1, 100_000, True, (1, 30)),
    "--allow-starvation": None,
    "--requests": numbers(1, 1_000_000, True, (1, 500)),
    "--qps": numbers(1e-3, 1e6, False, (0.05, 200)),
    "--trace-in": "trace",
}
WORKED = {
    "--params": numbers(1e3, 1e15, False, (1e6, 1e12)),
    "--bytes-per-param": numbers(0.125, 64, False, (0.5, 4)),
    "--peak-tflops": numbers(1e-3, 1e6, False, (1, 5000)),
    "--bandwidth-tbps": numbers(1e-6, 1e4, False, (0.1, 20)),
    "--kv-bytes": numbers(0.125, 64, False, (0.5, 4)),
    "--decodes": numbers(0, 1e9, True, (0, 1000)), "--context": numbers(0, 1e9, True, (0, 1e5)),
    "--prompt": numbers(1, 1e9, True, (1, 1e6)), "--layers": numbers(1, 1e9, True, (1, 200)),
    "--kv-heads": numbers(1, 1e9, True, (1, 128)), "--head-dim": numbers(1, 1e9, True, (1, 512)),
    "--long-prompt": numbers(1, 1e9, True, (1, 1e7)), "--burst": numbers(1, 1e9, True, (1, 100)),
    "--budgets": budgets_list(),
}
COST = {
    **HARDWARE,
    "--decodes": numbers(0, 1e6, True, (0, 4096)), "--context": numbers(0, 1e8, True, (0, 1e5)),
    "--chunk": numbers(0, 1e8, True, (0, 16384)), "--prefix": numbers(0, 1e8, True, (0, 1e5)),
    "--last": None,
}
SWEEP = {**RUN, "--budgets": budgets_list(), "--tbt-slo": numbers(1e-6, 3600, False, (0.01, 1))}
SWEEP.pop("--budget")
CAPACITY = {
    **HARDWARE, **POLICY, **LENGTHS,
    "--baseline": names(POLICIES), "--baseline-budget": numbers(1, 10_000_000, True, (1, 8192)),
    "--tbt-slo": numbers(1e-6, 3600, False, (0.01, 1)), "--slo": names(SLO_PRESETS),
    "--delay-slo": numbers(1e-3, 1e5, False, (0.1, 10)),
    "--requests": numbers(1, 20_000, True, (1, 120)),
    "--max-runs": numbers(1, 100, True, (1, 6)),
}
EXPORT = {
    **{k: RUN[k] for k in ("--gpu", "--model", "--mode", "--policy", "--budget", "--decodes",
                           "--context", "--prompt", "--decode-output", "--requests", "--qps",
                           "--trace-in")},
    "--view": names(("side-by-side", "streams", "roofline")),
    "--format": names(("png", "svg", "gif")),
    "--out": "out", "--unchunked": names(POLICIES), "--window": names(("prompt", "run")),
    "--tpot-ms": numbers(1e-3, 1e7, False, (1, 100)),
    "--width": numbers(300, 4000, True, (300, 1200)), "--frames": numbers(2, 600, True, (2, 12)),
    "--presenter": None, "--dark": None,
}
VALIDATE = {"--summary": None, "--refit": None}
REPRODUCE = {"--rerun": names(REPRODUCE_SCENARIOS)}
COMMANDS = {"simulate": RUN, "worked-example": WORKED, "cost": COST, "sweep": SWEEP,
            "capacity": CAPACITY, "export": EXPORT, "validate": VALIDATE, "reproduce": REPRODUCE}
# how often each command is drawn: the slow ones (rendering, searches) less often
WEIGHTS = {"simulate": 35, "worked-example": 15, "cost": 15, "sweep": 12, "capacity": 6,
           "export": 9, "validate": 3, "reproduce": 2}
# how many flags a case sets: mostly a few, sometimes many
FLAG_COUNTS = st.sampled_from([0, 1, 1, 2, 2, 3, 3, 4, 5, 8])
# the workload flags of each scenario (a case mostly draws from one scenario's, now and then
# from another's, which must be refused)
STREAM = ("--decodes", "--context", "--prompt", "--decode-output", "--prompt-output",
          "--allow-starvation")
SCENARIO_FLAGS = {"textbook": STREAM, "burst": (*STREAM, "--burst", "--scenario"),
                  "poisson": ("--requests", "--qps", "--prompt-tokens", "--output-tokens",
                              "--lengths", "--seed", "--scenario"),
                  "trace": ("--trace-in",)}
WORKLOAD_FLAGS = {f for flags in SCENARIO_FLAGS.values() for f in flags}

# files a case may name: key -> how the scratch folder holds it
TRACES = ("good.csv", "quoted.csv", "bad_value.csv", "duplicate.csv", "stray.csv", "empty.csv",
          "header_only.csv", "binary.csv", "oversize.csv", "too_many_rows.csv", "huge_tokens.csv",
          "fifo", "folder", "/dev/null", "/dev/zero", "missing.csv", "")
OUTPUTS = ("new.png", "new.gif", "new.svg", "new.csv", "folder", "fifo", "", "/dev/null",
           "no/such/dir/x.png", "out.bmp")


@st.composite
def command_lines(draw) -> list[str]:
    weighted = [name for name, w in WEIGHTS.items() for _ in range(w)]
    command = draw(st.sampled_from(weighted))
    flags = COMMANDS[command]
    pool = sorted(flags)
    scenario = None
    if command in ("simulate", "sweep", "export"):
        scenario = draw(st.sampled_from(sorted(SCENARIO_FLAGS)))
        mine = set(SCENARIO_FLAGS[scenario]) & set(flags)
        pool = sorted(f for f in flags if f not in WORKLOAD_FLAGS or f in mine)
    chosen = draw(st.lists(st.sampled_from(pool), unique=True,
                           max_size=min(len(pool), draw(FLAG_COUNTS))))
    if scenario == "poisson":
        chosen += [f for f in ("--requests", "--qps") if f not in chosen and draw(st.integers(0, 7))]
    if scenario and draw(st.integers(0, 7)) == 0:          # a flag of another scenario
        chosen.append(draw(st.sampled_from(sorted(WORKLOAD_FLAGS & set(flags)))))
    argv = [command]
    if command == "export" and "--out" not in chosen:
        chosen.append("--out")
    if command == "capacity" and draw(st.integers(0, 7)) and "--tbt-slo" not in chosen:
        chosen.append(draw(st.sampled_from(["--tbt-slo", "--slo"])))
    chosen = list(dict.fromkeys(chosen))
    for flag in chosen:
        value = flags[flag]
        if value is None:
            argv.append(flag)
        elif value == "trace":
            argv += [flag, "@" + draw(st.sampled_from(TRACES))]
        elif value == "out":
            argv += [flag, "@" + draw(st.sampled_from(OUTPUTS))]
        else:
            text = draw(value)
            # "--flag=-1e3" or "--flag -1e3": both must read the value
            argv += [f"{flag}={text}"] if draw(st.booleans()) and text else [flag, text]
    if draw(st.integers(0, 3)) == 0:
        argv.append("--json")
    elif draw(st.integers(0, 9)) == 0:
        argv.append("--wide")
    return argv


def generate(cases: int, seed: int = 0) -> list[list[str]]:
    """`cases` distinct command lines drawn by hypothesis (the same ones for the same seed)."""
    return distinct(command_lines(), cases, seed, tries=2)


def distinct(strategy, cases: int, seed: int, tries: int = 3) -> list:
    """Up to `cases` distinct draws of `strategy` in `cases` x `tries` attempts (the same ones for
    the same seed): what every suite's `generate` returns."""
    drawn: list = []

    @fixed_seed(seed)
    @settings(max_examples=cases * tries, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(case):
        if len(drawn) < cases and case not in drawn:
            drawn.append(case)

    collect()
    return drawn


# --- the scratch folder's files -------------------------------------------------------------------
HEADER = "arrival_s,prompt_tokens,output_tokens\n"


def make_scratch(folder: str) -> None:
    """The files the cases name (traces good and broken, a FIFO, a folder)."""
    def write(name, text, mode="w"):
        with open(os.path.join(folder, name), mode) as f:
            f.write(text)
    write("good.csv", HEADER + "".join(f"{i * 0.3:.2f},{200 + 37 * i},{5 + i % 7}\n"
                                       for i in range(20)))
    write("quoted.csv", "arrival_s,prompt_tokens,output_tokens,note\n0,100,4,\"a\nb\"\n"
                        "0.5,x,3,c\n")
    write("bad_value.csv", HEADER + "0,10,2\n1,-5,2\n")
    write("duplicate.csv", "arrival_s,prompt_tokens,output_tokens,output_tokens\n0,1,2,3\n")
    write("stray.csv", HEADER + "0,10,2\n1,10,2,7\n")
    write("empty.csv", "")
    write("header_only.csv", HEADER)
    write("binary.csv", bytes(range(256)) * 4, "wb")
    with open(os.path.join(folder, "oversize.csv"), "wb") as f:
        f.truncate(6_000_000)
    write("too_many_rows.csv", HEADER + "0,1,1\n" * 100_001)
    write("huge_tokens.csv", HEADER + "0,10000000,10000000\n")
    os.mkfifo(os.path.join(folder, "fifo"))
    os.mkdir(os.path.join(folder, "folder"))


def _resolve(argv: list[str], folder: str) -> list[str]:
    """'@name' -> a path: absolute ones as they are, the rest inside the scratch folder."""
    out = []
    for arg in argv:
        if arg.startswith("@"):
            name = arg[1:]
            arg = name if name.startswith("/") or not name else os.path.join(folder, name)
        out.append(arg)
    return out


# --- one case -----------------------------------------------------------------------------------
def run(argv: list[str], folder: str) -> Result:
    resolved = _resolve(argv, folder)
    case = "python -m sim " + shlex.join(resolved)
    outcome = run_sim(*resolved, timeout_s=TIMEOUT_S,
                      peak_file=os.path.join(folder, f"peak-{threading.get_ident()}"))
    verdict, detail = classify(outcome.code, outcome.stdout, outcome.stderr,
                               json_out="--json" in argv, wide="--wide" in argv)
    broke = over_budget(outcome.cpu_seconds, outcome.peak_bytes)
    if broke and verdict in ("clean run", "clean refusal"):
        verdict, detail = "over budget", broke
    return Result(SUITE, case, verdict, outcome.seconds, outcome.cpu_seconds, outcome.peak_bytes,
                  detail)


# what a terminal acts on instead of showing: control characters (but the newline), format
# characters (bidi overrides among them), the Unicode line and paragraph separators
RAW = ("Cc", "Cf", "Zl", "Zp")
NONSENSE = re.compile(r"\b(nan|inf|infx|infinity)\b|nan%|\d[\d,]{24,}", re.IGNORECASE)


def classify(code, stdout: str, stderr: str, *, json_out: bool, wide: bool) -> tuple[str, str]:
    """(verdict, evidence) for one finished or killed case."""
    tail = " | ".join(stderr.strip().splitlines()[-2:])
    if code is None:
        return "hang", f"killed after {TIMEOUT_S:.0f} s"
    if "Traceback" in stderr:
        return "traceback", tail
    raw = next((c for c in stdout + stderr if c != "\n" and unicodedata.category(c) in RAW), None)
    if raw is not None:
        text = stdout + stderr
        at = text.index(raw)
        return "raw control character", f"{raw!r} in {text[max(0, at - 60):at + 20]!r}"
    if code == 2:
        lines = stderr.splitlines()
        if stdout == "" and len(lines) == 1 and lines[0].startswith("error: "):
            return "clean refusal", ""
        return "unclear refusal", f"stdout {len(stdout)} chars; stderr: {tail}"
    if code != 0:
        return f"exit {code}", tail
    if stderr:
        return "stderr noise", tail
    if json_out:
        try:
            parsed = json.loads(stdout, parse_constant=_no_constant)
        except ValueError as e:
            return "bad json", str(e)[:200]
        if _holds_null(parsed):
            return "null in json", "--json printed null (an undefined value must be left out)"
    bad = NONSENSE.search(stdout)
    if bad:
        return "nonsense", f"{bad.group(0)!r} in {stdout[max(0, bad.start() - 60):bad.end() + 20]!r}"
    if not json_out and not wide:
        widest = max((len(line) for line in stdout.splitlines()), default=0)
        if widest > WIDTH:
            return "too wide", f"a line of {widest} columns"
    return "clean run", ""


def _holds_null(value) -> bool:
    if isinstance(value, dict):
        return any(map(_holds_null, value.values()))
    if isinstance(value, list):
        return any(map(_holds_null, value))
    return value is None


def _no_constant(name: str):
    raise ValueError(f"JSON holds {name}")
