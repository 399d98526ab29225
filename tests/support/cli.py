"""Running `python -m sim` in-process."""

import json

from cli.main import main


def cli(*args, capsys):
    """(exit code, stdout, stderr) of `python -m sim ARGS`."""
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def refused(*args, capsys) -> str:
    """The one-line message of a command that must exit 2 (and print nothing on stdout)."""
    code, out, err = cli(*args, capsys=capsys)
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def simulate_json(*argv, capsys) -> dict:
    """`python -m sim simulate ARGV --json`, which must succeed, parsed."""
    code, out, err = cli("simulate", *argv, "--json", capsys=capsys)
    assert code == 0, err
    return json.loads(out)
