"""The load test's attendees (harness/protocol.py, which benchmarks/load_test.py drives)
speak Streamlit's protocol for real: against `streamlit run serve.py`, each open runs the shared
link's page (its metric cards come back) and each change reruns it with the new budget (the cards
change). The figures themselves are printed by `make loadtest`, never asserted."""

from harness.protocol import LINK, crowd, run_apart
from harness.server import streamlit_server
from tests.support.apptest import ROOT


def test_the_attendees_open_the_link_and_change_the_budget(tmp_path):
    with streamlit_server(ROOT / "serve.py", tmp_path / "server.log") as url:
        port = int(url.rsplit(":", 1)[1])
        results = run_apart(crowd(port, LINK, sessions=3, changers=2, spread_s=0.5, seed=0))
    assert len(results) == 3
    for result in results:
        assert result["open_s"] > 0
        cards = len(result["shown"]) // 2                    # Side by side: a row of cards a lane
        assert len(result["shown"]) == 2 * cards and cards >= 4
        assert result["shown"] == results[0]["shown"]        # one link, one view
    changed = [r for r in results if r["change_s"] is not None]
    assert len(changed) == 2
    for result in changed:
        assert result["changed"][:cards] == result["shown"][:cards]  # the unchunked lane: no budget
        assert result["changed"][cards:] != result["shown"][cards:]  # the chunked lane: a new budget
