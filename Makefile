# Two commands on a fresh machine: `make run` (the app) and `make test` (the whole suite).
# Both create .venv with Python 3.11 and install the locked versions (requirements.txt and
# requirements-test.txt, compiled by `make lock` from the ranges in requirements*.in); `make test`
# also needs Debian's chromium for the browser tests (.ci/run installs it; without it those tests
# are skipped).
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/.app: requirements.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements.txt
	touch $@

$(BIN)/.test: requirements-test.txt $(BIN)/.app
	$(BIN)/pip install -q -r requirements-test.txt
	touch $@

.PHONY: run test test-fast lint lock bench fuzz fuzz-app loadtest mutants handout
# On this machine only (http://localhost:8501); ARGS: Streamlit's flags, which win, e.g. a
# workshop's network: make run ARGS="--server.address 0.0.0.0" (README: "Serving a workshop")
run: $(BIN)/.app
	$(BIN)/streamlit run serve.py --server.address 127.0.0.1 $(ARGS)

test: $(BIN)/.test
	$(BIN)/python -m pytest -q

# The simulator, chart and CLI tests: no app, no browser; each check on one look, 25 hypothesis
# examples a property, no whole GIF export (`make test` runs those: pytest.ini's `slow` marker)
test-fast: $(BIN)/.test
	$(BIN)/python -m pytest -q -m "not slow" --hypothesis-profile=fast tests/sim tests/charts tests/cli

# ruff and the import-linter layering contracts in pyproject.toml
lint: $(BIN)/.test
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# Recompile the locks from requirements*.in (pip-tools in its own venv); add --upgrade to
# LOCK_FLAGS to move every package to the newest release the ranges allow
LOCK_FLAGS ?=
lock:
	test -x .venv-lock/bin/pip-compile || ($(PY) -m venv .venv-lock && .venv-lock/bin/pip install -q pip-tools)
	for f in requirements requirements-test; do CUSTOM_COMPILE_COMMAND="make lock" .venv-lock/bin/pip-compile \
	    -q --no-emit-index-url --no-emit-find-links --no-strip-extras $(LOCK_FLAGS) -o $$f.txt $$f.in; done

# ARGS: python -m benchmarks's flags, e.g. make bench ARGS="--repeats 1" (or --only TEXT, --smoke)
bench: $(BIN)/.app
	$(BIN)/python -m benchmarks $(ARGS)

# Fuzz suites (tests/fuzz): FUZZ_CASES per suite, each case in its own bounded process; prints the
# verdicts, the slowest and largest cases and any failure. A new suite joins tests/fuzz/__main__.py.
FUZZ_CASES ?= 500
FUZZ_SEED ?= 0
fuzz: $(BIN)/.test
	$(BIN)/python -m tests.fuzz --cases $(FUZZ_CASES) --seed $(FUZZ_SEED)

# The guided tour as a printable handout (ui/teach/handout.py): out/handout/handout.html (one
# self-contained page), handout.md with its PNGs, and handout.pdf where Chromium is installed
handout: $(BIN)/.app
	$(BIN)/python -m ui.teach.handout

# 30 sessions on one shared link against a local `make run` server (benchmarks/load_test.py)
loadtest: $(BIN)/.test
	$(BIN)/python -m benchmarks.load_test

# Link fuzzing of every page: 504 random links through AppTest, each a clean run or a
# clean refusal; every key with every hostile value; 50 links a family of keys in any case, keys
# no control reads and values with joiners; prints the slowest and largest cases. `make test`
# runs a slice of 27 (3 a family). Then the claims test (tests/ui/test_claims.py) on 300 random
# scenarios (`make test`: 12).
fuzz-app: $(BIN)/.test
	FUZZ_APP_CASES=504 $(BIN)/python -m pytest -q tests/fuzz_app
	CLAIMS_EXAMPLES=300 $(BIN)/python -m pytest -q tests/ui/test_claims.py

# Mutation testing of sim/serving ([tool.mutmut] in pyproject.toml), from scratch, on 2 cores;
# prints the score (killed or timed out / mutants tested) and the survivors.
mutants: $(BIN)/.test
	rm -rf mutants
	$(BIN)/mutmut run --max-children 2 > /dev/null
	$(BIN)/mutmut export-cicd-stats > /dev/null
	$(BIN)/python -c "import json; s = json.load(open('mutants/mutmut-cicd-stats.json')); \
	caught = s['killed'] + s['timeout']; tested = s['total'] - s['skipped']; \
	print(f'mutation score: {caught} of {tested} mutants caught ({caught / tested:.1%}); {s}')"
	$(BIN)/mutmut results
