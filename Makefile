# Two commands on a fresh machine: `make run` (the app) and `make test` (the whole suite).
# Both create .venv with Python 3.11 and install what they need; `make test` also needs Debian's
# chromium for the browser tests (.ci/run installs it; without it those tests are skipped).
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

.PHONY: run test bench mutants
run: $(BIN)/.app
	$(BIN)/streamlit run app.py

test: $(BIN)/.test
	$(BIN)/python -m pytest -q

bench: $(BIN)/.app
	$(BIN)/python -m benchmarks

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
