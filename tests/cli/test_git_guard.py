"""The guard of the files git tracks: an output over one takes --force, in this project's
repository and in the one holding the path, by name and through symbolic and hard links; git is
asked whoever owns the checkout and wherever the environment points it, and where it cannot answer
(no git, a corrupt index) every existing file of the repository takes --force; a repository's
.git folder is never written, --force or not."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from cli.paths import check_output
from harness.bounded import ROOT
from sim.errors import InputError
from tests.support.cli import cli, refused

COMMITTED = "committed\n"
NO_ANSWER = "and git cannot say whether it tracks it"


def git(*argv, cwd) -> None:
    subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    """A repository tracking its Makefile, with an untracked notes.csv and an out/ folder."""
    if shutil.which("git") is None:
        pytest.skip("git is missing")
    top = tmp_path / "repo"
    (top / "out").mkdir(parents=True)
    (top / "Makefile").write_text(COMMITTED)
    (top / "notes.csv").write_text("untracked\n")
    git("init", "-q", cwd=top)
    git("add", "Makefile", cwd=top)
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
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "link.csv").symlink_to(repo / "Makefile")
    for path in (repo / "Makefile", outside / "link.csv", *links_to(repo / "Makefile",
                                                                    repo / "out")):
        for argv in (("simulate", "--trace-out", str(path)), ("export", "--out", str(path)),
                     ("simulate", "--requests-out", str(path))):
            assert "is a file git tracks; pass --force" in refused(*argv, capsys=capsys)
    assert (repo / "Makefile").read_text() == COMMITTED


def test_this_projects_tracked_files_are_safe_from_links_anywhere(tmp_path, capsys, no_work):
    if shutil.which("git") is None:
        pytest.skip("git is missing")
    readme = os.path.join(ROOT, "README.md")
    for path in links_to(readme, tmp_path):
        assert "git tracks" in refused("simulate", "--trace-out", str(path), capsys=capsys)
    assert "git tracks" in refused("simulate", "--trace-out", "Makefile", capsys=capsys)


def test_force_writes_over_a_tracked_file(repo, capsys):
    code, _, err = cli("simulate", "--decodes", "2", "--decode-output", "2", "--trace-out",
                       str(repo / "Makefile"), "--force", capsys=capsys)
    assert code == 0, err
    assert (repo / "Makefile").read_text().startswith("iteration,")


def test_an_untracked_file_in_a_repository_is_written(repo, capsys):
    code, _, err = cli("simulate", "--decodes", "2", "--decode-output", "2", "--trace-out",
                       str(repo / "notes.csv"), capsys=capsys)
    assert code == 0 and (repo / "notes.csv").read_text().startswith("iteration,"), err


# --- when git is asked in an unusual place -------------------------------------------------------
def test_a_checkout_owned_by_another_user_still_answers(repo, monkeypatch, no_work, capsys):
    """git refuses a repository another user owns ("detected dubious ownership": a bind mount, a
    clone made with sudo), and its error was read as "not a repository": the tracked figure was
    overwritten without --force."""
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")   # what git checks, without root
    assert "is a file git tracks" in refused("simulate", "--trace-out", str(repo / "Makefile"),
                                             capsys=capsys)
    check_output("--trace-out", str(repo / "notes.csv"), force=False)    # git answered: untracked


@pytest.mark.parametrize("variable, value", [
    ("GIT_DIR", "/nonexistent"),
    ("GIT_DIR", "{other}/.git"),
    ("GIT_WORK_TREE", "{other}"),
    ("GIT_INDEX_FILE", "{other}/no-index"),
])
def test_the_environment_does_not_point_the_guard_at_another_repository(variable, value, repo,
                                                                        tmp_path, monkeypatch,
                                                                        no_work, capsys):
    """An exported GIT_DIR (broken, or another repository's) made git answer for another
    repository, or fail, and the tracked file was overwritten."""
    other = tmp_path / "other"
    other.mkdir()
    git("init", "-q", cwd=other)
    monkeypatch.setenv(variable, value.format(other=other))
    assert "is a file git tracks" in refused("simulate", "--trace-out", str(repo / "Makefile"),
                                             capsys=capsys)


def test_without_git_an_existing_file_in_a_repository_takes_force(repo, tmp_path, monkeypatch,
                                                                  no_work, capsys):
    """No git on the PATH turned the guard off. Now what git cannot answer for is kept: every
    existing file in the repository, and a file with hard links anywhere; a new file, or a file
    outside the repository, is written as before."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    for name in ("Makefile", "notes.csv"):
        err = refused("simulate", "--trace-out", str(repo / name), capsys=capsys)
        assert f"{NO_ANSWER} (git is not on the PATH); pass --force" in err
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    _, hard = links_to(repo / "Makefile", outside)
    assert "has 2 names (hard links), and git cannot say" in refused(
        "simulate", "--trace-out", str(hard), capsys=capsys)
    (outside / "plain.csv").write_text("an earlier run\n")
    for path, force in ((repo / "new.csv", False), (outside / "plain.csv", False),
                        (repo / "Makefile", True)):
        check_output("--trace-out", str(path), force=force)


def test_a_corrupt_index_keeps_every_existing_file_of_the_repository(repo, no_work, capsys):
    """`git status` said "index file corrupt" and the guard took it for "not a repository"."""
    (repo / ".git" / "index").write_bytes(b"not an index")
    for name in ("Makefile", "notes.csv"):
        err = refused("simulate", "--trace-out", str(repo / name), capsys=capsys)
        assert f"{NO_ANSWER} (git says 'fatal: " in err
    check_output("--trace-out", str(repo / "new.csv"), force=False)


# --- a repository's own files -------------------------------------------------------------------
@pytest.mark.parametrize("name", [".git/index", ".git/config", ".git/HEAD", ".git/hooks/pre-commit",
                                  ".git", "out/../.git/description"])
def test_a_repositorys_git_folder_is_never_written_even_with_force(name, repo, no_work, capsys):
    """`--trace-out .git/index` exited 0, git then found its index corrupt, and the next output
    over a tracked file went unguarded."""
    for force in ((), ("--force",)):
        err = refused("simulate", "--trace-out", str(repo / name), *force, capsys=capsys)
        assert "in a repository's .git folder, which only git writes" in err


def test_links_into_a_git_folder_are_never_written_even_with_force(repo):
    soft, hard = links_to(repo / ".git" / "config", repo / "out")
    for path in (soft, hard):
        with pytest.raises(InputError, match=r"\.git folder, which only git writes"):
            check_output("--trace-out", str(path), force=True)
