# Every target installs what it needs into .venv first (only Python 3 and make are assumed).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL := 3

.PHONY: install lab test lint course bench clean

$(STAMP): requirements.txt pyproject.toml etc/ipython/ipython_kernel_config.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	mkdir -p $(VENV)/etc/ipython
	cp etc/ipython/ipython_kernel_config.py $(VENV)/etc/ipython/
	touch $(STAMP)

install: $(STAMP)

# Compile the notebook checks' references into JAX's persistent cache once (not every launch).
$(VENV)/.warm: $(STAMP) $(wildcard autograder/exercises/*.py) autograder/references.py
	$(PY) -m autograder warm-up
	touch $@

lab: $(VENV)/.warm
	$(VENV)/bin/jupyter lab course/

lint: $(STAMP)
	$(PY) -m ruff check .

test: $(STAMP) lint
	$(PY) -m pytest tests
	$(PY) -m pytest --nbval --nbval-current-env --nbval-sanitize-with etc/nbval-sanitize.cfg solutions course

course: $(STAMP)
	$(PY) -m autograder build-course

bench: $(STAMP)
	$(PY) -m autograder.bench

clean:
	rm -rf $(VENV) bench-out test-artifacts
