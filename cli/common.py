"""What the simulation commands share: the hardware, policy and workload flags, the run they
describe, and the work budget every run is checked against before it starts."""

from __future__ import annotations

import argparse

from sim.cost.iteration import CostModel
from sim.effort.caps import CLI_ALLOWANCE, CommandEffort, fmt_effort_bytes, fmt_effort_seconds
from sim.effort.estimate import estimate_run, least_iterations
from sim.errors import InputError
from sim.knobs import KNOBS, LIMIT_KNOBS, shaping
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving import workloads
from sim.serving.engine import Trace
from sim.serving.pipeline import Pipeline, stage_costs
from sim.serving.policies import (
    DEFAULT_MAX_ITERATIONS,
    MAX_ITERATION_CAP,
    POLICIES,
    Limits,
    PolicySpec,
    default_max_seqs,
    get_policy,
    lane_budget,
)
from sim.serving.run import Run
from sim.serving.trace_files import MAX_ARRIVAL_S, TRACE_COLUMNS_WORDS, load_trace
from sim.serving.workloads import OWN_LENGTHS, SHAREGPT_OUTPUT, SHAREGPT_PROMPT, parse_mix

from .disaggregate import disaggregation_from, refuse_streams
from .flags import choice, flag_name, knob_flag, number, refuse
from .pipeline import pipeline_from

# A command's own start (Python, numpy, sim) on top of its runs' work.
PROCESS_SECONDS = 0.5
PROCESS_BYTES = 80e6
# Poisson arrival times are float64 seconds from 0: beyond this span they keep less than ~2 ns
# of precision, and the gaps between tokens (milliseconds) start to lose digits.
MAX_ARRIVAL_SPAN_S = MAX_ARRIVAL_S

SCENARIOS = {   # --scenario: what it runs, for the help and for messages
    "textbook": "the worked example's scenario: --decodes requests already streaming, one "
                "--prompt arrives (the default without --requests or --trace-in)",
    "burst": "--burst prompts arrive together while the --decodes stream",
    "poisson": "--requests arriving at random at --qps, lengths from --lengths",
}
OLD_SCENARIOS = {"seed": "textbook"}   # earlier names still accepted: --scenario seed
# Which scenario each workload flag belongs to; a flag given for another one is refused.
STREAM_FLAGS = (*shaping("textbook"), "allow_starvation")
POISSON_FLAGS = shaping("poisson")
BELONGS = {"textbook": STREAM_FLAGS, "burst": (*STREAM_FLAGS, "burst"), "poisson": POISSON_FLAGS,
           "trace": ()}
REMEDY = {  # what to change when a scenario's run is too large
    "textbook": "use fewer --decodes or a smaller --decode-output",
    "burst": "use a smaller --burst, fewer --decodes or a smaller --decode-output",
    "poisson": "use fewer --requests or a smaller --output-tokens",
    "trace": "replay a shorter trace (fewer rows, fewer output_tokens)",
}


def remedy(args) -> str:
    """What to change when the flags' runs are too large, naming only flags they accept
    (--lengths sharegpt and sharegpt-trace bring their own lengths and refuse --output-tokens);
    with pipeline stages, fewer of them too."""
    return _workload_remedy(args) + fewer_stages(args)


def fewer_stages(args) -> str:
    """", or fewer --pp stages" where the runs have more than one: a remedy for too much work."""
    if "pp" in args.given and args.pp > 1:
        return ", or fewer --pp stages (each micro-batch passes every one)"
    return ""


def _workload_remedy(args) -> str:
    scenario = scenario_of(args)
    if scenario == "poisson" and args.mix is not None:
        return "use fewer --requests (--mix gives each class its own lengths)"
    if scenario == "poisson" and args.lengths in OWN_LENGTHS:
        return f"use fewer --requests (--lengths {args.lengths} {OWN_LENGTHS_WORDS[args.lengths]})"
    return REMEDY[scenario]


# What the --lengths that bring their own lengths do, as a refusal or advice says it.
OWN_LENGTHS_WORDS = {"sharegpt": "draws its own lengths",
                     "sharegpt-trace": "replays the ShareGPT trace's lengths"}


# --- shared flags ---------------------------------------------------------------------------
def add_hardware_args(p: argparse.ArgumentParser) -> None:
    for name in ("gpu", "model", "mode"):
        knob_flag(p, KNOBS[name])
    synchronous, overlapped = ([n for n, p in POLICIES.items() if p.overhead.overlapped == hidden]
                               for hidden in (False, True))
    number(p, "--overhead-ms", "the engine's CPU time per iteration: added to the GPU time by a "
           f"synchronous engine ({', '.join(synchronous)}), hidden behind it by an overlapped one "
           f"({', '.join(overlapped)}) unless longer", unit="ms", default=None,
           low=0, high=10_000, shown_default="0, or the calibrated mode's 4")
    knob_flag(p, KNOBS["tp"])


def cost_model_from(args) -> CostModel:
    overhead_s = None if args.overhead_ms is None else args.overhead_ms / 1e3
    return CostModel(get_gpu(args.gpu), get_model(args.model), args.mode, overhead_s, args.tp)


def hardware_from(args) -> tuple[CostModel, Pipeline | None, CostModel]:
    """What the flags serve a run on: the cost model, the pipeline (None without --pp), and the
    cost model an engine's default seats (--max-seqs) are sized by, a pipeline's first stage's,
    whose KV SGLang sizes them by. Every command that takes --pp builds its runs from this."""
    cost = cost_model_from(args)
    pipeline = pipeline_from(args)
    return cost, pipeline, stage_costs(cost, pipeline)[0]


def add_policy_args(p: argparse.ArgumentParser, budget: int | None = KNOBS["budget"].default, *,
                    max_iterations: int = DEFAULT_MAX_ITERATIONS) -> None:
    """The scheduler and its limits, with `budget` the default of --budget (None: no --budget,
    for commands that take several budgets)."""
    choice(p, "--policy", "the scheduler", POLICIES, default="sarathi")
    if budget is not None:
        knob_flag(p, KNOBS["budget"], default=budget)
    for knob in LIMIT_KNOBS:
        knob_flag(p, knob)
    number(p, "--max-iterations", "stop a run that needs more iterations than this",
           unit="iterations", default=max_iterations, low=1, high=MAX_ITERATION_CAP, whole=True)


def add_length_args(p: argparse.ArgumentParser) -> None:
    """Request lengths of generated (Poisson) traffic: one class's (--lengths) or a mix's."""
    for name in ("prompt_tokens", "output_tokens", "lengths", "prefix_tokens", "prefix_share"):
        knob_flag(p, KNOBS[name])
    add_mix_arg(p)
    knob_flag(p, KNOBS["seed"])


def add_mix_arg(p: argparse.ArgumentParser) -> None:
    """--mix: a preset of the knob's choices or a spec of classes, checked when parsed and kept
    as typed (the workload is drawn from it once --requests and --qps are known)."""
    knob = KNOBS["mix"]

    def checked(text: str) -> str:
        try:
            parse_mix(text)
        except InputError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    checked.__name__ = "mix"
    p.add_argument(knob.flag, type=checked, default=knob.default, metavar="MIX",
                   help=f"{knob.what} (default {knob.shown_default})".replace("%", "%%"))


def add_run_args(p: argparse.ArgumentParser, budget: int | None = KNOBS["budget"].default) -> None:
    """Flags for one simulated run: hardware, policy, limits and the workload."""
    add_hardware_args(p)
    add_policy_args(p, budget)
    choice(p, "--scenario", "the workload; " + "; ".join(f"{k}: {v}" for k, v in SCENARIOS.items()),
           SCENARIOS, default=None, shown_default="textbook, or poisson with --requests",
           old=OLD_SCENARIOS)
    for name in ("decodes", "context", "prompt", "decode_output", "prompt_output", "burst"):
        knob_flag(p, KNOBS[name])
    p.add_argument("--allow-starvation", action="store_true",
                   help="textbook, burst: run a budget at or below the streaming requests (new prompts "
                        "get no tokens until they finish) instead of refusing it (default off)")
    knob_flag(p, KNOBS["requests"])
    knob_flag(p, KNOBS["qps"])
    add_length_args(p)
    p.add_argument("--trace-in", metavar="FILE",
                   help=f"replay a CSV trace: {TRACE_COLUMNS_WORDS} (default: none)")


def scenario_of(args) -> str:
    """The scenario the flags choose: trace, textbook, burst or poisson."""
    if args.trace_in is not None:
        if args.scenario is not None:
            raise InputError(f"--trace-in replays a trace; drop --scenario {args.scenario}")
        return "trace"
    return args.scenario or ("poisson" if "requests" in args.given else "textbook")


def refuse_other_scenarios(args, scenario: str) -> None:
    """A workload flag given for a scenario it does not belong to is an error, not ignored."""
    for dest in dict.fromkeys(STREAM_FLAGS + ("burst",) + POISSON_FLAGS):
        if dest in args.given and dest not in BELONGS[scenario]:
            owners = [s for s, flags in BELONGS.items() if dest in flags]
            chosen = {"trace": "--trace-in replays the trace's own requests",
                      "textbook": "the scenario is textbook (the default without --requests)",
                      "poisson": "the scenario is poisson (--requests)",
                      "burst": "the scenario is burst"}[scenario]
            raise InputError(f"{flag_name(dest)} belongs to --scenario {' or '.join(owners)}; "
                             f"{chosen}")
    if scenario == "poisson":
        refuse_unused_lengths(args)


def refuse_unused_lengths(args) -> None:
    """Length flags that the chosen lengths do not read are refused: --lengths, --prompt-tokens
    and --output-tokens beside --mix (each class has its own), the lengths' own tokens beside
    --lengths sharegpt and sharegpt-trace."""
    if args.mix is not None:
        if "lengths" in args.given:
            raise InputError(f"--mix takes the place of --lengths: each class of the mix has its "
                             f"own lengths; drop --lengths {args.lengths} (or --mix)")
        refuse(args, ("prompt_tokens", "output_tokens"), why=f"--mix {args.mix} gives each class "
               "its own prompt and output lengths")
    elif args.lengths in OWN_LENGTHS:
        refuse(args, ("prompt_tokens", "output_tokens"), why=f"--lengths {args.lengths} "
               f"{OWN_LENGTHS_WORDS[args.lengths]} (median prompt {SHAREGPT_PROMPT[0]:,}, output "
               f"{SHAREGPT_OUTPUT[0]:,} tokens); they set --lengths fixed and uniform")


def poisson_from(args, requests: int, qps: float) -> workloads.Workload:
    """Poisson arrivals, refused when they would spread over more than MAX_ARRIVAL_SPAN_S."""
    if requests / qps > MAX_ARRIVAL_SPAN_S:
        raise InputError(
            f"--requests {requests:,} at --qps {qps:g} spread arrivals over about "
            f"{requests / qps:.3g} s, beyond the {MAX_ARRIVAL_SPAN_S:g} s (116 days) in which "
            f"arrival times keep the precision of an iteration; raise --qps to at least "
            f"{requests / MAX_ARRIVAL_SPAN_S:.3g} or use fewer --requests")
    if "prefix_share" in args.given and not args.prefix_tokens:
        raise InputError("--prefix-share says which requests have the shared prefix; give its "
                         "length too, --prefix-tokens N (e.g. 2000)")
    if args.mix is not None:
        refuse(args, ("prefix_tokens",), why=f"--mix {args.mix} draws each class's prompts; a "
               "shared prefix goes before the prompts of one class of lengths (--lengths)")
        return workloads.mixed(requests, qps, parse_mix(args.mix), seed=args.seed)
    return workloads.poisson(requests, qps, seed=args.seed, lengths=args.lengths,
                             prompt=args.prompt_tokens, output=args.output_tokens,
                             prefix_tokens=args.prefix_tokens, prefix_share=args.prefix_share)


def lengths_words(args) -> str:
    """The Poisson traffic's lengths as a header says them: "sharegpt lengths", "mix chat+documents"."""
    return f"mix {args.mix}" if args.mix is not None else f"{args.lengths} lengths"


def workload_from(args) -> workloads.Workload:
    scenario = scenario_of(args)
    refuse_other_scenarios(args, scenario)
    if scenario == "trace":
        return load_trace(input_path("--trace-in", args.trace_in))
    if scenario == "textbook":
        return workloads.textbook_scenario(args.decodes, args.context, args.prompt, args.decode_output,
                                       args.prompt_output)
    if scenario == "burst":
        return workloads.burst(args.burst, args.prompt, args.prompt_output, args.decodes,
                               args.context, args.decode_output)
    if args.requests is None or args.qps is None:
        raise InputError("--scenario poisson needs --requests N and --qps Q")
    return poisson_from(args, args.requests, args.qps)


def limits_from(args, *policies: PolicySpec, workload: workloads.Workload | None = None,
                cost: CostModel | None = None) -> Limits:
    """The runs' Limits: every limit of the knob table from its flag, refused when none of
    `policies` reads it (--max-concurrent-prefills for unchunked policies). Without --max-seqs,
    the first policy's engine's default for the GPU and model (on `cost`, a pipeline's first
    stage, whose KV SGLang sizes it by; by default the flags' cost model), raised to hold the
    streams `workload` starts with and one more request (so the worked example's prompt gets a
    seat)."""
    for knob in LIMIT_KNOBS:
        readers = [p.name for p in policies if knob.applies_to(p.name)]
        if not readers:
            names = " and ".join(p.name for p in policies)
            reads = "reads" if len(knob.policies) == 1 else "read"
            refuse(args, (knob.name,), why=f"only {', '.join(knob.policies)} {reads} it; {names} "
                                           f"{'does' if len(policies) == 1 else 'do'} not")
    given = {knob.name: getattr(args, knob.name) for knob in LIMIT_KNOBS}
    if given["max_seqs"] is None:
        given["max_seqs"] = default_max_seqs(policies[0], cost or cost_model_from(args),
                                             getattr(args, "budget", None), workload)
    return Limits(max_iterations=args.max_iterations, **given)


def check_work(work: CommandEffort, what: str, remedy: str) -> tuple[int, ...]:
    """The iteration cap of each of `work`'s runs within the CLI's budget (any command: 60 s and
    1.5 GB, its own start included), or a refusal with the estimate and `remedy` before anything
    runs."""
    return work.plus(PROCESS_SECONDS, PROCESS_BYTES).check(CLI_ALLOWANCE, what, remedy)


def check_iterations(workload: workloads.Workload, cap: int) -> None:
    """Refuse, before it starts, a run that must stop at the iteration cap: it takes at least as
    many iterations as its longest output has tokens."""
    needed = least_iterations(workload)
    if needed > cap:
        raise InputError(iteration_cap_message(cap, needed))


def work_of(*runs: Run) -> CommandEffort:
    """The runs' estimate (sim/effort/estimate.py), as the command's budget checks it."""
    return CommandEffort(tuple(estimate_run(run) for run in runs))


def planned_run(args) -> Run:
    """The run the flags give (sim/serving/run.py), every flag checked."""
    disaggregation = disaggregation_from(args)
    if disaggregation is not None:
        refuse_streams(scenario_of(args))
    workload = workload_from(args)
    policy = get_policy(args.policy)
    cost, pipeline, seated_by = hardware_from(args)
    limits = limits_from(args, policy, workload=workload, cost=seated_by)
    decoders = int(workload.prefilled.sum())
    if decoders and policy.under(limits).decodes_take_budget and args.budget <= decoders \
            and not args.allow_starvation:
        raise InputError(
            f"--budget {args.budget} is at or below the {decoders} running decodes: chunk = "
            f"budget - decodes = {args.budget - decoders} <= 0, so new prompts would starve until "
            f"decoders finish; use a budget > {decoders}, or --allow-starvation to watch it")
    budget = args.budget if "budget" in args.given else lane_budget(policy, workload, args.budget)
    return Run(workload=workload, policy=policy, cost=cost, budget=budget, limits=limits,
               disaggregation=disaggregation, pipeline=pipeline)


def lane_args(args, policy: str) -> argparse.Namespace:
    """The flags of a second run under `policy` (export's unchunked lane): the same workload and
    hardware; a limit the lane's policy does not read (--max-concurrent-prefills) stays with the lane
    it applies to; vLLM V0 runs at its own budget, as the app's unchunked lane does."""
    unread = {k.name for k in LIMIT_KNOBS if not k.applies_to(policy)}
    if get_policy(policy).profile.prompt_limit:
        unread.add("budget")
    lane = {**vars(args), "policy": policy, "given": args.given - unread}
    lane.update({name: KNOBS[name].default for name in unread})
    return argparse.Namespace(**lane)


def run_from(args, cap: int | None = None) -> tuple[workloads.Workload, Trace]:
    """Build the workload and run it within the command's budget (`cap`: the iteration cap a
    caller that checked several runs together gave it): the core of simulate and export (the one
    place the CLI calls the engine)."""
    run = checked_run(args, cap)
    return run.workload, run.simulate()


def checked_run(args, cap: int | None = None) -> Run:
    """The flags' run, checked against the command's budget and capped to fit it (`cap`: the
    iteration cap a caller that checked several runs together gave it)."""
    run = planned_run(args)
    check_iterations(run.workload, args.max_iterations)
    if cap is None:
        (cap,) = check_work(work_of(run), "this run", remedy(args))
    return run.capped(cap)


def iteration_cap_message(cap: int, needed: int | None = None) -> str:
    """What to do when a run needs more iterations than `cap` (at least `needed`, when known
    before it starts: its longest output): raise the cap while it can be."""
    at_most = cap >= MAX_ITERATION_CAP
    if needed:
        what = (f"the run needs at least {needed:,} iterations (its longest request emits "
                f"{needed:,} tokens, one per iteration), over ")
        what += f"{cap:,}, the most --max-iterations allows" if at_most else \
            f"--max-iterations {cap:,}"
    else:
        what = (f"the run needed more than {cap:,} iterations, the most --max-iterations allows"
                if at_most else f"the run needed more iterations than --max-iterations {cap:,}")
    if at_most:
        return what + "; shorten the workload (fewer requests or output tokens)"
    return what + f"; raise --max-iterations (at most {MAX_ITERATION_CAP:,}) or shorten the workload"


def limit_message(args, cap: int | None) -> str:
    """Why a run stopped at iteration `cap`: --max-iterations, or a lower cap the command's
    budget set (the run needed more iterations than its estimate and than fit in the budget)."""
    if cap is None or cap >= args.max_iterations:
        return iteration_cap_message(args.max_iterations)
    return (f"the run needed more than {cap:,} iterations, more than estimated and the most that "
            f"fit in the command's budget ({fmt_effort_seconds(CLI_ALLOWANCE.seconds)}, "
            f"{fmt_effort_bytes(CLI_ALLOWANCE.bytes)}) beside the rest of its work; "
            f"{remedy(args)}")


# --- files ------------------------------------------------------------------------------------
def input_path(flag: str, path: str) -> str:
    """`path` if it names a file to read (the trace reader refuses FIFOs, devices, directories)."""
    if not path:
        raise InputError(f"{flag} needs a file name")
    return path
