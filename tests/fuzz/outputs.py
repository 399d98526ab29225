"""Fuzzing where a command's output goes: command lines drawn as in tests/fuzz/cli.py, their
standard output full (/dev/full), closed, closed with stderr, or read by a reader that leaves after
one byte; and the output flags (`simulate --trace-out` and `--requests-out`, `export --out`)
pointed at places that cannot or may not be written: a missing folder, names and paths too long,
the kernel's files, devices, a FIFO, a directory, paths the system resolves otherwise than their
letters (`DIR/`, `missing/..`), a file git tracks in a scratch repository (by name, symbolic and
hard link), a repository's .git files, files of a repository whose index is corrupt; the two
simulate outputs naming one file (by name, `./`, `..`, symbolic and hard link); export's default
path (no --out) made a FIFO, a folder, a link to a tracked file or to /dev/full, or its folder
`out` a file. Each with git's view of the scratch repository changed: a checkout of another user,
no git on the PATH, GIT_DIR broken or pointing elsewhere, GIT_INDEX_FILE elsewhere.

Clean: a refusal (exit 2, one line "error: ..."), an output error (exit 1, one line, or nothing
where stderr is closed too), or a quiet end where the reader left (exit 141, or 0 when the output
fit the pipe before it left); never a traceback, never a tracked file or a .git file changed, and
a refused path refused before any work (under CHECK_CPU_S of CPU).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading

from hypothesis import strategies as st

from harness.bounded import ROOT, run_sim

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
    "trailing slash": "new.csv/",
    "trailing slash on a file": "plain.csv/",
    "missing/..": "folder/missing/../x.csv",
    "file/..": "plain.csv/../x.csv",
    ".git/index": "repo/.git/index",
    ".git/config": "repo/.git/config",
    ".git/HEAD": "repo/.git/HEAD",
    "new file in .git": "repo/.git/hooks/pre-commit",
    "symlink to .git/config": "gitlink.csv",
    "hard link of .git/HEAD": "repo/out/head.csv",
    "corrupt index, tracked": "broken/Makefile",
    "corrupt index, untracked": "broken/notes.csv",
}
# paths whose refusal --force does not change (the rest are files it may overwrite)
FORCE_PROOF = sorted(set(PATHS) - {"tracked file", "symlink to tracked", "hard link to tracked",
                                   "corrupt index, tracked", "corrupt index, untracked"})
# what --requests-out names beside `--trace-out plain.csv`: that file again
SAME_FILE = ("plain.csv", "./plain.csv", "folder/../plain.csv", "plain-soft.csv", "plain-hard.csv")
# export without --out writes out/<its name> in the folder it runs in: what is there already
DEFAULT_PATHS = ("fifo", "folder", "out is a file", "link to tracked", "link to /dev/full")
# how git sees the scratch repository ({} as it is); "{scratch}" stands for the scratch folder
GIT_VIEWS = {
    "": {},
    "other owner": {"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"},
    "no git": {"PATH": "{scratch}/no-git-here"},
    "GIT_DIR broken": {"GIT_DIR": "/nonexistent"},
    "GIT_DIR elsewhere": {"GIT_DIR": "{scratch}/other/.git"},
    "GIT_INDEX_FILE elsewhere": {"GIT_INDEX_FILE": "{scratch}/no-index"},
}
# files no case may change: the tracked ones and the repository's own
PROTECTED = ("repo/Makefile", "repo/.git/index", "repo/.git/config", "repo/.git/HEAD",
             "broken/Makefile")
WRITERS = {"simulate": ("--trace-out", "--requests-out"), "export": ("--out",)}
# flags that make the run long (simulate: about 7 s of CPU, 0.8 GB), so a check made after the
# work would show in the CPU time
HEAVY = {"simulate": ["--requests", "40000", "--qps", "20", "--lengths", "sharegpt"],
         "export": ["--format", "gif", "--frames", "100", "--width", "2000"]}
DEFAULT_EXPORTS = (("export", "--mode", "simple"), ("export", *HEAVY["export"]))

Case = tuple[str, tuple[str, ...], str, str]   # (sink, argv, git view, default path planted)


@st.composite
def cases(draw) -> Case:
    if draw(st.booleans()):
        return draw(st.sampled_from(SINKS)), tuple(draw(cli.command_lines())), "", ""
    view = draw(st.sampled_from(sorted(GIT_VIEWS)))
    kind = draw(st.sampled_from(["path"] * 4 + ["same file", "default"]))
    if kind == "default":
        return "pipe", draw(st.sampled_from(DEFAULT_EXPORTS)), view, draw(
            st.sampled_from(DEFAULT_PATHS))
    command = "simulate" if kind == "same file" else draw(st.sampled_from(sorted(WRITERS)))
    argv = [command, *(HEAVY[command] if draw(st.booleans()) else [])]
    if kind == "same file":
        argv += ["--trace-out", "@plain.csv", "--requests-out", "@" + draw(st.sampled_from(SAME_FILE))]
    else:
        path = draw(st.sampled_from(sorted(PATHS)))
        argv += [draw(st.sampled_from(WRITERS[command])), "@" + PATHS[path]]
        if path in FORCE_PROOF and draw(st.booleans()):
            argv.append("--force")
    if draw(st.booleans()):
        argv.append("--json")
    return "pipe", tuple(argv), view, ""


def generate(count: int, seed: int = 0) -> list[Case]:
    return cli.distinct(cases(), count, seed)


def make_scratch(folder: str) -> None:
    cli.make_scratch(folder)

    def at(*parts) -> str:
        return os.path.join(folder, *parts)

    def git(*argv, cwd) -> None:
        subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True)

    for repo in ("repo", "broken"):
        os.makedirs(at(repo, "out"))
        with open(at(repo, "Makefile"), "w") as f:
            f.write(COMMITTED)
        git("init", "-q", cwd=at(repo))
        git("add", "Makefile", cwd=at(repo))
    with open(at("broken", ".git", "index"), "wb") as f:
        f.write(b"not an index")
    with open(at("broken", "notes.csv"), "w") as f:
        f.write("untracked\n")
    os.makedirs(at("other"))
    git("init", "-q", cwd=at("other"))
    os.symlink(at("repo", "Makefile"), at("soft.csv"))
    os.link(at("repo", "Makefile"), at("repo", "out", "hard.csv"))
    os.symlink(at("repo", ".git", "config"), at("gitlink.csv"))
    os.link(at("repo", ".git", "HEAD"), at("repo", "out", "head.csv"))
    with open(at("plain.csv"), "w") as f:
        f.write("an earlier run\n")
    os.symlink(at("plain.csv"), at("plain-soft.csv"))
    os.link(at("plain.csv"), at("plain-hard.csv"))
    for planted in DEFAULT_PATHS:
        _plant_default(at("default", planted), planted, at("repo", "Makefile"))
    _PRISTINE[folder] = _protected(folder)


def _plant_default(where: str, planted: str, tracked: str) -> None:
    """A folder where export's default path (for each of DEFAULT_EXPORTS) is already `planted`."""
    from cli.export import default_out
    from cli.main import build_parser

    os.makedirs(where)
    if planted == "out is a file":
        with open(os.path.join(where, "out"), "w") as f:
            f.write("not a folder\n")
        return
    os.makedirs(os.path.join(where, "out"))
    for argv in DEFAULT_EXPORTS:
        path = os.path.join(where, default_out(build_parser().parse_args(argv)))
        {"fifo": os.mkfifo, "folder": os.mkdir,
         "link to tracked": lambda p: os.symlink(tracked, p),
         "link to /dev/full": lambda p: os.symlink("/dev/full", p)}[planted](path)


def _protected(folder: str) -> dict[str, bytes]:
    contents = {}
    for name in PROTECTED:
        with open(os.path.join(folder, name), "rb") as f:
            contents[name] = f.read()
    return contents


_PRISTINE: dict[str, dict[str, bytes]] = {}   # scratch folder -> PROTECTED as made


def run(case: Case, folder: str) -> Result:
    sink, argv, view, planted = case
    pristine = _PRISTINE[folder]
    resolved = cli._resolve(list(argv), folder)
    env = {k: v.format(scratch=folder) for k, v in GIT_VIEWS[view].items()}
    cwd = os.path.join(folder, "default", planted) if planted else ROOT
    shown = {"pipe": "", "full": " >/dev/full", "closed": " >&-", "closed-both": " >&- 2>&-",
             "head": " | head -c1"}[sink]
    line = (f"cd {shlex.quote(cwd)} && " if planted else "") + "".join(
        f"{k}={shlex.quote(v)} " for k, v in env.items()) + "python -m sim " + shlex.join(
        resolved) + shown
    outcome = run_sim(*resolved, timeout_s=TIMEOUT_S, stdout=sink, cwd=cwd, env=env,
                      peak_file=os.path.join(folder, f"peak-{threading.get_ident()}"))
    verdict, detail = classify(sink, argv, outcome)
    for name, now in _protected(folder).items():
        if now != pristine[name]:
            verdict, detail = f"{name} changed", line
            with open(os.path.join(folder, name), "wb") as again:
                again.write(pristine[name])
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
