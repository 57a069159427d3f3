# The README's two commands: `make run` (the chapter's demo) and `make test`.
PYTHON ?= python3
EXTRAS ?= test,bfloat16,plot
STAMP := .installed

.PHONY: install run test golden bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e ".[$(EXTRAS)]"
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PYTHON) -m gradcheck_cli demo

test: $(STAMP)
	$(PYTHON) -m pytest -q

clean:
	rm -rf $(STAMP) build *.egg-info .pytest_cache .hypothesis
