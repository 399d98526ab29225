"""The app's controls as plain data: their URL keys, defaults and ranges, and the checks a value
arriving in a link gets. Pure Python (no Streamlit), so it is unit-tested on its own.

URL keys are short and stable because links in slides must keep working: a key is read in any case
(`Budget`) and under its earlier name, and a key no control reads gets a note naming the nearest
one. Defaults are the worked example of the lab's source article
(sim.studies.worked_example.SOURCE_ARTICLE). A value in a link that is out of range or unreadable
is replaced by the nearest valid value (or the default when there is no nearest) and a note says
so: never an exception, never a silent clamp. The value used is written back into the link in its
plain spelling (`url_text`) under the key's own spelling, so the address bar always reproduces the
view: `decodes=99999` becomes `decodes=4096`, a hand-typed `presenter=yes` becomes `presenter=true`,
`BUDGET=1024` becomes `budget=1024`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from charts.views import FOCUS_MARGIN, WINDOW_NAMES, WINDOWS
from sim.cost.iteration import MODE_NAMES
from sim.knobs import DISAGGREGATION_KNOBS, EXACTNESS_KNOBS, KNOBS, OLD_KEYS, PIPELINE_KNOBS, Knob
from sim.presets.hardware import GPUS
from sim.presets.links import FREE_LINK, LINKS
from sim.presets.models import MODELS
from sim.serving.chunking import CHUNKING_NAMES
from sim.serving.policies import CHUNKED, POLICIES, UNCHUNKED, in_words, names_in_prose
from sim.serving.trace_files import TRACE_COLUMNS_WORDS
from sim.serving.workloads import LENGTH_NAMES, TEXTBOOK
from sim.studies.capacity import DELAY_SLO_S, SLO_PRESETS

from .literal import literal

CUSTOM = "custom"
# Not a control: the path of a page that does not exist, which ui/shell/server.py puts in the link of
# Home when it redirects an unknown path there, for Home's note to name.
NO_PAGE = "no_page"
# Every spelling of a boolean a person types into a link (case does not matter).
TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


@dataclass(frozen=True)
class Control:
    """One widget: its URL key, label, default and allowed values."""
    key: str
    label: str
    default: object
    kind: str                      # "int", "float", "choice", "bool" or "multi" (several choices)
    low: float = -math.inf
    high: float = math.inf
    options: tuple[str, ...] = ()
    step: float = 1
    help: str = ""
    # a choice's options as a reader is shown them, (key, name) each: the link keeps the key
    names: tuple[tuple[str, str], ...] = ()

    def name(self, option: str) -> str:
        """An option as the picker shows it: its name ("H100 SXM" for `h100-sxm`)."""
        return dict(self.names).get(option, option)

    def parse(self, raw: str | list[str]) -> tuple[object, str | None]:
        """(value, note): the value to use for `raw` from a URL (a list: a key repeated, as a
        multi control's choices are), and a note when it is not `raw`."""
        if self.kind == "multi":
            return self._parse_many(raw if isinstance(raw, list) else [raw])
        raw = raw[-1] if isinstance(raw, list) else raw
        where = f"{in_link(self.key, raw)} in the link"
        if self.kind == "choice":
            if raw in self.options:
                return raw, None
            return self.default, (f"{where} is not one of {', '.join(self.options)}; "
                                  f"using the default `{self.default}`")
        if self.kind == "bool":
            word = raw.strip().lower()
            if word in TRUE_WORDS or word in FALSE_WORDS:
                return word in TRUE_WORDS, None
            return self.default, (f"{where} is not one of {'/'.join(TRUE_WORDS)} or "
                                  f"{'/'.join(FALSE_WORDS)}; using `{self.url_text(self.default)}`")
        number = _number(raw)
        if not math.isfinite(number):
            return self.default, f"{where} is not a number; using the default {self.show(self.default)}"
        if number < self.low:
            return self.clean(self.low), (f"{where} is below the minimum {self.show(self.low)}; "
                                          f"using {self.show(self.low)}")
        if number > self.high:
            return self.clean(self.high), (f"{where} is above the maximum {self.show(self.high)}; "
                                           f"using {self.show(self.high)}")
        value = self.clean(number)
        if self.kind == "int" and value != number:
            return value, f"{where} is not a whole number; using {self.show(value)}"
        return value, None

    def _parse_many(self, raws: list[str]) -> tuple[list[str], str | None]:
        """Known choices are kept (in link order, once each); unknown ones are left out with a
        note. An empty value (`?policies=`) is an empty selection."""
        picked = list(dict.fromkeys(r for r in raws if r in self.options))
        unknown = [r for r in raws if r and r not in self.options]
        if not unknown:
            return picked, None
        return picked, (f"{', '.join(in_link(self.key, r) for r in unknown)} in the link: not one "
                        f"of {', '.join(self.options)}; left out")

    def clean(self, number: float):
        return int(round(number)) if self.kind == "int" else float(number)

    def url_text(self, value) -> str | list[str]:
        """`value` as the link spells it, the way Streamlit's bound widget writes it (5.0 as "5",
        True as "true"); a multi control's choices as the key repeated, none as one empty value
        (`?policies=`, which Streamlit reads back as an empty selection)."""
        if self.kind == "multi":
            return list(value) or [""]
        if self.kind == "bool":
            return "true" if value else "false"
        if self.kind in ("int", "float"):
            number = float(value)
            return str(int(number)) if number.is_integer() else str(number)
        return str(value)

    def show(self, value) -> str:
        return f"{value:,.0f}" if self.kind == "int" else f"{value:g}"


def in_link(key: str, raw: str) -> str:
    """A value from a link as a note quotes it (Markdown): its key, and the value exactly as the
    link spells it, as text (ui/shell/literal.py), between quotes that show where it starts and ends."""
    return f"`{key}`=“{literal(raw)}”"


def _int(key, label, default, low, high, help="", step=1):
    return Control(key, label, default, "int", low, high, step=step, help=help)


def _float(key, label, default, low, high, help="", step=1.0):
    return Control(key, label, float(default), "float", low, high, step=step, help=help)


def _choice(key, label, default, names: dict[str, str], help=""):
    """A choice among the keys of `names`, each shown by its name."""
    return Control(key, label, default, "choice", options=tuple(names), help=help,
                   names=tuple(names.items()))


def _policy_names(names) -> dict[str, str]:
    return {name: POLICIES[name].label for name in names}


# The traffic mixes (sim/serving/workloads.py MIXES) as a picker names them.
MIX_NAMES = {"chat+documents": "Chat + documents (5% long prompts)",
             "chat+one-long": "Chat + one 100,000-token prompt"}
# Each knob choice's options by name, from where each is declared; "custom" opens the fields.
KNOB_NAMES = {
    "gpu": {g.id: g.name for g in GPUS.values()} | {CUSTOM: "Custom GPU: your own figures"},
    "model": {m.id: m.name for m in MODELS.values()} | {CUSTOM: "Custom model: your own layout"},
    "mode": MODE_NAMES,
    "lengths": LENGTH_NAMES,
    "mix": MIX_NAMES,
    "chunking": CHUNKING_NAMES,
    "link": {link.id: link.name for link in (*LINKS.values(), FREE_LINK)},
    "order": {"fcfs": "FCFS: first come, first served", "lpm": "LPM: longest prefix match first"},
}


def _knob(name: str, *more_options: str, table: Mapping[str, Knob] = KNOBS) -> Control:
    """The control of a knob of `table` (sim/knobs.py): its link key, label, help, and the
    app's default and range. A choice offers the app's default first, then `more_options`, each
    by its name."""
    knob = table[name]
    default, low, high = knob.on_app()
    if knob.choices:
        options = (default, *(c for c in knob.choices if c != default), *more_options)
        return _choice(knob.key, knob.label, default, {o: KNOB_NAMES[name][o] for o in options},
                       help=knob.help)
    if knob.kind == "switch":
        return Control(knob.key, knob.label, bool(default), "bool", help=knob.help)
    make = _int if knob.whole else _float
    return make(knob.key, knob.label, default, low, high, help=knob.help, step=knob.step)


# The scenario: the source article's worked example.
SCENARIO = tuple(_knob(name) for name in ("prompt", "decodes", "context", "budget"))
HARDWARE = (_knob("gpu", CUSTOM), _knob("model", CUSTOM), _knob("mode"), _knob("tp"))
POLICY = (
    _choice("unchunked", "Unchunked baseline", "vllm-v0", _policy_names(UNCHUNKED),
            help=in_words(UNCHUNKED)),
    _choice("chunked", "Chunked policy", "sarathi", _policy_names(CHUNKED), help=in_words(CHUNKED)),
)
CUSTOM_GPU = (
    _float("peak", "Peak dense TFLOP/s", 400, 1, 100_000, step=10.0),
    _float("bw", "Memory bandwidth (TB/s)", 3.0, 0.01, 1000, step=0.1),
    _float("mem", "Memory (GB)", 80, 1, 100_000, step=8.0),
    _float("link", "GPU-to-GPU link (GB/s, one way)", 0, 0, 100_000, step=50.0,
           help="What a ring all-reduce streams through per GPU, for tp > 1 (0: no link). NVLink 4 "
                "on H100 SXM: 450 GB/s each way (its datasheet's 900 GB/s counts both)."),
)
# Custom model fields default to Llama-3.1-8B's config.json (sim.presets.models.LLAMA3_8B_LAYOUT).
CUSTOM_MODEL = (
    _int("layers", "Layers", 32, 1, 1000),
    _int("hidden", "Hidden size", 4096, 64, 1_000_000, step=256),
    _int("heads", "Attention heads", 32, 1, 4096),
    _int("kvheads", "Key-value (KV) heads", 8, 1, 4096),
    _int("headdim", "Head dim", 128, 1, 4096),
    _int("ffn", "MLP intermediate size", 14336, 1, 10_000_000, step=256),
    _int("vocab", "Vocabulary", 128256, 1, 10_000_000, step=1000),
)
DISPLAY = (
    Control("presenter", "Presenter mode (large fonts)", False, "bool",
            help="For a projector: large type (24 px text, 18 px chart labels), the sidebar "
                 "closed, and the timeline with the key numbers fitted to the screen."),
    Control("contrast", "High-contrast colours", False, "bool",
            help="Black (or, dark, white) text and deeper colours in the page and every chart, "
                 "for a washed-out projector or a bright room."),
)
# Controls that live on one page only.
TPOT = _float("tpot", "TPOT target (ms)", 25, 0.01, 100_000, step=1.0,
              help="The inter-token latency the streams must keep; the Sarathi-Serve recipe picks the "
                   "largest budget whose iteration meets it.")
BUDGET2 = _int("budget2", "Second budget to compare (tokens)", TEXTBOOK.compared_budget, 1,
               KNOBS["budget"].on_app().high, step=64,
               help=f"The source article compares {TEXTBOOK.budget:,} with "
                    f"{TEXTBOOK.compared_budget:,}.")
COMPARE = Control("compare", "Show ideal and calibrated side by side", False, "bool",
                  help="Adds the other cost mode's numbers beside the chosen mode's: calibrated "
                       "beside simple or roofline, the ideal roofline beside calibrated.")
WHY = _choice("why", "Iteration to explain", "fused",
              {"decode": "Decode step alone", "chunk": "First chunk alone",
               "fused": "Decode step + first chunk", "prompt": "Whole prompt in one pass"},
              help="One of the scenario's iterations, as on the Roofline page: the streams' "
                   "decode step alone, the prompt's first chunk alone, the two in one iteration, "
                   "or the whole prompt in one pass.")
WINDOW = _choice("window", "Time axis", "prompt", {w: WINDOW_NAMES[w] for w in WINDOWS},
                 help=". ".join(f"{WINDOW_NAMES[w]}: {what}".replace("FOCUS_MARGIN",
                                                                     f"{FOCUS_MARGIN:g}")
                                for w, what in WINDOWS.items())
                 + ". The metrics always cover the whole run.")

# The traffic pages (Traffic, Budget trade-off, Capacity, Memory) share one workload.
TRAFFIC = (
    _choice("workload", "Workload", "burst",
            {"burst": "Burst of prompts", "poisson": "Poisson arrivals",
             "upload": "Uploaded trace (CSV)"},
            help="Burst of prompts: N prompts of the sidebar's prompt length arrive at once while "
                 "the sidebar's streams run (the source article's drain). Poisson arrivals: "
                 "requests at random times at a mean rate. Uploaded trace: a CSV file with "
                 f"{TRACE_COLUMNS_WORDS}."),
    *(_knob(name) for name in ("burst", "requests", "qps", "lengths", "prompt_tokens",
                               "output_tokens", "seed")),
)
PICK = Control("policies", "Policies", ("vllm-v0", "sarathi"), "multi", options=tuple(POLICIES),
               names=tuple(_policy_names(POLICIES).items()),
               help="Two or more, served the same workload at the sidebar's budget. "
                    + "; ".join(f"{p.label}: {p.summary}" for p in POLICIES.values()) + ".")
BUDGET_RANGE = (
    _int("bmin", "Smallest budget", 128, 1, KNOBS["budget"].high, step=64),
    _int("bmax", "Largest budget", 16384, 1, KNOBS["budget"].high, step=1024),
)
TTFT = _float("ttft", "TTFT target (s)", 3, 0.001, 100_000, step=0.5,
              help="Time to first token you must meet (a p50 line on the frontier). 3 s: the "
                   "default burst of ten 8,192-token prompts drains in about 3.7 s, so its median "
                   "prompt waits about 2 s at the worked example's budget.")
SLO = _choice("slo", "SLO preset", "mistral-7b-strict",
              {k: p.label for k, p in SLO_PRESETS.items()} | {CUSTOM: "Custom: your own, below"},
              help="Sarathi-Serve's P99 TBT SLOs: strict = 5x and relaxed = 25x a decode "
                   "iteration of batch 32 at 4k context. Custom: your own, below.")
TBT_SLO = _float("tbtslo", "P99 TBT SLO (ms)", 100, 0.01, 100_000, step=10.0)
DELAY_SLO = _float("delay", "Median scheduling delay SLO (s)", DELAY_SLO_S, 0.001, 100_000,
                   step=0.5, help="Sarathi-Serve: 2 s. Past capacity the queue grows without "
                                  "bound and the median delay catches it.")
def _kv_rules() -> str:
    """Which chunked engines reserve a prompt's KV at admission and which chunk by chunk, from
    their PolicySpecs."""
    whole, per_chunk = ([p.engine for p in POLICIES.values() if p.chunked
                         and p.reserve_whole_prompt == rule] for rule in (True, False))
    verb = "allocates" if len(per_chunk) == 1 else "allocate"
    return (f"{names_in_prose(whole)} reserve a prompt's KV at admission; "
            f"{names_in_prose(per_chunk)} {verb} it chunk by chunk.")


KV_PICK = Control("kvpolicies", "Policies", ("sarathi", "vllm-v1"), "multi",
                  options=tuple(POLICIES), names=tuple(_policy_names(POLICIES).items()),
                  help=_kv_rules())
PARTIALS = _knob("max_concurrent_prefills")
# The Long and short requests page: which engine knob it runs at two settings.
VARY = _choice("vary", "Knob to compare", "threshold",
               {"threshold": "vLLM V1: long-prefill threshold", "mixedchunk": "SGLang: mixed chunk",
                "budget": "vLLM V1: token budget"},
               help="The page serves the mix twice, at two settings of one knob: vLLM V1 without "
                    "and with a long-prefill threshold, SGLang without and with mixed chunk, or "
                    "vLLM V1 at the sidebar's budget and a second one.")
# The Prefix caching page: its requests' arrivals.
ARRIVALS = _choice("arrivals", "Arrivals", "poisson",
                   {"poisson": "Poisson arrivals", "burst": "A burst: all at once"},
                   help="Poisson arrivals: the requests at random times at the arrival rate. A "
                        "burst: every request at time 0 (the rate is not used), so a request may "
                        "be admitted before the shared prefix is computed, and miss it.")
TOGETHER = _int("together", "Prompts held at once", 20, 0, 100_000,
                help="The source article's example: 20 simultaneous 8,192-token prompts.")

# The guided tour (ui/teach/tour.py): one Markdown file per step in TOUR_FOLDER; the step a link opens
# is a control like any other, so `?tour=99` is corrected to the last step, with a note.
TOUR_FOLDER = Path(__file__).resolve().parents[2] / "tour" / "en"
STEP_FILES = "[0-9][0-9]-*.md"
TOUR = _int("tour", "Step", 1, 1, max(1, len(list(TOUR_FOLDER.glob(STEP_FILES)))),
            help="The guided tour's step: each step sets the controls, opens the timeline at the "
                 "moment it explains and points at it.")
# The Chunking is exact page: the tiny decoder's prompt, chunk and seed (sim/knobs.py).
EXACTNESS = tuple(_int(k.key, k.label, k.default, k.low, k.high, help=k.help, step=k.step)
                  for k in EXACTNESS_KNOBS.values() if k.key)

# The Disaggregation page: its two pools, the link a KV cache crosses (sim/knobs.py
# DISAGGREGATION_KNOBS; `gpu`: the GPU preset's own link, the command line's default) and
# goodput's two targets (DistServe's criterion, sim/studies/capacity.py GoodputSlo).
GPU_LINK = "gpu"
KNOB_NAMES["link"][GPU_LINK] = "The GPU's own GPU-to-GPU link"
DISAGGREGATION = (
    *(_knob(name, table=DISAGGREGATION_KNOBS)
      for name in ("prefill_gpus", "decode_gpus", "prefill_tp", "decode_tp")),
    _knob("link", GPU_LINK, table=DISAGGREGATION_KNOBS),
    _knob("layerwise_send", table=DISAGGREGATION_KNOBS),
)
# The Pipeline page: its stages and the link between them (sim/knobs.py PIPELINE_KNOBS; `gpu`:
# the GPU preset's own link, the command line's default).
KNOB_NAMES["pp_link"] = KNOB_NAMES["link"]
PIPELINE = (_knob("pp", table=PIPELINE_KNOBS), _knob("pp_link", GPU_LINK, table=PIPELINE_KNOBS))
TTFT_SLO = _float("ttftslo", "TTFT target (s)", 1, 0.001, 3600, step=0.25,
                  help="Each request's time-to-first-token target: goodput counts a request that "
                       "meets it and the TPOT target.")
TPOT_SLO = _float("tpotslo", "TPOT target (ms)", 25, 0.01, 100_000, step=1.0,
                  help="Each request's time-per-output-token target, its mean gap between two "
                       "tokens: goodput counts a request that meets it and the TTFT target.")

CONTROLS: dict[str, Control] = {c.key: c for c in (
    *SCENARIO, *HARDWARE, *POLICY, *CUSTOM_GPU, *CUSTOM_MODEL, *DISPLAY, TPOT, BUDGET2, COMPARE, WHY,
    WINDOW, *TRAFFIC, PICK, *BUDGET_RANGE, TTFT, SLO, TBT_SLO, DELAY_SLO, KV_PICK, PARTIALS,
    TOGETHER, TOUR, VARY, ARRIVALS, *EXACTNESS, *DISAGGREGATION, *PIPELINE, TTFT_SLO, TPOT_SLO)}
# A knob of the table (sim/knobs.py) that no group above places is a control too: the page that
# shows it draws it (`CONTROLS[key]`), and its value lives in the link like any other.
MORE_KNOBS = tuple(_knob(k.name) for k in KNOBS.values() if k.key and k.key not in CONTROLS)
CONTROLS |= {c.key: c for c in MORE_KNOBS}


def _number(raw: str) -> float:
    """The number a link's text spells (NaN when it spells none)."""
    try:
        return float(raw)
    except ValueError:
        return math.nan


# Every key a link may spell, in lower case, and the control key it means: each control's key
# and its earlier names (a link shared before a key was renamed), in any case.
KEY_SPELLINGS = {key.lower(): key for key in CONTROLS} | {old.lower(): new for old, new in OLD_KEYS.items()}


@dataclass(frozen=True)
class Link:
    """What a link's control values mean: `values`, every control key in the link with the value
    to use; `corrections`, those whose text in the link must change (out of range, unreadable, or
    spelled another way, as `presenter=1`); `notes`, one sentence per value that changed and per
    key the app does not read; `above_max`, the number controls clamped down to their maximum;
    `given`, each control key's text in the link (a multi control's: its list); `renamed`, the
    link's keys spelled otherwise than the app spells them (`Budget`, an earlier name) and read
    as the key each names; `dropped`, the link's keys to take out of it (a key's other spellings
    besides the one read, keys the app does not read)."""
    values: dict[str, object]
    corrections: dict[str, object]
    notes: dict[str, str]
    above_max: tuple[str, ...]
    given: dict[str, str | list[str]]
    renamed: dict[str, str]
    dropped: tuple[str, ...]


def read_link(params: Mapping[str, str | list[str]]) -> Link:
    """Read a link's query parameters (a key's value: a string, or the list of its repeated
    values). A key is read without regard to case, and under its earlier name; where the link
    spells one key several ways, the key as the app spells it wins, else the last. A key that
    is not a control's gets a note naming the nearest one."""
    values, corrections, notes, above_max, given, renamed = {}, {}, {}, [], {}, {}
    spelled: dict[str, list[str]] = {}      # control key -> the link's spellings of it
    dropped = []
    for key_in_link in params:
        key = KEY_SPELLINGS.get(key_in_link.lower())
        if key is None:
            notes[key_in_link] = unknown_key_note(key_in_link)
            dropped.append(key_in_link)
        else:
            spelled.setdefault(key, []).append(key_in_link)
    for key, spellings in spelled.items():
        chosen = key if key in spellings else spellings[-1]
        if chosen != key:
            renamed[chosen] = key
        dropped += [k for k in spellings if k not in (key, chosen)]
        control = CONTROLS[key]
        raw = params[chosen]
        raw = raw if isinstance(raw, list) else str(raw)
        value, note = control.parse(raw)
        values[key] = value
        if control.kind == "multi":
            given[key] = raw if isinstance(raw, list) else [raw]
        else:
            given[key] = raw[-1] if isinstance(raw, list) else raw
        if note or control.url_text(value) != given[key]:
            corrections[key] = value
        if note:
            notes[key] = note
        if control.kind in ("int", "float") and _number(given[key]) > control.high:
            above_max.append(key)
    return Link(values, corrections, notes, tuple(above_max), given, renamed, tuple(dropped))


def unknown_key_note(key: str) -> str:
    """The note for a key in a link that no control reads: the key as the link spells it, and
    the nearest control key with its label, when one is near."""
    nearest = difflib.get_close_matches(key.lower(), list(CONTROLS), n=1)
    guess = f": did you mean `{nearest[0]}` ({CONTROLS[nearest[0]].label})?" if nearest else ""
    return f"“{literal(key)}” in the link is not a setting of this lab, so it is left out{guess}"
