"""Fuzzing `--trace-in` with files that are not files of data: the kernel's (/proc, /sys, including
/proc/kmsg, which claims to be an empty regular file and blocks when read), devices, the standard
streams, a FIFO with no writer, a socket, directories, and symbolic links to each; given to every
command that reads a trace, beside other flags drawn as in tests/fuzz/cli.py.

Clean: a refusal (exit 2, one line "error: ...") within the timeout; anything read and accepted,
a hang or a traceback is a failure.
"""

from __future__ import annotations

import os
import shlex
import socket
import threading

from hypothesis import strategies as st

from harness.bounded import run_sim

from . import cli
from .report import Result, over_budget

SUITE = "special files"
TIMEOUT_S = 60.0           # a refusal takes a second; a read that blocks, forever
SPECIAL = ["/proc/kmsg", "/proc/self/status", "/proc/self/mem", "/proc/self/environ",
           "/proc/self/fd/0", "/proc/self/cmdline", "/proc", "/sys/kernel/mm/transparent_hugepage/"
           "enabled", "/sys/power/state", "/dev/zero", "/dev/urandom", "/dev/null", "/dev/full",
           "/dev/stdin", "/dev/tty", "@fifo", "@socket", "@folder", "@to-kmsg", "@to-fifo",
           "@to-socket", "@to-status", "@to-folder"]
LINKS = {"to-kmsg": "/proc/kmsg", "to-fifo": "fifo", "to-socket": "socket",
         "to-status": "/proc/self/status", "to-folder": "folder"}
READERS = ("simulate", "sweep", "export")


@st.composite
def cases(draw) -> tuple[str, ...]:
    command = draw(st.sampled_from(READERS))
    others = sorted(set(cli.COMMANDS[command]) - cli.WORKLOAD_FLAGS - {"--out"})
    argv = [command]
    for flag in draw(st.lists(st.sampled_from(others), unique=True, max_size=2)):
        value = cli.COMMANDS[command][flag]
        argv += [flag] if value is None else [flag, draw(value)]
    path = draw(st.sampled_from(SPECIAL))
    argv += ["--trace-in", path]
    if command == "export":
        argv += ["--out", "@new.png"]
    return tuple(argv)


def generate(count: int, seed: int = 0) -> list[tuple[str, ...]]:
    return cli.distinct(cases(), count, seed)


def make_scratch(folder: str) -> None:
    cli.make_scratch(folder)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(folder, "socket"))        # kept bound while the suite runs
    _SOCKETS.append(listener)
    for name, target in LINKS.items():
        os.symlink(target if target.startswith("/") else os.path.join(folder, target),
                   os.path.join(folder, name))


_SOCKETS: list[socket.socket] = []


def run(argv: tuple[str, ...], folder: str) -> Result:
    resolved = cli._resolve(list(argv), folder)
    line = "python -m sim " + shlex.join(resolved)
    outcome = run_sim(*resolved, timeout_s=TIMEOUT_S,
                      peak_file=os.path.join(folder, f"peak-{threading.get_ident()}"))
    verdict, detail = cli.classify(outcome.code, outcome.stdout, outcome.stderr,
                                   json_out="--json" in argv, wide="--wide" in argv)
    if verdict == "hang":
        detail = f"still reading after {TIMEOUT_S:.0f} s"
    elif verdict == "clean run":
        verdict, detail = "read as a trace", "a special file was accepted"
    broke = over_budget(outcome.cpu_seconds, outcome.peak_bytes)
    if broke and verdict == "clean refusal":
        verdict, detail = "over budget", broke
    return Result(SUITE, line, verdict, outcome.seconds, outcome.cpu_seconds, outcome.peak_bytes,
                  detail)
