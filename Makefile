# The README's two commands: `make run` (the chapter's demo) and `make test`.
PYTHON ?= python3
EXTRAS ?= test,bfloat16,plot
STAMP := .installed

.PHONY: install run test golden startup bench clean

# The stamp only says pip ran; it outlives a new virtualenv or a machine whose site-packages were
# reset. So it is dropped (and pip runs again) whenever $(PYTHON) does not import gradcheck_cli from
# this checkout through its installation: the check first takes this directory off sys.path.
IMPORTS_THIS_CHECKOUT = import os, sys; here = os.path.realpath(sys.argv[1]); \
	sys.path[:] = [p for p in sys.path if os.path.realpath(p or '.') != here]; import gradcheck_cli; \
	sys.exit(not os.path.realpath(gradcheck_cli.__file__).startswith(here + os.sep))
ifneq ($(shell $(PYTHON) -c "$(IMPORTS_THIS_CHECKOUT)" "$(CURDIR)" 2>/dev/null && echo yes),yes)
$(shell rm -f $(STAMP))
endif

$(STAMP): pyproject.toml
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e ".[$(EXTRAS)]"
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PYTHON) -m gradcheck_cli demo

test: $(STAMP)
	$(PYTHON) -m pytest -q

# Rewrite every case in fixtures/golden/ from the current code; review `git diff fixtures/golden` after.
golden: $(STAMP)
	$(PYTHON) tests/golden.py

# The scalar subcommands must not import numpy or rich: prints the offending imports and fails if they do.
startup: $(STAMP)
	@! $(PYTHON) -X importtime -m gradcheck_cli quadratic 2>&1 >/dev/null | grep -E '\b(numpy|rich)\b'
	@echo "gradcheck quadratic imports neither numpy nor rich"

clean:
	rm -rf $(STAMP) build *.egg-info .pytest_cache .hypothesis

# Measure start-up, harness overhead, scale and peers; prints figures and ratios, asserts no times.
bench: $(STAMP)
	$(PYTHON) benchmarks/run_all.py
