"""Files a command writes. Every flag that names an output file is declared with `output_file`,
which also gives its command `--force`; `cli.main` checks each one with `check_outputs` before
any work, the flag's default path too where the command writes one without it, so a path that
cannot be written is refused in a moment, not after the run.

Paths are taken as the system will take them: `DIR/` names a folder and `a/missing/../b.png`
needs `a/missing`. Refused: an empty name, a name that ends in a folder (`/`, `.`, `..`), a name
or path longer than the filesystem allows, a folder that does not exist or cannot be written, a
symbolic link to nothing (writing would create its target, wherever it points), anything but a
regular file of data (a directory, FIFO, device, socket, or a file of /proc or /sys: see
`sim.serving.trace_files.special_file`), one file named by two outputs of a command (by name,
symbolic or hard link), anything in a repository's `.git` folder, even with --force (by name,
through a symbolic link, or a hard link of a file at its top), and, without --force, a file git
tracks: the path, followed through symbolic links, or any hard link to it, compared with the files
of this project's repository and of the repository holding the path (by name and by inode and
device). Where git cannot answer for one of them (no git, a corrupt index, a git too old to be
told that another user's checkout is safe), every existing file in that repository's folder, and
any file with hard links, takes --force.

Git is asked about the repository found by the path's folders (the nearest one holding `.git`),
never one that `GIT_DIR` and its like in the environment point to; with its file-system monitor
off, so that a repository's own configuration runs no program, and with every folder taken as
safe, so that a checkout owned by another user (a bind mount, a clone made with sudo) still
answers.
"""

from __future__ import annotations

import argparse
import os
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from sim.errors import InputError
from sim.serving.trace_files import kernel_filesystem, special_file

PROJECT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
NAME_MAX = 255      # a file name's length on common filesystems, where pathconf cannot tell
PATH_MAX = 4096
GIT = ("git", "-c", "core.fsmonitor=false", "-c", "safe.directory=*")
GIT_TIMEOUT_S = 30
# What `git rev-parse --local-env-vars` lists: the environment that points git at another
# repository, index or configuration than the folder's own. Left out when the guard asks git.
GIT_LOCAL_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
                 "GIT_CONFIG_COUNT", "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE",
                 "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE",
                 "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
                 "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR")

Default = Callable[[argparse.Namespace], str]


def output_file(parser: argparse.ArgumentParser, flag: str, what: str,
                default: Default | None = None) -> None:
    """A flag naming a file the command writes (`what` it holds), checked before any work; the
    command gets --force once. `default(args)`: the path written without the flag (its folder
    made when missing), checked the same way."""
    action = parser.add_argument(flag, metavar="FILE", help=what)
    parser.set_defaults(output_files=(*(parser.get_default("output_files") or ()),
                                      (flag, action.dest, default)))
    if not any(a.dest == "force" for a in parser._actions):
        parser.add_argument("--force", action="store_true",
                            help="write output files even over a file git tracks (default off)")


def check_outputs(args) -> None:
    """Refuse, before any work, each output whose file cannot or may not be written, and two
    outputs that are one file (the second would overwrite the first)."""
    named: dict[object, tuple[str, str]] = {}
    for flag, dest, default in getattr(args, "output_files", ()):
        path = getattr(args, dest)
        if path is None and default is None:
            continue
        given = path is not None
        path = path if given else default(args)
        check_output(flag, path, force=args.force, given=given)
        first_flag, first = named.setdefault(_identity(path), (flag, path))
        if first_flag != flag:
            both = _shown(path) if path == first else f"one file ({_shown(first)} and {_shown(path)})"
            raise InputError(f"{first_flag} and {flag} both name {both}; give each its own file")


def check_output(flag: str, path: str, *, force: bool, given: bool = True) -> None:
    """An InputError saying why `path` cannot be written (see the module docstring), else None.
    `given`: `flag` named it (else it is the command's default for `flag`)."""
    if not path:
        raise InputError(f"{flag} needs a file name")
    name, instead = (f"{flag} {_shown(path)}", "give another path") if given else \
        (f"the default output {_shown(path)}", f"give {flag} FILE")
    where = f"cannot write {name}"
    if os.path.basename(path) in ("", os.curdir, os.pardir):
        raise InputError(f"{where}: it names a folder; {instead}")
    _check_length(where, path)
    if in_git_folder(path):
        raise InputError(f"{where}: it is in a repository's .git folder, which only git writes "
                         f"(--force does not change that); {instead}")
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):     # the folder says which
        info = None
    except OSError as e:
        raise InputError(f"{where}: {e.strerror}") from None
    if info is None:
        if os.path.islink(path):            # writing would create the link's target, elsewhere
            raise InputError(f"{where}: it is a symbolic link to a file that does not exist; "
                             f"{instead}")
        _check_folder(where, os.path.dirname(path) or os.curdir, instead, made=not given)
        return
    what = special_file(path, info)
    if what:
        raise InputError(f"{where}: it is {what}, not a regular file of data; {instead}")
    if not os.access(path, os.W_OK):
        raise InputError(f"{where}: the file is read-only here")
    if _git_hard_link(path, info):
        raise InputError(f"{where}: it is a hard link of a file in a repository's .git folder, "
                         f"which only git writes (--force does not change that); {instead}")
    if not force:
        _check_untracked(name, path, info)


def _shown(path: str) -> str:
    """A path as a message quotes it: whole up to 100 characters, else its start and end."""
    return repr(path if len(path) <= 100 else f"{path[:60]}...{path[-30:]}")


def _identity(path: str) -> object:
    """What two names of one file share: its device and inode, or for a file still to be made,
    its real path."""
    try:
        info = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return info.st_dev, info.st_ino


def _check_length(where: str, path: str) -> None:
    existing = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    name_max = _pathconf(existing, "PC_NAME_MAX", NAME_MAX)
    longest = max((part for part in path.split(os.sep)), key=lambda p: len(os.fsencode(p)))
    if len(os.fsencode(longest)) > name_max:
        raise InputError(f"{where}: a name of {len(os.fsencode(longest)):,} bytes; this "
                         f"filesystem allows {name_max:,}")
    path_max = _pathconf(existing, "PC_PATH_MAX", PATH_MAX)
    if len(os.fsencode(os.path.abspath(path))) >= path_max:
        raise InputError(f"{where}: a path of {len(os.fsencode(path)):,} bytes; this "
                         f"filesystem allows {path_max - 1:,}")


def _pathconf(folder: str, name: str, default: int) -> int:
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError):
        return default


def _check_folder(where: str, folder: str, instead: str, *, made: bool) -> None:
    """The folder a new file goes in, as the system reaches it (`a/missing/..` fails at
    `a/missing`); `made`: the command makes it when missing, so its own folder is checked."""
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        if made:
            return _check_folder(where, os.path.dirname(folder) or os.curdir, instead, made=False)
        raise InputError(f"{where}: the folder {_shown(folder)} does not exist"
                         f"{_missing_before_parent(folder)}; create it or {instead}") from None
    except OSError as e:
        raise InputError(f"{where}: the folder {_shown(folder)}: {e.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(f"{where}: {_shown(folder)} is not a folder; {instead}")
    kernel = kernel_filesystem(folder, info)
    if kernel:
        raise InputError(f"{where}: the folder is the kernel's {kernel}, not a place for data")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{where}: its folder cannot be written here")


def _missing_before_parent(folder: str) -> str:
    """Where a folder with `..` in it fails: the system reaches each `..` through the folder
    before it, which must exist ('' when the folder has no `..`)."""
    parts = folder.split(os.sep)
    for end in range(1, len(parts)):
        if parts[end] == os.pardir and not os.path.isdir(os.sep.join(parts[:end]) or os.sep):
            return f" (its '..' is reached through {_shown(os.sep.join(parts[:end]))}, which does not)"
    return ""


# --- git: what it tracks, and its own folder ----------------------------------------------------
def in_git_folder(path: str) -> bool:
    """Whether `path`, as written or followed through symbolic links, lies in a `.git` folder (or
    is a `.git` file)."""
    return any(part.casefold() == ".git" for full in (os.path.abspath(path), os.path.realpath(path))
               for part in full.split(os.sep))


def _git_hard_link(path: str, info: os.stat_result) -> bool:
    """Whether the existing file `path` is a hard link of a file at the top of the `.git` folder
    of a repository the guard looks at (its config, HEAD, index)."""
    if info.st_nlink < 2:
        return False
    for top in _tops(os.path.realpath(path)):
        folder = os.path.join(top, ".git")
        try:
            names = os.listdir(folder) if os.path.isdir(folder) else []
        except OSError:
            continue
        if any(_same_file(os.path.join(folder, n), info) for n in names):
            return True
    return False


@dataclass(frozen=True)
class Repository:
    top: str                      # the folder holding its .git
    files: frozenset[str] | None  # what git tracks, relative to `top`; None: git cannot say
    why: str = ""                 # why git cannot say


def _check_untracked(name: str, path: str, info: os.stat_result) -> None:
    """Refuse the existing file `path` when git tracks it (by name or as a hard link), or when
    git cannot say whether it does."""
    real = os.path.realpath(path)
    for repo in map(_ask_git, _tops(real)):
        inside = real.startswith(repo.top.rstrip(os.sep) + os.sep)
        if repo.files is None:
            if inside:
                raise InputError(f"{name} is a file in the repository {_shown(repo.top)}, and git "
                                 f"cannot say whether it tracks it ({repo.why}); pass --force to "
                                 "overwrite it, or give a path outside the repository")
            if info.st_nlink > 1:
                raise InputError(f"{name} has {info.st_nlink:,} names (hard links), and git "
                                 f"cannot say whether one is a file it tracks in "
                                 f"{_shown(repo.top)} ({repo.why}); pass --force to overwrite it")
            continue
        if (inside and os.path.relpath(real, repo.top) in repo.files) or (
                info.st_nlink > 1 and any(_same_file(os.path.join(repo.top, f), info)
                                          for f in repo.files)):
            raise InputError(f"{name} is a file git tracks; pass --force to overwrite it, or give "
                             "a path outside the repository's files (out/ is ignored by git)")


def _tops(real: str) -> list[str]:
    """The repositories the guard looks at: this project's and the one holding `real` (each the
    nearest folder at or above that holds a `.git`), once each."""
    return list(dict.fromkeys(filter(None, (_top(PROJECT), _top(os.path.dirname(real))))))


def _top(folder: str) -> str:
    while not os.path.lexists(os.path.join(folder, ".git")):
        if os.path.dirname(folder) == folder:
            return ""
        folder = os.path.dirname(folder)
    return folder


def _ask_git(top: str) -> Repository:
    """The files git tracks in the repository at `top`, or why it cannot say."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCAL_ENV}
    try:
        done = subprocess.run([*GIT, "ls-files", "-z"], cwd=top, env=env, capture_output=True,
                              timeout=GIT_TIMEOUT_S)
    except FileNotFoundError:
        return Repository(top, None, "git is not on the PATH")
    except subprocess.TimeoutExpired:
        return Repository(top, None, f"git took over {GIT_TIMEOUT_S} s")
    except OSError as e:
        return Repository(top, None, f"git could not run: {e.strerror}")
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines() or [
            f"exit code {done.returncode}"]
        return Repository(top, None, f"git says {said[0]!r}")
    listed = done.stdout.decode(errors="surrogateescape")
    return Repository(top, frozenset(f for f in listed.split("\0") if f))


def _same_file(path: str, info: os.stat_result) -> bool:
    try:
        other = os.stat(path)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)
