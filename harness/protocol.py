"""Attendees of a workshop at the protocol level: small websocket clients that speak Streamlit's
own protocol as the browser does (benchmarks/load_test.py drives a crowd of them; a test checks
that they work). Each connects to /_stcore/stream, sends a `rerun_script` BackMsg with the page and
the link's query string, and reads ForwardMsgs until `script_finished`; a change is a
`rerun_script` with the budget widget's new value (its id read from the page's own number_input).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

LINK = "side_by_side?prompt=4096&budget=1024&gpu=h100-sxm&model=llama-3.1-8b"
BUDGET_LABEL = "Token budget per iteration"
TIMEOUT_S = 120      # any one run


def _rerun(page: str, query: str, url: str, widget: tuple[str, int] | None = None) -> bytes:
    """A `rerun_script` BackMsg, as the browser sends it (optionally with one int widget)."""
    message = BackMsg()
    message.rerun_script.page_name = page
    message.rerun_script.query_string = query
    message.rerun_script.context_info.url = url
    message.rerun_script.context_info.color_scheme = "light"
    if widget:
        state = message.rerun_script.widget_states.widgets.add()
        state.id, state.int_value = widget
    return message.SerializeToString()


async def _until_finished(ws, widgets: dict[str, str]) -> list[str]:
    """Read ForwardMsgs until the script run has finished: the metric cards' values shown, in
    order; note the number inputs' ids."""
    metrics = []
    while True:
        message = ForwardMsg()
        message.ParseFromString(await ws.recv())
        kind = message.WhichOneof("type")
        if kind == "delta" and message.delta.WhichOneof("type") == "new_element":
            element = message.delta.new_element
            if element.WhichOneof("type") == "number_input":
                widgets[element.number_input.label] = element.number_input.id
            elif element.WhichOneof("type") == "metric":
                metrics.append(element.metric.body)
        elif kind == "script_finished":
            return metrics


async def attendee(port: int, link: str, start_after_s: float, new_budget: int | None) -> dict:
    """Open the link after `start_after_s`; then, for a changer, set the budget and rerun. Its
    times, and the metric cards' values it was shown (`shown`, and after the change `changed`)."""
    await asyncio.sleep(start_after_s)
    page, _, query = link.partition("?")
    url = f"http://127.0.0.1:{port}/{link}"
    widgets: dict[str, str] = {}
    started = time.perf_counter()
    async with websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream",
                                  subprotocols=["streamlit"], max_size=None) as ws:
        await ws.send(_rerun(page, query, url))
        shown = await asyncio.wait_for(_until_finished(ws, widgets), TIMEOUT_S)
        result = {"open_s": time.perf_counter() - started, "change_s": None, "shown": shown}
        if new_budget is not None:
            changed = time.perf_counter()
            await ws.send(_rerun(page, query, url, (widgets[BUDGET_LABEL], new_budget)))
            result["changed"] = await asyncio.wait_for(_until_finished(ws, widgets), TIMEOUT_S)
            result["change_s"] = time.perf_counter() - changed
    return result


async def crowd(port: int, link: str, sessions: int, changers: int, spread_s: float,
                seed: int) -> list[dict]:
    rng = random.Random(seed)
    changing = set(rng.sample(range(sessions), min(changers, sessions)))
    return await asyncio.gather(*(
        attendee(port, link, rng.uniform(0, spread_s), 1024 + 64 * (i + 1) if i in changing else None)
        for i in range(sessions)))


def run_apart(coroutine):
    """Run a coroutine to its end on a thread of its own: in the test suite Playwright's sync API
    keeps an event loop running on the main thread, where asyncio.run refuses to start."""
    outcome = {}

    def run() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as e:   # handed back to the caller's thread below
            outcome["error"] = e

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
