"""Link fuzzing: every page opened with random query strings (valid,
out-of-range, unreadable and repeated values) ends in a clean run or a clean refusal (a note or
an error box), never a traceback, a hang or nonsense (nan, inf, None) on screen. Time and peak
memory of every case are recorded and printed (conftest.py); they are not asserted here
(benchmarks and the printed record carry the performance figures)."""

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz_app.conftest import CASES_PER_PAGE
from tests.fuzz_app.links import PAGE_KEYS, links, run_case


@pytest.mark.parametrize("page", list(PAGE_KEYS))
def test_any_link_ends_in_a_clean_run_or_refusal(page, record):
    @settings(max_examples=CASES_PER_PAGE, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(query=links(page))
    def case(query):
        outcome = run_case(page, query)
        record.append(outcome)
        assert outcome.clean, (outcome.outcome, outcome.query, outcome.detail)

    case()


def test_every_page_is_fuzzed():
    from tests.support.apptest import ALL_PAGES
    assert sorted(PAGE_KEYS) == ALL_PAGES
