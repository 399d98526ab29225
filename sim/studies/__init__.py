"""Studies built on the simulator: the worked example, budgets within a TPOT target, budget
sweeps, capacity under SLOs, and KV memory."""
