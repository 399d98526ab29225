"""Output the command cannot write is a one-line message and a nonzero exit, known before any work
where it can be: standard output full, closed or gone; an output path in a missing folder, too
long, on the kernel's filesystems, or a file git tracks (through symbolic and hard links). And a
command line too long for argparse is refused before argparse sees it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest

import cli.common
import cli.main
from cli.main import MAX_ARGUMENTS, build_parser
from cli.paths import check_output
from harness.bounded import ROOT
from sim.errors import InputError
from tests.support.cli import cli as run_cli

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
@pytest.fixture
def no_work(monkeypatch):
    """Any simulation the command starts fails the test: the path must be refused first."""
    def work(*args, **kwargs):
        raise AssertionError("the command started its work before checking its output path")
    monkeypatch.setattr(cli.common, "workload_from", work)


def refused(*argv, capsys) -> str:
    code, out, err = run_cli(*argv, capsys=capsys)
    assert code == 2 and out == "", (code, out, err)
    one_line_error(err, "")
    return err


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


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is missing")
    top = tmp_path / "repo"
    top.mkdir()
    (top / "Makefile").write_text("committed\n")
    for command in (["init", "-q"], ["add", "Makefile"]):
        subprocess.run(["git", *command], cwd=top, check=True)
    return top


def links_to(target, folder):
    """A symbolic and a hard link to `target` in `folder`."""
    soft, hard = folder / "soft.csv", folder / "hard.csv"
    soft.symlink_to(target)
    os.link(target, hard)
    return soft, hard


def test_a_tracked_file_is_refused_without_force_by_name_and_through_links(repo, tmp_path,
                                                                           no_work, capsys):
    """`simulate --trace-out Makefile` replaced it; export --out replaced docs/*.png through a
    symbolic or hard link (here: a symbolic link from outside the repository, and both kinds
    from an untracked folder inside it)."""
    (repo / "out").mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "link.csv").symlink_to(repo / "Makefile")
    for path in (repo / "Makefile", outside / "link.csv", *links_to(repo / "Makefile",
                                                                    repo / "out")):
        for argv in (("simulate", "--trace-out", str(path)), ("export", "--out", str(path)),
                     ("simulate", "--requests-out", str(path))):
            assert "is a file git tracks; pass --force" in refused(*argv, capsys=capsys)
    assert (repo / "Makefile").read_text() == "committed\n"


def test_this_projects_tracked_files_are_safe_from_links_anywhere(tmp_path, capsys, no_work):
    if shutil.which("git") is None:
        pytest.skip("git is missing")
    readme = os.path.join(ROOT, "README.md")
    for path in links_to(readme, tmp_path):
        assert "git tracks" in refused("simulate", "--trace-out", str(path), capsys=capsys)
    assert "git tracks" in refused("simulate", "--trace-out", "Makefile", capsys=capsys)


def test_force_writes_over_a_tracked_file(repo, capsys):
    code, _, err = run_cli("simulate", "--decodes", "2", "--decode-output", "2", "--trace-out",
                       str(repo / "Makefile"), "--force", capsys=capsys)
    assert code == 0, err
    assert (repo / "Makefile").read_text().startswith("iteration,")


def test_an_untracked_file_in_a_repository_is_written(repo, capsys):
    code, _, err = run_cli("simulate", "--decodes", "2", "--decode-output", "2", "--trace-out",
                       str(repo / "new.csv"), capsys=capsys)
    assert code == 0 and (repo / "new.csv").exists(), err


def test_every_flag_that_names_a_file_to_write_goes_through_the_one_check():
    """A future output flag declared any other way would escape the checks (and --force)."""
    parser = build_parser()
    for name, command in parser._subparsers._group_actions[0].choices.items():
        files = {a.dest for a in command._actions if a.metavar == "FILE"} - {"trace_in"}
        outputs = {dest for _, dest in command.get_default("output_files") or ()}
        assert files == outputs, name
        if outputs:
            assert any(a.dest == "force" for a in command._actions), name
    assert {"out"} <= {d for _, d in parser._subparsers._group_actions[0].choices["export"]
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
