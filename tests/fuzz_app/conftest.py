"""The link fuzz suite's record: every case's page, outcome, time and peak memory, printed at the
end of the session (the slowest and the largest cases, and the worst case per page). `make
fuzz-app` runs FUZZ_APP_CASES links (504: 56 a page) and every key with every hostile payload;
`make test` runs a slice of 3 links a page and one case per payload; and the link-key families
(test_link_keys.py), FUZZ_APP_CASES // 10 cases each (`make test`: 3)."""

import os

import pytest

from tests.fuzz_app.links import PAGE_KEYS, run_case
from ui.shell.work import PAGE_BYTES, PAGE_SECONDS

CASES_PER_PAGE = max(1, int(os.environ.get("FUZZ_APP_CASES", "27")) // len(PAGE_KEYS))
RECORD: list = []
HOSTILE: list = []   # (payload's name, Case) of test_hostile_values.py
FAMILIES: list = []  # (family's name, Case) of test_link_keys.py


WARM_UP: list = []   # the first page run of the process: imports Streamlit, Altair, vl-convert


@pytest.fixture(scope="session")
def record():
    WARM_UP.append(run_case("pages/learn/home.py", {}))
    return RECORD


def pytest_terminal_summary(terminalreporter):
    write = terminalreporter.write_line
    if HOSTILE:
        _hostile_summary(write)
    if FAMILIES:
        _family_summary(write)
    if not RECORD:
        return
    outcomes = {}
    for case in RECORD:
        outcomes[case.outcome] = outcomes.get(case.outcome, 0) + 1
    write(f"\nlink fuzzing: {len(RECORD)} cases: "
          + ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
          + "".join(f" (before them, the process's first page run: {c.seconds:.2f} s, "
                    f"+{c.peak_mib:.0f} MiB)" for c in WARM_UP))
    write(f"worst case per page (limits: {PAGE_SECONDS} s, {PAGE_BYTES / 2**20:,.0f} MiB added):")
    for page in sorted({c.page for c in RECORD}):
        cases = [c for c in RECORD if c.page == page]
        slow = max(cases, key=lambda c: c.seconds)
        big = max(cases, key=lambda c: c.peak_mib)
        write(f"  {page:32} {len(cases):4} cases  slowest {slow.seconds:6.2f} s  "
              f"largest +{big.peak_mib:6.0f} MiB")
    write(f"the process's resident set at its highest: "
          f"{max(c.resident_mib for c in RECORD):,.0f} MiB")
    for title, key in (("slowest", lambda c: c.seconds), ("largest", lambda c: c.peak_mib)):
        write(f"the five {title} cases:")
        for case in sorted(RECORD, key=key, reverse=True)[:5]:
            write(f"  {case.seconds:6.2f} s  +{case.peak_mib:5.0f} MiB  {case.outcome:8} "
                  f"{case.page} {case.query}")


def _hostile_summary(write) -> None:
    cases = [case for _, case in HOSTILE]
    write(f"\nhostile link values: {len(cases)} cases over {len({tuple(c.query) for c in cases})} keys "
          f"and {len({name for name, _ in HOSTILE})} payloads: " + _verdicts(cases))
    for name in dict.fromkeys(name for name, _ in HOSTILE):
        mine = [case for payload, case in HOSTILE if payload == name]
        slow = max(mine, key=lambda c: c.seconds)
        write(f"  {name:10} {len(mine):4} cases  {_verdicts(mine)}  slowest {slow.seconds:5.2f} s "
              f"({next(iter(slow.query))} on {slow.page})")
    for case in cases:
        if not case.clean:
            write(f"  FAILED {case.outcome}: {case.page} {list(case.query)} {case.detail}")


def _family_summary(write) -> None:
    write(f"\nlink keys and joined values: {len(FAMILIES)} cases")
    for name in dict.fromkeys(name for name, _ in FAMILIES):
        mine = [case for family, case in FAMILIES if family == name]
        slow = max(mine, key=lambda c: c.seconds)
        write(f"  {name:12} {len(mine):4} cases  {_verdicts(mine)}  slowest {slow.seconds:5.2f} s "
              f"({slow.query} on {slow.page})"[:200])
    for name, case in FAMILIES:
        if not case.clean:
            write(f"  FAILED {name} {case.outcome}: {case.page} {case.query} {case.detail}")


def _verdicts(cases) -> str:
    outcomes: dict[str, int] = {}
    for case in cases:
        outcomes[case.outcome] = outcomes.get(case.outcome, 0) + 1
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
