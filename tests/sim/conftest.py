"""Hypothesis settings for the simulation tests. `--hypothesis-profile=mutants` (used by `make
mutants`) runs fewer, fixed examples and does not shrink a failure, so that every mutant meets
the same cases and a failing one fails fast. `--hypothesis-profile=fast` (`make test-fast`) runs
25 examples a property instead of 100; `make test` runs the default."""

from hypothesis import HealthCheck, Phase, settings

settings.register_profile("mutants", max_examples=15, derandomize=True, database=None,
                          phases=[Phase.explicit, Phase.generate], deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fast", max_examples=25)
