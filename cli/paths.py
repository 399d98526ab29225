"""Files a command writes. Every flag that names an output file is declared with `output_file`,
which also gives its command `--force`; `cli.main` checks each one given with `check_output`
before any work, so a path that cannot be written is refused in a moment, not after the run.

Refused: an empty name, a name or path longer than the filesystem allows, a folder that does not
exist or cannot be written, a symbolic link to nothing (writing would create its target,
wherever it points), anything but a regular file of data (a directory, FIFO, device,
socket, or a file of /proc or /sys: see `sim.serving.trace_files.special_file`), one file named
by two output flags of a command, and, without --force, a file git tracks: the path, followed
through symbolic links, or any hard link to it, compared with the files of this project's
repository and of the repository holding the path (by name and by inode and device). Git is
asked with its file-system monitor off, so a repository's own configuration runs no program;
without git nothing counts as tracked.
"""

from __future__ import annotations

import argparse
import os
import subprocess

from sim.errors import InputError
from sim.serving.trace_files import kernel_filesystem, special_file

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME_MAX = 255      # a file name's length on common filesystems, where pathconf cannot tell
PATH_MAX = 4096


def output_file(parser: argparse.ArgumentParser, flag: str, what: str) -> None:
    """A flag naming a file the command writes (`what` it holds), checked before any work; the
    command gets --force once."""
    action = parser.add_argument(flag, metavar="FILE", help=what)
    parser.set_defaults(output_files=(*(parser.get_default("output_files") or ()),
                                      (flag, action.dest)))
    if not any(a.dest == "force" for a in parser._actions):
        parser.add_argument("--force", action="store_true",
                            help="write output files even over a file git tracks (default off)")


def check_outputs(args) -> None:
    """Refuse, before any work, each output flag given whose file cannot or may not be written,
    and two flags naming one file (the second would overwrite the first)."""
    named: dict[str, str] = {}
    for flag, dest in getattr(args, "output_files", ()):
        path = getattr(args, dest)
        if path is not None:
            check_output(flag, path, force=args.force)
            same = named.setdefault(os.path.realpath(path), flag)
            if same != flag:
                raise InputError(f"{same} and {flag} both name {_shown(path)}; give each its "
                                 "own file")


def check_output(flag: str, path: str, *, force: bool) -> None:
    """An InputError saying why `path` cannot be written (see the module docstring), else None."""
    if not path:
        raise InputError(f"{flag} needs a file name")
    where = f"cannot write {flag} {_shown(path)}"
    folder = os.path.dirname(os.path.abspath(path))
    _check_length(where, path, folder)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as e:
        raise InputError(f"{where}: {e.strerror}") from None
    if info is None:
        if os.path.islink(path):            # writing would create the link's target, elsewhere
            raise InputError(f"{where}: it is a symbolic link to a file that does not exist; "
                             "give a file name")
        if not os.path.isdir(folder):
            raise InputError(f"{where}: the folder {_shown(os.path.dirname(path))} does not "
                             "exist; create it or give another path")
        kernel = kernel_filesystem(folder, os.stat(folder))
        if kernel:
            raise InputError(f"{where}: the folder is the kernel's {kernel}, not a place for data")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(f"{where}: its folder cannot be written here")
        return
    what = special_file(path, info)
    if what:
        raise InputError(f"{where}: it is {what}, not a regular file of data; give a file name")
    if not os.access(path, os.W_OK):
        raise InputError(f"{where}: the file is read-only here")
    if not force and tracked_by_git(path):
        raise InputError(f"{flag} {_shown(path)} is a file git tracks; pass --force to overwrite it, or "
                         "give a path outside the repository's files (out/ is ignored by git)")


def _shown(path: str) -> str:
    """A path as a message quotes it: whole up to 100 characters, else its start and end."""
    return repr(path if len(path) <= 100 else f"{path[:60]}...{path[-30:]}")


def _check_length(where: str, path: str, folder: str) -> None:
    existing = folder
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


def tracked_by_git(path: str) -> bool:
    """Whether the existing file `path` is, or is a link to, a file git tracks in this project's
    repository or in the repository that holds it."""
    real = os.path.realpath(path)
    info = os.stat(real)
    seen = set()
    for folder in (PROJECT, os.path.dirname(real)):
        top, files = _tracked_files(folder)
        if not top or top in seen:
            continue
        seen.add(top)
        if os.path.relpath(real, top) in files:
            return True
        if info.st_nlink > 1 and any(_same_file(os.path.join(top, f), info) for f in files):
            return True
    return False


def _git(folder: str, *argv: str) -> str | None:
    try:
        done = subprocess.run(["git", "-c", "core.fsmonitor=false", *argv], cwd=folder,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode(errors="surrogateescape") if done.returncode == 0 else None


def _tracked_files(folder: str) -> tuple[str, set[str]]:
    """(the top of the repository holding `folder`, the paths it tracks, relative to the top);
    ('', set()) outside a repository or without git."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    if not top:
        return "", set()
    top = top.rstrip("\n")
    listed = _git(top, "ls-files", "-z") or ""
    return top, {f for f in listed.split("\0") if f}


def _same_file(path: str, info: os.stat_result) -> bool:
    try:
        other = os.stat(path)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)
