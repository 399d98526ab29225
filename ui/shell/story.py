"""The learner's path as data: the pages in the order a beginner should read them, and the chapters
of the story Home tells, each linking to the page that goes deeper. Pure Python (no Streamlit).

`PAGES` is the one list of the app's pages: app.py builds the sidebar from it and ends every page
with a link to the next one; the browser tests visit each page it marks `visited` (and check its
heading), the first-render benchmark times them (harness/pages.py), and the link fuzzer draws
each page's links from its own controls. A page added here is in all of them. Home renders
`CHAPTERS` with numbers from the simulation (`ui.learn.words.story_fields`). A guided tour can reuse
both: a chapter is an id, a title, a Markdown text with {fields}, and its pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from sim.studies.worked_example import SARATHI_SERVE, SARATHI_SERVE_URL

from . import controls
from .glossary import first, term

# The sidebar's sections, each the folder its pages live in (pages/<folder>/), in the sidebar's
# order: a page's section is its folder, so the two cannot drift apart.
SECTIONS = {"learn": "Learn", "under_load": "Under load", "across_gpus": "Across GPUs",
            "advanced": "Advanced", "teach": "Teach"}


@dataclass(frozen=True)
class Page:
    path: str
    title: str
    icon: str
    what: str          # what the page shows, for the "Next: ..." link that leads to it
    # the link keys of the controls it draws besides the sidebar's (any page reads any key)
    controls: tuple[str, ...] = ()
    heading: str = ""  # its first heading, where it is not the title
    # whether the browser tests' visit at the defaults and the first-render benchmark open it
    visited: bool = True

    @property
    def section(self) -> str:
        """The sidebar section the page is listed under: its folder's."""
        return SECTIONS[PurePosixPath(self.path).parent.name]

    @property
    def shown_heading(self) -> str:
        return self.heading or self.title


TRAFFIC_KEYS = tuple(c.key for c in controls.TRAFFIC)   # the traffic pages' workload box
PAGES: tuple[Page, ...] = (
    Page("pages/learn/home.py", "Home", ":material/home:", "the story in seven short chapters",
         heading="Chunked Prefill Lab"),
    Page("pages/learn/side_by_side.py", "Side by side", ":material/view_agenda:",
         "play both schedules and read what the freeze costs each stream",
         controls=("window", "compare")),
    Page("pages/learn/worked_example.py", "Worked example", ":material/calculate:",
         "the arithmetic, one step at a time", controls=("budget2",)),
    Page("pages/learn/roofline.py", "Roofline", ":material/show_chart:",
         "why decode is memory-bound, and which budget meets a target",
         controls=("tpot", "compare")),
    Page("pages/learn/exactness.py", "Chunking is exact", ":material/rule:",
         "does a chunked prefill compute what one pass does?",
         controls=("exprompt", "exchunk", "exseed")),
    Page("pages/under_load/budget_tradeoff.py", "Budget trade-off", ":material/tune:",
         "turn the budget dial on a whole workload",
         controls=(*TRAFFIC_KEYS, "bmin", "bmax", "tpot", "ttft")),
    Page("pages/under_load/traffic.py", "Traffic", ":material/traffic:",
         "serve bursts, random arrivals or your own trace with several schedulers",
         controls=(*TRAFFIC_KEYS, "policies")),
    Page("pages/under_load/long_short.py", "Long and short requests", ":material/stacked_bar_chart:",
         "short requests behind long prompts, and the engines' knobs for it",
         controls=("mix", "requests", "qps", "seed", "vary", "threshold", "budget2")),
    Page("pages/under_load/prefix_caching.py", "Prefix caching", ":material/cached:",
         "requests that share a prompt's start, served with and without the cache",
         controls=("prefix", "pshare", "order", "arrivals", "requests", "qps", "plen", "olen",
                   "seed")),
    Page("pages/across_gpus/disaggregation.py", "Disaggregation", ":material/call_split:",
         "prefill on some GPUs, decode on others, and which serves more",
         controls=("prefillgpu", "decodegpu", "ptp", "dtp", "kvlink", "layerwise", "requests",
                   "qps", "olen", "seed", "ttftslo", "tpotslo")),
    Page("pages/across_gpus/pipeline.py", "Pipeline", ":material/view_week:",
         "the layers split over stages, and the bubbles uneven micro-batches leave",
         controls=("pp", "pplink", "chunking")),
    Page("pages/advanced/capacity.py", "Capacity", ":material/speed:",
         "the highest request rate each scheduler sustains within its targets",
         controls=(*TRAFFIC_KEYS, "slo", "tbtslo", "delay")),
    Page("pages/advanced/memory.py", "Memory", ":material/memory:",
         "how GPU memory bounds what runs at once",
         controls=(*TRAFFIC_KEYS, "together", "kvpolicies", "prefills", "eos", "pp")),
    Page("pages/advanced/fidelity.py", "How close is this to a real GPU?", ":material/fact_check:",
         "the cost model against measured GPU timings", controls=("why",)),
    # the tour's steps have browser tests of their own (tests/browser/test_tour_browser.py)
    Page("pages/teach/tour.py", "Guided tour", ":material/co_present:",
         "the story as steps to present, with a guess and an exercise",
         controls=("tour", "window"), visited=False),
)
BY_PATH = {p.path: p for p in PAGES}


def url_path(page: Page) -> str:
    """Where a link opens the page: its file's name ('' for Home, the app's root)."""
    return "" if page is PAGES[0] else PurePosixPath(page.path).stem


def next_page(path: str) -> Page:
    """The page after `path` on the path; after the last one, Home again."""
    paths = [p.path for p in PAGES]
    return PAGES[(paths.index(path) + 1) % len(PAGES)]


@dataclass(frozen=True)
class Chapter:
    id: str
    title: str                  # its name where no run is at hand (the tour's label, the handout)
    text: str                   # Markdown (with glossary hovers); {fields}: ui.learn.words.story_fields
    pages: tuple[str, ...]      # where to go deeper, the first the main one
    highlight: str = ""         # what to look at in the player while reading it
    heading: str = ""           # the title as Home shows it, {fields} chosen by the run's regime
                                # (empty: the title, a claim true in every scenario)

    def heading_for(self, fields: dict[str, str]) -> str:
        """The chapter's title for this run: `heading` filled from `fields`, else `title`."""
        return self.heading.format(**fields) if self.heading else self.title


CHAPTERS: tuple[Chapter, ...] = (
    Chapter(
        "two-kinds", "1. Two kinds of work in one pass",
        f"A server runs its model in {term('iteration', 'iterations')}: one forward pass over the "
        "requests its scheduler picks for it. Two kinds of work can share a pass. "
        f"**{term('prefill', 'Prefill')}** reads a new prompt, all {{prompt}} tokens at once"
        "{prefill_regime}. A running request that emits tokens, one per iteration, is a "
        f"**{term('stream')}**. **{term('decode', 'Decode')}** adds the next token to each "
        "stream{decode_regime}. {pass_times}",
        ("pages/learn/roofline.py",), "the bars: blue is decode work, orange is prefill"),
    Chapter(
        "freeze", "2. One long prompt in one pass",
        "A stream gets its next token only when an iteration that holds it ends. {stall_story} "
        "{freeze_story}",
        ("pages/learn/side_by_side.py",), "the top lane's rows", "2. {freeze_title}"),
    Chapter(
        "split", "3. Split it: a budget B, a chunk C = B − D",
        f"Chunked prefill caps every iteration at a {term('budget')} of B tokens. The D streams' "
        f"decode tokens go in first, then a {term('chunk')} of the prompt fills the rest: "
        "C = B − D. "
        "{fix_story}",
        ("pages/learn/worked_example.py",), "the bottom lane's bars: a chunk beside the decodes",
        "3. {split_title}"),
    Chapter(
        "trade", "4. What it costs, what it buys",
        "{trade_story}",
        ("pages/learn/side_by_side.py",), "the counters over each lane's rows", "4. {trade_title}"),
    Chapter(
        "dial", "5. The budget is a dial",
        "A larger budget carries more of the prompt per iteration, so the prompt needs fewer "
        "iterations{dial_story}. The Sarathi-Serve recipe "
        f"([{SARATHI_SERVE}]({SARATHI_SERVE_URL})): take "
        "the largest budget whose iteration still meets the streams' target for the gap between "
        f"two tokens, a tail target ({first('tbt')}, p99), not their mean "
        f"({first('tpot')}): a few long chunk iterations among many short steps barely move "
        f"a mean. Under load, a {first('slo')} adds a target for the first token too, and the "
        "dial must meet both.",
        ("pages/under_load/budget_tradeoff.py", "pages/learn/roofline.py")),
    Chapter(
        "traffic", "6. Under real traffic",
        "One prompt arriving beside running streams is the simplest case. Real servers see requests "
        "arrive all the time: bursts of long prompts, random arrivals, recorded traces. The "
        "Traffic page serves a whole workload with several schedulers side by side; the Long and "
        "short requests page mixes long prompts with short ones, shows how long the short ones "
        "wait behind them, and what the engines' knobs for it change; the Prefix caching page "
        "serves requests that share a system prompt with and without the cache; the Capacity "
        "page finds the highest request rate each sustains within its targets; the Memory page "
        f"shows how the {term('kv')} cache bounds how many requests run at once.",
        ("pages/under_load/traffic.py", "pages/under_load/long_short.py",
         "pages/under_load/prefix_caching.py", "pages/advanced/capacity.py",
         "pages/advanced/memory.py")),
    Chapter(
        "across-gpus", "7. Across GPUs",
        "Chunked prefill shares each GPU between prompts and decodes. A server with several GPUs "
        f"can instead give each kind of work GPUs of its own: **{term('disaggregation')}**. A "
        f"{term('prefill_pool')} computes the prompts, a {term('decode_pool')} emits the "
        f"tokens, and each prompt's {term('kv')} cache crosses a link between them (a "
        f"{term('kv_transfer')}: prompt tokens × KV bytes per token / bandwidth + latency). No "
        "decode waits for a prompt any more, but each pool can run out while the other idles. "
        "The Disaggregation page serves one workload both ways on the same GPUs, draws every "
        f"hand-off, and compares their {term('goodput')}: the highest rate at which 90% of "
        "requests meet both a first-token and a per-token target. A model too large for one "
        f"GPU can also be split by its layers, {term('pipeline_parallelism')}: each "
        f"{term('micro_batch')} flows through the {term('stage', 'stages')}, and one carrying "
        f"a long prompt leaves the next stages idle (a {term('bubble')}); the Pipeline page "
        "shows how chunks even the micro-batches out.",
        ("pages/across_gpus/disaggregation.py", "pages/across_gpus/pipeline.py")),
)
