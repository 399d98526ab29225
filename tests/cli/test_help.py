"""A command line that explains itself. Every subcommand's --help describes it in
a paragraph and every flag states its unit and default; tables fit 120 columns (--wide for the
rest), every column has a header, counts have thousands separators; the source articles are named,
never by the tracker's label for them; a bare command says which flags it needs; and the worked example prices a budget
with room for the whole prompt as decodes + prompt."""

import contextlib
import io
import re

import pytest

from cli.main import build_parser, main
from sim.studies.worked_example import worked_example
from tests.support.cli import cli
from tests.support.internal_words import ARTICLE_LABEL

COMMANDS = ("worked-example", "cost", "simulate", "sweep", "capacity", "validate", "reproduce",
            "export", "exactness")
# small, fast runs of every command that prints a table
RUNS = [
    ("worked-example",),
    ("worked-example", "--decodes", "7", "--prompt", "1001", "--budgets", "1100,32"),
    ("cost", "--mode", "calibrated", "--gpu", "a100-80gb", "--model", "llama-2-7b", "--decodes",
     "32", "--context", "512", "--chunk", "256"),
    ("cost", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--decodes", "1600", "--context",
     "2000", "--chunk", "1024", "--tp", "4"),
    ("simulate",),
    ("simulate", "--scenario", "burst", "--burst", "3", "--policy", "orca", "--budget", "600"),
    ("simulate", "--requests", "120", "--qps", "20", "--lengths", "sharegpt", "--gpu",
     "a100-80gb", "--model", "llama-2-7b", "--policy", "vllm-v1", "--budget", "256"),
    ("sweep", "--budgets", "256,512,1024,2048", "--gpu", "a100-80gb", "--model", "llama-2-7b",
     "--requests", "40", "--qps", "2", "--lengths", "sharegpt", "--tbt-slo", "0.05"),
    ("capacity", "--gpu", "a100-80gb", "--model", "mistral-7b", "--tbt-slo", "0.1", "--requests",
     "30", "--lengths", "sharegpt", "--max-runs", "3"),
    ("validate",),
    ("reproduce",),
    ("reproduce", "--rerun", "chunking-overhead"),
    ("exactness", "--prompt", "2000", "--chunk", "300", "--search-s", "0.1"),
]


def subparsers():
    parser = build_parser()
    return parser, parser._subparsers._group_actions[0].choices


@pytest.fixture(scope="module")
def outputs():
    """Each run's table output (module-scoped: the runs are the slow part)."""
    texts = {}
    for argv in RUNS:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(list(argv)) == 0, argv
        texts[argv] = buffer.getvalue()
    return texts


# --- help ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", COMMANDS)
def test_every_subcommand_has_a_paragraph_and_every_flag_its_default(name):
    _, subs = subparsers()
    parser = subs[name]
    description = " ".join((parser.description or "").split())
    assert len(description) > 200 and description.endswith("."), name
    text = parser.format_help()
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        rendered = parser.formatter_class(parser.prog)._get_help_string(action) or ""
        assert rendered.strip(), f"{name} {action.option_strings[0]} has no help"
        switch = action.nargs == 0
        assert switch or action.required or "default" in rendered, \
            f"{name} {action.option_strings[0]}: no default in {rendered!r}"
        if getattr(action.type, "__name__", "") == "number" and action.dest != "seed":
            unit = re.search(r"\(([^;()]+); default", rendered)
            assert unit and unit.group(1).strip(), f"{name} {action.option_strings[0]}: no unit"
    assert ARTICLE_LABEL[:-1] not in text


def test_the_top_level_help_lists_the_commands():
    parser, _ = subparsers()
    text = parser.format_help()
    assert all(name in text for name in COMMANDS) and "--wide" in text


@pytest.mark.parametrize("argv, words", [
    ((), "give a command: worked-example, cost, simulate, sweep, capacity, validate, reproduce, "
         "export"),
    (("capacity",), "give one of --tbt-slo SECONDS or --slo PRESET"),
    (("simulate", "--scenario", "poisson"), "needs --requests N and --qps Q"),
])
def test_a_bare_command_says_which_flags_it_needs(argv, words, capsys):
    code, _, err = cli(*argv, capsys=capsys)
    assert code == 2 and words in err and err.count("\n") == 1


# --- tables -------------------------------------------------------------------------------------
def test_tables_fit_120_columns_and_wide_does_not_wrap(outputs, capsys):
    for argv, text in outputs.items():
        widest = max(len(line) for line in text.splitlines())
        assert widest <= 120, (argv, widest)
    _, wide, _ = cli("worked-example", "--wide", capsys=capsys)
    assert max(len(line) for line in wide.splitlines()) > 120
    assert "max((decodes + chunk) × FLOPs per token / peak, weight read)" in wide


def test_every_table_column_has_a_header(outputs):
    tables = 0
    for argv, text in outputs.items():
        lines = text.splitlines()
        for n, line in enumerate(lines):
            if n and re.fullmatch(r"-+( {2}-+)+", line):
                tables += 1
                for dashes in re.finditer(r"-+", line):
                    name = lines[n - 1][dashes.start():dashes.end()].strip()
                    assert name, f"{argv}: a column without a header in {lines[n - 1]!r}"
    assert tables >= len(RUNS)


def test_counts_have_thousands_separators(outputs):
    bare = re.compile(r"(?<![\w.,+\-/#])\d{4,}(?![\w.,])")
    for argv, text in outputs.items():
        if argv[0] == "validate":   # its published checks quote the papers' own wording
            text = text.split("published figures")[0]
        assert not bare.findall(text), (argv, bare.findall(text)[:5])


def test_the_source_articles_are_named_never_seed_numbers(outputs, capsys):
    for argv, text in outputs.items():
        assert not re.search(r"seed 0\d\d", text), argv
    assert "the source article (\"Chunked Prefill and Prefill-Decode Interference in LLM " \
           "Serving\"" in outputs[("worked-example",)].replace("\n", " ")


def test_orca_lanes_say_the_budget_does_not_apply(outputs):
    text = outputs[("simulate", "--scenario", "burst", "--burst", "3", "--policy", "orca",
                    "--budget", "600")]
    assert "Orca has no token budget" in text and "on a burst" in text


# --- the worked example's whole-prompt budget ----------------------------------------------------
def test_a_budget_with_room_for_the_whole_prompt_prices_decodes_plus_prompt(capsys):
    """--decodes 7 --prompt 1001 --budgets 1100: the one iteration holds 7 + 1,001 = 1,008
    tokens, not the budget's 1,100; TTFT is that iteration, and nothing is split."""
    per_token = 16e9 / 400e12
    b = worked_example(decodes=7, prompt=1001, budgets=(1100,)).to_json()["budgets"][0]
    assert b["chunk"] == 1093 and b["iterations"] == 1
    assert b["iteration_s"] == pytest.approx(1008 * per_token)
    assert b["ttft_s"] == b["iteration_s"]
    assert b["stall_reduction"] == pytest.approx(1001 / 1008)
    code, out, _ = cli("worked-example", "--decodes", "7", "--prompt", "1001", "--budgets", "1100",
                       "--wide", capsys=capsys)
    rows = {line.split("  ")[0]: line for line in out.splitlines()}
    assert "max(1,008 × 16 GFLOP" in rows["budget 1,100: one iteration (whole prompt fits)"]
    assert rows["budget 1,100: TTFT"].split()[-2:] == ["40.32", "ms"]
    assert "40.32 ms" in rows["budget 1,100: TTFT"].split("  ", 1)[1]   # the substitution agrees
    assert "nothing is split" in rows["budget 1,100: iteration, unchunked / chunked"]


def test_a_budget_below_the_prompt_still_prices_the_full_budget():
    b = worked_example(decodes=64, prompt=8192, budgets=(576,)).to_json()["budgets"][0]
    assert b["iteration_s"] == pytest.approx(576 * 16e9 / 400e12)


def test_wide_is_refused_where_it_would_change_nothing(capsys):
    code, _, err = cli("worked-example", "--json", "--wide", capsys=capsys)
    assert code == 2 and "--wide widens tables, and --json prints none" in err
    code, _, err = cli("export", "--out", "x.png", "--wide", capsys=capsys)
    assert code == 2 and "--wide" in err
