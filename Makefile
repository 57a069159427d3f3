# The README's two commands: `make run` (the chapter's demo) and `make test`. From a fresh clone
# they do the whole set-up with any Python >= 3.10: when $(PYTHON) is not a virtualenv (a Linux
# distribution's /usr/bin/python3 refuses pip installs, PEP 668), they create .venv with it and
# install and run there; a virtualenv's (or pyenv's virtualenv's) python is used as it is.
# VENV names that virtualenv: .ci/run's second run is `make test PYTHON=python3.10 VENV=.venv310 EXTRAS=test`.
# Only the command line sets it, not the environment, where make puts it for the tests' own make runs.
PYTHON ?= python3
EXTRAS ?= test,bfloat16,plot
VENV := .venv

.PHONY: install run test golden startup bench clean python
.DEFAULT_GOAL := install

# The install stamp lives in the virtualenv make creates, so that each has its own and a new one has none.
ifeq ($(shell $(PYTHON) -c "import sys; print(sys.prefix != sys.base_prefix)" 2>/dev/null),True)
PY := $(PYTHON)
MAKE_VENV :=
STAMP := .installed
else
PY := $(VENV)/bin/python
MAKE_VENV := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
endif

# The stamp only says pip ran; it is dropped (and pip runs again) unless $(PY) imports
# gradcheck_cli from this checkout with every requirement of $(EXTRAS) installed.
ifneq ($(shell $(PY) tools/install_check.py "$(CURDIR)" "$(EXTRAS)" 2>/dev/null && echo yes),yes)
$(shell rm -f $(STAMP))
endif

# One line when the Python asked for does not exist, even where .venv already does.
ifneq ($(filter-out clean,$(or $(MAKECMDGOALS),install)),)
ifeq ($(shell command -v $(PYTHON) 2>/dev/null),)
$(error '$(PYTHON)' is not found: run make PYTHON=/path/to/python3.10-or-newer)
endif
endif

# One line, not a traceback, when the virtualenv is still to be made and this Python cannot make it.
ifneq ($(MAKE_VENV),)
ifeq ($(wildcard $(MAKE_VENV)),)
ifneq ($(filter-out clean,$(or $(MAKECMDGOALS),install)),)
ifneq ($(shell $(PYTHON) -c "import sys; print(sys.version_info >= (3, 10))" 2>/dev/null),True)
$(error gradcheck needs Python >= 3.10, and '$(PYTHON)' is not one: run make PYTHON=/path/to/python3.10-or-newer)
endif
ifneq ($(shell $(PYTHON) -c "import venv, ensurepip" 2>/dev/null && echo yes),yes)
$(error '$(PYTHON)' cannot create a virtualenv: install its venv module (Debian, Ubuntu: apt-get install python3-venv), or run make PYTHON=/path/to/a/virtualenv/bin/python)
endif
endif
endif
endif

$(VENV)/bin/pip:
	$(PYTHON) -m venv --clear $(VENV)

$(STAMP): pyproject.toml | $(MAKE_VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[$(EXTRAS)]"
	@touch $(STAMP)

install: $(STAMP)

# The interpreter the other targets use (.venv's, or $(PYTHON) when it is a virtualenv): for .ci/run.
python:
	@echo $(PY)

run: $(STAMP)
	$(PY) -m gradcheck_cli demo

# Lint and format first (ruff, configured in pyproject.toml), then the whole test suite.
test: $(STAMP)
	$(PY) -m ruff check --quiet .
	$(PY) -m ruff format --check --quiet .
	$(PY) -m pytest -q

# Rewrite every case in fixtures/golden/ from the current code, and docs/json.md's tables from the
# schemas; review `git diff fixtures/golden docs/json.md` after.
golden: $(STAMP)
	$(PY) tests/golden.py
	$(PY) tests/json_documents.py

# The scalar subcommands must not import numpy or rich: prints the offending imports and fails if they do.
startup: $(STAMP)
	@! $(PY) -X importtime -m gradcheck_cli quadratic 2>&1 >/dev/null | grep -E '\b(numpy|rich)\b'
	@echo "gradcheck quadratic imports neither numpy nor rich"

clean:
	rm -rf .installed $(sort .venv .venv310 $(VENV)) build *.egg-info .pytest_cache .hypothesis

# Measure start-up, harness overhead, scale and peers; prints figures and ratios, asserts no times.
bench: $(STAMP)
	$(PY) benchmarks/run_all.py
