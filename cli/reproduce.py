"""`python -m sim reproduce`: Sarathi-Serve's and DistServe's published figures beside the lab's.

Without --rerun it prints the shipped results (sim/studies/reproduce.py's SHIPPED_RESULTS, made
by `python -m benchmarks.reproduce`, whose command and commit it prints); `--rerun NAME`
recomputes one scenario within the command's budget, a capacity one at reduced effort (fewer
requests, a coarser bisection: stated in the output). JSON (`--json`): a list of objects with
keys scenario, metric, simulated, paper, ratio (simulated / paper), note (the main uncertainty),
unit ("s" or "x") and source; where the lab cannot express a setup, simulated and ratio are left
out (as every command leaves out what is undefined) and the note says why.
"""

from __future__ import annotations

from dataclasses import replace

from sim.effort.caps import CLI_ALLOWANCE, CommandEffort, RunAccount
from sim.effort.estimate import estimate_run
from sim.serving.run import Run
from sim.studies.reproduce import (
    CAPACITY,
    FULL,
    RERUN,
    RERUN_TOLERANCE,
    SCENARIOS,
    Row,
    ablation_rows,
    ablation_runs,
    capacity_runs,
    check_scenario,
    cost_model,
    distserve_rows,
    distserve_runs,
    load_shipped,
    numbered_notes,
    reproduce,
    trace_workload,
)

from .common import PROCESS_BYTES, check_work, work_of
from .flags import choice, paragraph
from .output import emit, table
from .sweeps import CAPACITY_SHARE


def rows_text(rows: list[Row], wide: bool, shipped: dict[tuple[str, str], Row] | None = None) -> str:
    """The rows as a table, each note once below it (numbered: the ablation's rows share some);
    with `shipped`, a column of the shipped figure beside the recomputed one."""
    numbers, notes = numbered_notes(rows)
    lines = []
    for r, number in zip(rows, numbers):
        cells = [r.scenario, r.metric, r.shown(r.simulated)]
        if shipped is not None:
            before = shipped.get((r.scenario, r.metric))
            cells.append(before.shown(before.simulated) if before else "-")
        cells += [r.shown(r.paper), "-" if r.ratio is None else f"{r.ratio:.2f}", str(number)]
        lines.append(tuple(cells))
    header = ("scenario", "metric", "simulated", *(("shipped",) if shipped is not None else ()),
              "paper", "simulated / paper", "note")
    sources = dict.fromkeys(r.source for r in rows)
    return "\n".join([table(lines, header, wide), "", "notes (the main uncertainty of each):",
                      *(f"[{n}] {note}" for n, note in enumerate(notes, 1)), "", "paper figures from:",
                      *(f"- {s}" for s in sources)])


def _account(runs: list[Run]) -> RunAccount:
    """The searches' account within the command's budget (a refusal before they start when even
    one run of each could not fit)."""
    estimates = {(run.policy.name, run.budget): estimate_run(run) for run in runs}
    account = RunAccount(replace(CLI_ALLOWANCE, seconds=CAPACITY_SHARE * CLI_ALLOWANCE.seconds,
                                 bytes=CLI_ALLOWANCE.bytes - PROCESS_BYTES),
                         estimates, windowed=runs[0].cost.model.sliding_window > 0)
    CommandEffort(tuple(estimates.values())).check_most(
        account.allowance, "one run of each policy", "rerun another scenario")
    return account


def _rerun(name: str) -> list[Row]:
    """Scenario `name` recomputed within the command's budget."""
    if name in CAPACITY:
        setup = CAPACITY[name]
        cost = cost_model(setup.model, setup.tp)
        sample = trace_workload(RERUN.requests, 1.0, 0)
        account = _account([Run(workload=sample, policy=p, cost=cost, budget=b, limits=limits)
                            for p, b, limits in capacity_runs(setup)])
        return reproduce(name, RERUN, may_start=account.may_start, finished=account.finished)
    if name == "distserve-example":   # whole, as shipped: its runs are short
        account = _account([distserve_runs(FULL)[1]])
        return distserve_rows(FULL, may_start=account.may_start, finished=account.finished)
    if name == "ablation":
        caps = check_work(work_of(*ablation_runs()), "the ablation's runs",
                          "rerun another scenario")
        return ablation_rows(caps)
    return reproduce(name)


def _reproduce(args) -> None:
    shipped = load_shipped()
    if args.rerun is None:
        rows = list(shipped.rows)
        head = (f"Sarathi-Serve's and DistServe's figures beside the lab's ({len(rows)} rows), "
                f"as shipped: made by `{shipped.command}` at commit {shipped.commit} ({shipped.effort} for the "
                "capacity searches). `--rerun NAME` recomputes one scenario.")
        emit(args, [r.to_json() for r in rows], head + "\n" + rows_text(rows, args.wide))
        return
    name = check_scenario(args.rerun)
    rows = _rerun(name)
    if name in CAPACITY:
        how = (f"recomputed at reduced effort: {RERUN.describe()} (shipped: {FULL.describe()}); "
               f"it should land within {RERUN_TOLERANCE:.0%} of the shipped figure")
    else:
        how = "recomputed exactly as shipped (this scenario fits the command's budget whole)"
    before = {(r.scenario, r.metric): r for r in shipped.rows}
    emit(args, [r.to_json() for r in rows],
         f"{name}: {SCENARIOS[name]}; {how}\n" + rows_text(rows, args.wide, before))


def register_reproduce(sub) -> None:
    p = sub.add_parser("reproduce", help="Sarathi-Serve's and DistServe's published figures "
                                         "beside the lab's", description=paragraph("""
        The Sarathi-Serve paper's figures (capacity ratios for Mistral-7B-Instruct-v0.2 and
        Yi-34B on A100 80GB PCIe GPUs with the real ShareGPT trace, its artifact's batch times
        and chunking overhead, its Table 4 ablation) and DistServe's opening example (the
        per-GPU goodput of 2 prefill + 1 decode A100s against one colocated A100, OPT-13B)
        beside what the lab's own capacity and goodput searches and calibrated cost model give
        for the same setups: simulated, paper, their ratio and
        the main uncertainty of each. Prints the results shipped with the lab (the capacity
        searches take minutes); --rerun NAME recomputes one scenario within the command's
        budget."""))
    effort = f"{RERUN.describe()} instead of {FULL.describe()}".replace("%", "%%")   # argparse
    choice(p, "--rerun", f"recompute one scenario (capacity ones at {effort})", SCENARIOS,
           default=None,
           shown_default="none: print the shipped results")
    p.set_defaults(func=_reproduce)
