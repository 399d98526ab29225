"""Fuzzing where a command's output goes: command lines drawn as in tests/fuzz/cli.py, their
standard output full (/dev/full), closed, closed with stderr, or read by a reader that leaves after
one byte; and the output flags (`simulate --trace-out` and `--requests-out`, `export --out`)
pointed at places that cannot or may not be written: a missing folder, names and paths too long,
the kernel's files, devices, a FIFO, a directory, a file git tracks in a scratch repository (by
name, symbolic and hard link).

Clean: a refusal (exit 2, one line "error: ..."), an output error (exit 1, one line, or nothing
where stderr is closed too), or a quiet end where the reader left (exit 141, or 0 when the output
fit the pipe before it left); never a traceback, never a tracked file changed, and a refused path
refused before any work (under CHECK_CPU_S of CPU).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading

from hypothesis import strategies as st

from harness.bounded import run_sim

from . import cli
from .report import Result, over_budget

SUITE = "output errors"
SINKS = ("full", "closed", "closed-both", "head")
TIMEOUT_S = 300.0
CHECK_CPU_S = 5.0          # a refused output path costs the start of Python, not a run
COMMITTED = "committed\n"
# output paths: name -> where it points (under the scratch folder unless absolute)
PATHS = {
    "missing folder": "no/such/folder/x.csv",
    "long name": "n" * 300 + ".csv",
    "long path": "/".join(["d" * 200] * 25) + "/x.csv",
    "proc file": "/proc/self/status",
    "proc folder": "/proc/self/new.csv",
    "sys file": "/sys/kernel/mm/transparent_hugepage/enabled",
    "/dev/null": "/dev/null",
    "/dev/full": "/dev/full",
    "fifo": "fifo",
    "directory": "folder",
    "tracked file": "repo/Makefile",
    "symlink to tracked": "soft.csv",
    "hard link to tracked": "repo/out/hard.csv",
    "empty": "",
}
WRITERS = {"simulate": ("--trace-out", "--requests-out"), "export": ("--out",)}
# flags that make the run long, so a check made after the work would show in the CPU time
HEAVY = {"simulate": ["--decodes", "4000", "--decode-output", "2000"],
         "export": ["--format", "gif", "--frames", "100", "--width", "2000"]}


@st.composite
def cases(draw) -> tuple[str, tuple[str, ...]]:
    if draw(st.booleans()):
        return draw(st.sampled_from(SINKS)), tuple(draw(cli.command_lines()))
    command = draw(st.sampled_from(sorted(WRITERS)))
    argv = [command, *(HEAVY[command] if draw(st.booleans()) else []),
            draw(st.sampled_from(WRITERS[command])), "@" + PATHS[draw(st.sampled_from(sorted(PATHS)))]]
    if draw(st.booleans()):
        argv.append("--json")
    return "pipe", tuple(argv)


def generate(count: int, seed: int = 0) -> list[tuple[str, tuple[str, ...]]]:
    return cli.distinct(cases(), count, seed)


def make_scratch(folder: str) -> None:
    cli.make_scratch(folder)
    repo = os.path.join(folder, "repo")
    os.makedirs(os.path.join(repo, "out"))
    with open(os.path.join(repo, "Makefile"), "w") as f:
        f.write(COMMITTED)
    for command in (["init", "-q"], ["add", "Makefile"]):
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)
    os.symlink(os.path.join(repo, "Makefile"), os.path.join(folder, "soft.csv"))
    os.link(os.path.join(repo, "Makefile"), os.path.join(repo, "out", "hard.csv"))


def run(case: tuple[str, tuple[str, ...]], folder: str) -> Result:
    sink, argv = case
    resolved = cli._resolve(list(argv), folder)
    shown = {"pipe": "", "full": " >/dev/full", "closed": " >&-", "closed-both": " >&- 2>&-",
             "head": " | head -c1"}[sink]
    line = "python -m sim " + shlex.join(resolved) + shown
    outcome = run_sim(*resolved, timeout_s=TIMEOUT_S, stdout=sink,
                      peak_file=os.path.join(folder, f"peak-{threading.get_ident()}"))
    verdict, detail = classify(sink, argv, outcome)
    with open(os.path.join(folder, "repo", "Makefile")) as f:
        if f.read() != COMMITTED:
            verdict, detail = "tracked file overwritten", line
            with open(os.path.join(folder, "repo", "Makefile"), "w") as again:
                again.write(COMMITTED)
    broke = over_budget(outcome.cpu_seconds, outcome.peak_bytes)
    if broke and verdict in ("clean run", "clean refusal", "clean output error"):
        verdict, detail = "over budget", broke
    return Result(SUITE, line, verdict, outcome.seconds, outcome.cpu_seconds, outcome.peak_bytes,
                  detail)


def classify(sink: str, argv, outcome) -> tuple[str, str]:
    code, err = outcome.code, outcome.stderr
    tail = " | ".join(err.strip().splitlines()[-2:])
    if code is None:
        return "hang", f"killed after {TIMEOUT_S:.0f} s"
    if "Traceback" in err or "Exception ignored" in err:
        return "traceback", tail
    if sink == "pipe":                 # an output path that cannot or may not be written
        verdict, detail = cli.classify(code, outcome.stdout, err, json_out="--json" in argv,
                                       wide=False)
        if verdict == "clean run":
            return "written", "a path that must be refused was accepted"
        if verdict == "clean refusal" and outcome.cpu_seconds > CHECK_CPU_S:
            return "refused after the work", f"{outcome.cpu_seconds:.1f} s of CPU first"
        return verdict, detail
    one_line = err.count("\n") == 1 and err.startswith("error: ")
    if code == 2 and one_line:
        return "clean refusal", ""
    if sink == "closed-both":
        return ("clean output error", "") if code == 1 and err == "" else (f"exit {code}", tail)
    if sink == "head":
        return ("clean run", "") if code in (0, 141) and err == "" else (f"exit {code}", tail)
    expected = "standard output is closed" if sink == "closed" else "cannot write the output"
    if code == 1 and one_line and expected in err:
        return "clean output error", ""
    return f"exit {code}", tail
