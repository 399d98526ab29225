"""`python -m sim ARGS` in a child process that cannot hang or eat the machine: a wall-clock timeout
and a memory limit, with its time and peak memory measured. Used by the CLI's regression tests for
the runs that used to hang or blow up, by the fuzz suite (tests/fuzz) and by the limits benchmark."""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 120.0
# A limit on writable memory (RLIMIT_DATA), twice the 1.5 GB a command may use: a blow-up becomes a
# MemoryError in the child. RLIMIT_AS would also count address space reserved but never touched,
# which the chart renderer (vl-convert's V8) reserves by the tens of GB.
MEMORY_LIMIT_BYTES = 3 * 2**30


@dataclass(frozen=True)
class Outcome:
    argv: tuple[str, ...]
    code: int | None          # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float            # wall clock
    cpu_seconds: float        # the child's own CPU time (user + system): what contention leaves
    peak_bytes: int           # the child's peak resident memory

    @property
    def timed_out(self) -> bool:
        return self.code is None


def _limit_memory(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


# `python -m sim`, plus a note of the process's own peak memory and CPU time, written at exit to
# SIM_PEAK_FILE
LAUNCHER = ("import atexit, os, resource, runpy\n"
            "def note():\n"
            "    use = resource.getrusage(resource.RUSAGE_SELF)\n"
            "    with open(os.environ['SIM_PEAK_FILE'], 'w') as f:\n"
            "        f.write(f'{use.ru_maxrss * 1024} {use.ru_utime + use.ru_stime}')\n"
            "atexit.register(note)\n"
            "runpy.run_module('sim', run_name='__main__', alter_sys=True)\n")


# Where the child's standard output goes (`stdout` of run_sim): "pipe" (read back), "full"
# (/dev/full: every write fails), "closed" (`>&-`), "closed-both" (`>&- 2>&-`: stdout and stderr
# closed), "head" (`| head -c1`: a reader that leaves after one byte).
STDOUTS = ("pipe", "full", "closed", "closed-both", "head")


def _child_setup(memory_bytes: int, stdout: str):
    def setup() -> None:
        _limit_memory(memory_bytes)
        if stdout.startswith("closed"):
            os.close(1)
        if stdout == "closed-both":
            os.close(2)
    return setup


def run_sim(*argv: str, timeout_s: float = TIMEOUT_S, memory_bytes: int = MEMORY_LIMIT_BYTES,
            peak_file: str | None = None, stdout: str = "pipe", cwd: str = ROOT,
            env: dict[str, str] | None = None) -> Outcome:
    """Run `python -m sim *argv` in `cwd` (the repository root unless told), with `env` added to
    this process's environment; never raises on the child's failure. `peak_file` (a scratch
    path) receives the child's peak memory and CPU time; without it (or when the child is
    killed) both read 0. `stdout`: one of STDOUTS."""
    if peak_file and os.path.exists(peak_file):
        os.unlink(peak_file)                 # a child killed at the timeout writes none
    start = time.perf_counter()
    env = {**os.environ, **(env or {}), "PYTHONHASHSEED": "0",
           "SIM_PEAK_FILE": peak_file or os.devnull,
           # `python -c` imports from its own folder: `sim` from the repository, whatever `cwd`
           "PYTHONPATH": os.pathsep.join(filter(None, (ROOT, os.environ.get("PYTHONPATH"))))}
    command = [sys.executable, "-c", LAUNCHER, *argv]
    if stdout == "head":      # the exit code is the command's, not head's
        command = ["bash", "-c", shlex.join(command) + " | head -c1 >/dev/null; "
                   "exit ${PIPESTATUS[0]}"]
    target = open(os.devnull if stdout != "full" else "/dev/full", "w") \
        if stdout in ("full", "closed", "closed-both") else subprocess.PIPE
    child = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=target,
                             stderr=subprocess.PIPE, text=True, env=env,
                             preexec_fn=_child_setup(memory_bytes, stdout))
    if target is not subprocess.PIPE:
        target.close()
    try:
        out, err = child.communicate(timeout=timeout_s)
        code = child.returncode
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        code = None
    out = out or ""
    seconds = time.perf_counter() - start
    peak, cpu = _usage(peak_file)
    return Outcome(tuple(argv), code, out, err, seconds, cpu, peak)


def _usage(path: str | None) -> tuple[int, float]:
    try:
        with open(path) as f:
            peak, cpu = f.read().split()
        return int(peak), float(cpu)
    except (TypeError, OSError, ValueError):
        return 0, 0.0
