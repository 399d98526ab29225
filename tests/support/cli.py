"""Running `python -m sim` in-process."""

from cli.main import main


def cli(*args, capsys):
    """(exit code, stdout, stderr) of `python -m sim ARGS`."""
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err
