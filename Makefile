# One command each on a fresh machine: `make demo` and `make test` create .venv when missing.

VENV   := .venv
PYTHON := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint pytest clean

# The virtual environment, with tirc installed editable; redone when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PYTHON) samples/demo.py

# ruff, then pytest over tests/ (tests/lit/test_lit.py runs the lit suite inside it), one
# pytest-xdist worker per core; --dist loadfile keeps each test file in one worker, so a
# module fixture (compiled libraries, the lit run) is built once and the ptxas usage
# reports under out/ are written whole.
test: lint pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .

pytest: $(STAMP)
	$(VENV)/bin/pytest -n auto --dist loadfile tests

clean:
	rm -rf build dist .pytest_cache .ruff_cache tests/lit/*/Output
