# Every target installs what it needs into .venv first (only Python 3 and make are assumed).
# pip compiles the packages' bytecode on one core (half of a fresh install: TensorFlow has
# thousands of modules); compileall writes the same .pyc files on every core. Like pip's, its
# failures on a package's odd file (a template, a Python 2 test) are not an install failure.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL := 3

.PHONY: install lab test test-all test-pytest test-notebooks test-fast test-chapter lint course bench bundle clean

$(STAMP): requirements.txt pyproject.toml etc/ipython/ipython_kernel_config.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -r requirements.txt
	$(PY) -m compileall -q -j 0 $(VENV)/lib >/dev/null || true
	$(PY) -m pip install --quiet --no-deps -e .
	mkdir -p $(VENV)/etc/ipython
	cp etc/ipython/ipython_kernel_config.py $(VENV)/etc/ipython/
	touch $(STAMP)

install: $(STAMP)

# Store the notebook checks' cases and references once (autograder/judging/stored_references.py),
# so a learner's first check neither draws cases nor imports TensorFlow; again when they change.
$(VENV)/.warm: $(STAMP) $(wildcard autograder/exercises/*.py autograder/judging/*.py autograder/harness/*.py coursekit/*.py)
	$(PY) -m autograder warm-up
	touch $@

lab: $(VENV)/.warm
	$(VENV)/bin/jupyter lab course/

# ruff's lint rules, then its formatter in check mode (notebooks excepted: pyproject.toml), then
# the release workflow against GitHub's workflow schema (check-jsonschema bundles it).
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m check_jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

# Workers for pytest-xdist. A test module, or a notebook (nbval runs its cells in order in one
# kernel), stays on one worker (--dist loadfile), so module fixtures are built once; a few
# modules of long independent tests spread them over the workers (tests/conftest.py).
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile
# nbval's kernels are this venv's Python, forked from a server per worker that has imported
# TensorFlow and JAX once (conftest.py, tests/warm_kernels.py; COURSE_COLD_KERNELS=1: fresh ones).
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with etc/nbval-sanitize.cfg
# The fast tiers leave out the tests marked slow or e2e (pyproject.toml; tests/tiers.py).
FAST := not slow and not e2e

# Everything, in two parts: ruff (make lint), then every test and every notebook of both folders
# and both editions under nbval in one pytest run (make test-all), so both workers stay busy to
# the end. The second part runs even when lint failed; the last line says which passed and which
# failed. `make test-pytest` and `make test-notebooks` run the two halves of test-all alone.
TEST_PARTS := lint test-all
test: $(STAMP)
	@summary=""; failed=0; \
	for part in $(TEST_PARTS); do \
	  if $(MAKE) --no-print-directory $$part; then summary="$$summary $$part passed;"; \
	  else summary="$$summary $$part FAILED;"; failed=1; fi; \
	done; \
	echo "make test:$$summary"; exit $$failed

test-all: $(STAMP)
	$(PY) -m pytest $(XDIST) $(NBVAL) --durations=15 tests solutions course

test-pytest: $(STAMP)
	$(PY) -m pytest $(XDIST) --durations=15 tests

test-notebooks: $(STAMP)
	$(PY) -m pytest $(XDIST) $(NBVAL) solutions course

# Every test not marked slow or e2e (no notebooks): a few minutes.
test-fast: $(STAMP)
	$(PY) -m pytest $(XDIST) -m "$(FAST)" --durations=15 tests

# One chapter, in under 2 minutes: `make test-chapter CH=03` runs the fast tests that belong to
# chapter 03 (tests/tiers.py says which) and its solution notebook under nbval.
test-chapter: $(STAMP)
	@test -n "$(CH)" || { echo "make test-chapter needs a chapter: make test-chapter CH=03" >&2; exit 2; }
	$(PY) -m pytest $(XDIST) -m "$(FAST)" --durations=10 --chapter $(CH) $(NBVAL) tests \
	  $(wildcard solutions/$(CH)_*.ipynb)

course: $(STAMP)
	$(PY) -m autograder build-course

bench: $(STAMP)
	$(PY) -m benchmarks.bench

# The zip of every notebook (both editions) and what installs them, for learners who cannot
# clone (README.zh-CN.md): dist/autodiff-course.zip.
bundle:
	python3 -m autograder bundle

clean:
	rm -rf $(VENV) bench-out test-artifacts dist

# The supported-versions matrix (README "Supported versions"): besides the pinned Python 3.11
# set in .venv, a second environment with Python 3.12 and the newest releases of jax, jaxlib,
# numpy and TensorFlow that pyproject.toml admits (what Colab and a fresh environment get).
# There it runs the check engine's tests (every chapter's right and wrong answers, precision
# settings) and nbval over every solution notebook. Each run upgrades it to the newest releases.
LATEST_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python) \
                             $(shell command -v python3.12 2>/dev/null))
LATEST := .venv-latest
LATEST_PY := $(LATEST)/bin/python
VERSIONS_TESTS := $(sort $(wildcard tests/exercises/test_check_ch*.py)) tests/harness/test_precision.py
# nbval over every solution notebook: their check cells must say PASSED there too, and cells
# whose printed text varies between releases (versions, JAX's wording) are NBVAL_IGNORE_OUTPUT.
VERSIONS_NOTEBOOKS := solutions

.PHONY: versions
versions:
	@test -n "$(LATEST_PYTHON)" || { echo "make versions needs Python 3.12:" \
	  "pyenv install 3.12, or LATEST_PYTHON=/path/to/python3.12" >&2; exit 1; }
	test -x $(LATEST_PY) || $(LATEST_PYTHON) -m venv $(LATEST)
	$(LATEST_PY) -m pip install --quiet --upgrade pip
	$(LATEST_PY) -m pip install --quiet --upgrade --upgrade-strategy eager \
	  -e . jax jaxlib numpy tensorflow pytest nbval ipykernel
	mkdir -p $(LATEST)/etc/ipython
	cp etc/ipython/ipython_kernel_config.py $(LATEST)/etc/ipython/
	@$(LATEST_PY) -c 'import platform; print("versions: Python", platform.python_version())'
	@$(LATEST_PY) -m pip list --format=freeze | grep -iE '^(jax|jaxlib|numpy|tensorflow)=='
	$(LATEST_PY) -m pytest $(VERSIONS_TESTS)
	$(LATEST_PY) -m pytest --nbval --nbval-current-env \
	  --nbval-sanitize-with etc/nbval-sanitize.cfg $(VERSIONS_NOTEBOOKS)
