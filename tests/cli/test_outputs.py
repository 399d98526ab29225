"""Output the command cannot write is a one-line message and a nonzero exit, known before any work
where it can be: standard output full, closed or gone; an output path (the default one too) in a
missing folder, too long, on the kernel's filesystems, naming a folder, reached through a folder
that is not there, or one file named twice (the guard of the files git tracks: test_git_guard.py).
And a command line too long for argparse is refused before argparse sees it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

import cli.export
import cli.main
from cli.main import MAX_ARGUMENTS, build_parser
from cli.paths import check_output
from harness.bounded import ROOT
from sim.errors import InputError
from tests.support.cli import refused

FAST = ("worked-example",)


def shell(command: str) -> subprocess.CompletedProcess:
    """`python -m sim ...` under bash, for redirections a Popen cannot express (`>&-`)."""
    return subprocess.run(["bash", "-c", f"{shlex.quote(sys.executable)} -m sim {command}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def one_line_error(err: str, words: str) -> None:
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("error: "), err
    assert words in err, err


@pytest.mark.parametrize("argv", [FAST, ("validate", "--json"), ("cost", "--help")])
def test_a_full_disk_on_stdout_is_a_message_and_exit_1(argv):
    """`> /dev/full` ended every command with an OSError traceback (and --help exited 0 with
    nothing written)."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "sim", *argv], cwd=ROOT, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1
    one_line_error(done.stderr, "cannot write the output: No space left on device")


@pytest.mark.parametrize("argv", ["worked-example", "cost --help"])
def test_a_closed_stdout_is_a_message_and_exit_1(argv):
    """`>&-` ended with an AttributeError traceback."""
    done = shell(f"{argv} >&-")
    assert done.returncode == 1
    one_line_error(done.stderr, "standard output is closed")


def test_closed_stdout_and_stderr_still_exit_nonzero():
    assert shell("worked-example >&- 2>&-").returncode == 1


def test_a_refusal_with_stderr_closed_prints_nothing_on_stdout():
    """print(file=None) falls back to stdout: with stderr closed the message landed there."""
    done = shell("cost 2>&-")
    assert done.returncode == 2 and done.stdout == ""


def test_a_reader_that_leaves_ends_the_command_quietly():
    done = shell("validate --json | head -c1 >/dev/null; exit ${PIPESTATUS[0]}")
    assert done.returncode == 141 and done.stderr == ""


# --- output paths, before any work ----------------------------------------------------------
@pytest.mark.parametrize("name, words", [
    ("no/such/folder/trace.csv", "the folder 'no/such/folder' does not exist"),
    ("a" * 300 + ".csv", "a name of 304 bytes; this filesystem allows 255"),
    ("/proc/self/trace.csv", "the kernel's proc filesystem"),
    ("/sys/kernel/mm/transparent_hugepage/enabled", "the kernel's sysfs filesystem"),
    ("/dev/null", "character device"),
    ("", "needs a file name"),
])
@pytest.mark.parametrize("flag", ["--trace-out", "--requests-out"])
def test_an_unwritable_simulate_output_is_refused_before_the_run(flag, name, words, no_work,
                                                                 capsys):
    """A missing folder or a name too long was refused after 13-18 s of work."""
    if name.startswith("/sys") and not os.path.exists(name):
        pytest.skip(f"no {name} here")
    err = refused("simulate", flag, name, capsys=capsys)
    assert words in err and flag in err


def test_two_outputs_naming_one_file_are_refused_before_the_run(tmp_path, no_work, capsys):
    """--trace-out and --requests-out to one file: the second overwrote the first."""
    path = tmp_path / "both.csv"
    path.write_text("an earlier run\n")
    (tmp_path / "link.csv").symlink_to(path)
    for other in (path, tmp_path / "link.csv"):
        err = refused("simulate", "--trace-out", str(path), "--requests-out", str(other),
                      capsys=capsys)
        assert "--trace-out and --requests-out both name" in err


def test_an_unwritable_export_out_is_refused_before_the_run(no_work, capsys):
    assert "does not exist" in refused("export", "--out", "no/such/x.png", capsys=capsys)


@pytest.mark.parametrize("name, words", [
    ("new.csv/", "'new.csv/': it names a folder"),
    ("old.csv/", "'old.csv/': it names a folder"),
    ("a/missing/../b.csv", "its '..' is reached through 'a/missing', which does not"),
    ("old.csv/../b.csv", "the folder 'old.csv/..': Not a directory"),
    ("old.csv/b.csv", "'old.csv' is not a folder"),
])
def test_an_output_path_is_taken_as_the_system_takes_it(name, words, tmp_path, monkeypatch,
                                                        no_work, capsys):
    """`DIR/` and `a/missing/../b.csv` passed a check that read the path by its letters (`a/b.csv`)
    and failed when the file was opened, after the run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "old.csv").write_text("an earlier run\n")
    assert words in refused("simulate", "--trace-out", name, capsys=capsys)


def test_two_outputs_that_are_hard_links_of_one_file_are_refused(tmp_path, no_work, capsys):
    """b.csv a hard link of a.csv: the requests written to b replaced the trace written to a."""
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_text("an earlier run\n")
    os.link(first, second)
    err = refused("simulate", "--trace-out", str(first), "--requests-out", str(second),
                  capsys=capsys)
    assert f"--trace-out and --requests-out both name one file ({str(first)!r} and " in err


# export without --out writes out/<its name> in the current folder
EXPORT = ("export", "--view", "roofline", "--gpu", "h100-sxm", "--model", "llama-3.1-8b",
          "--mode", "simple")
DEFAULT_NAME = ("roofline_h100-sxm_llama-3.1-8b_prompt-8192_streams-64_context-4000_budget-576_simple_"
                "light.png")


@pytest.mark.parametrize("planted, words", [
    ("fifo", "it is a FIFO (named pipe), not a regular file of data; give --out FILE"),
    ("folder", "it is a directory, not a regular file of data; give --out FILE"),
    ("out is a file", "'out' is not a folder; give --out FILE"),
])
def test_the_default_export_path_is_checked_before_the_figure_is_drawn(planted, words, tmp_path,
                                                                       monkeypatch, capsys):
    """Without --out the path went unchecked: a FIFO at the default name hung the command, and
    a folder there (or a file named `out`) failed after seconds of drawing, about an --out never
    given."""
    def drawn(*args):
        raise AssertionError("the figure was drawn before its default path was checked")
    monkeypatch.setattr(cli.export, "_figure", drawn)
    monkeypatch.chdir(tmp_path)
    if planted == "out is a file":
        (tmp_path / "out").write_text("not a folder\n")
    else:
        (tmp_path / "out").mkdir()
        (os.mkfifo if planted == "fifo" else os.mkdir)(tmp_path / "out" / DEFAULT_NAME)
    err = refused(*EXPORT, capsys=capsys)
    assert f"error: cannot write the default output 'out/{DEFAULT_NAME}': {words}" in err


def test_the_default_export_path_is_the_figures_file_name_in_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.export.default_out(build_parser().parse_args(EXPORT)) == f"out/{DEFAULT_NAME}"


def test_every_flag_that_names_a_file_to_write_goes_through_the_one_check():
    """A future output flag declared any other way would escape the checks (and --force)."""
    parser = build_parser()
    for name, command in parser._subparsers._group_actions[0].choices.items():
        files = {a.dest for a in command._actions if a.metavar == "FILE"} - {"trace_in"}
        outputs = {dest for _, dest, _ in command.get_default("output_files") or ()}
        assert files == outputs, name
        if outputs:
            assert any(a.dest == "force" for a in command._actions), name
    assert {"out"} <= {d for _, d, _ in parser._subparsers._group_actions[0].choices["export"]
                       .get_default("output_files")}


def test_the_check_refuses_a_directory_and_a_dangling_link_and_takes_a_new_file(tmp_path):
    with pytest.raises(InputError, match="a directory"):
        check_output("--out", str(tmp_path), force=False)
    planted = tmp_path / "out.csv"            # writing through it would create the target
    planted.symlink_to(tmp_path / "elsewhere" / "made.csv")
    with pytest.raises(InputError, match="symbolic link to a file that does not exist"):
        check_output("--out", str(planted), force=True)
    check_output("--out", str(tmp_path / "fine.csv"), force=False)


# --- long argument lists --------------------------------------------------------------------
def test_a_long_argument_list_is_refused_before_argparse_sees_it(monkeypatch, capsys):
    """100,000 repeated flags took 137 s of CPU in argparse before any estimate."""
    def no_parser():
        raise AssertionError("argparse was given the whole list")
    monkeypatch.setattr(cli.main, "build_parser", no_parser)
    argv = ["simulate", *["--budget", "600"] * 50_000]
    err = refused(*argv, capsys=capsys)
    assert f"100,001 arguments; a command takes at most {MAX_ARGUMENTS:,}" in err


def test_the_longest_accepted_argument_list_is_parsed(capsys):
    argv = ["simulate", *["--budget", "600"] * ((MAX_ARGUMENTS - 1) // 2)]
    assert MAX_ARGUMENTS - 1 <= len(argv) <= MAX_ARGUMENTS
    assert build_parser().parse_args(argv).budget == 600
    assert "arguments" in refused(*argv, "--json", "--json", capsys=capsys)
