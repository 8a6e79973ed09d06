# staticexec: what a newcomer runs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TRANSFORMERS_VERSION := $(shell sed -n 's/^transformers==//p' constraints.txt)

.PHONY: install test test-release verify coverage plans plans-release determinism bench matrix clean client-install client

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch pinned exactly: its CPU build lies among pip's local wheels (find-links) on the machines this
	# runs on, and the exact pin takes it; an open `torch` requirement would pull a CUDA build from PyPI.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

# the fast tests (unit, stages, patterns, the 14 foundation architectures), on two worker processes; a file's
# tests stay on one worker, so they share its parse and jedi caches
test: install
	$(BIN)/pytest -q -n 2 --dist loadfile

# the fast tests on another transformers release, in the matrix's environment for it: make test-release RELEASE=5.17.0
RELEASE ?= 5.17.0
test-release: install
	$(BIN)/python -c "from staticexec.check.matrix import build_env; build_env('$(RELEASE)', '.matrix-envs', '.', tests=True)"
	.matrix-envs/transformers-$(RELEASE)/bin/pytest -q -n 2 --dist loadfile

# the slow sweeps: every causal LM verified, every committed plan re-checked
verify: install
	$(BIN)/pytest -q -m slow

# regenerate docs/coverage.md from a full sweep
# every task with token samples, then the tasks with images or audio with multimodal samples;
# exit status 1 (some architecture not ok) is what the report is for, 2 (bad usage) stops
coverage: install
	for task in causal-lm image-text-to-text multimodal-lm seq2seq-lm speech-seq2seq; do \
		$(BIN)/staticexec verify --all --task $$task --report docs/coverage.md || test $$? -eq 1 || exit 1; done
	for task in image-text-to-text multimodal-lm speech-seq2seq; do \
		$(BIN)/staticexec verify --all --task $$task --sample multimodal --report docs/coverage.md || test $$? -eq 1 || exit 1; done
	# targets as llm-compressor's sequential pipeline chooses them (the model's _no_split_modules)
	for task in causal-lm image-text-to-text multimodal-lm seq2seq-lm speech-seq2seq; do \
		$(BIN)/staticexec verify --all --task $$task --targets-from llmcompressor --report docs/coverage.md || test $$? -eq 1 || exit 1; done
	# finer than a decoder layer: every Linear, and the attention and MLP classes of the layers
	for targets in linear sublayer; do \
		$(BIN)/staticexec verify --all --task causal-lm --targets-from $$targets --report docs/coverage.md || test $$? -eq 1 || exit 1; done

# plans for the installed transformers' architectures, in the folder of that release
plans: install
	$(BIN)/staticexec plan --all --out staticexec/shipped/transformers-$$($(BIN)/python -c 'import transformers; print(transformers.__version__)')

# the plans of another release, made in the matrix's environment for it: make plans-release RELEASE=5.17.0
plans-release: install
	$(BIN)/python -c "from staticexec.check.matrix import build_env; build_env('$(RELEASE)', '.matrix-envs', '.')"
	.matrix-envs/transformers-$(RELEASE)/bin/staticexec plan --all --out staticexec/shipped/transformers-$(RELEASE)

# two cold `make plans` runs, jedi's cache and the plan cache emptied before each: both must give the
# committed plans byte for byte (a changed or new file under staticexec/shipped fails it)
determinism: install
	for run in 1 2; do \
		rm -rf "$$($(BIN)/python -c 'import jedi.settings; print(jedi.settings.cache_directory)')" .staticexec-cache && \
		$(MAKE) plans && \
		git diff --exit-code --stat -- staticexec/shipped/transformers-$(TRANSFORMERS_VERSION) && \
		test -z "$$(git status --porcelain -- staticexec/shipped/transformers-$(TRANSFORMERS_VERSION))" || exit 1; \
	done

# A second environment with the real client: llm-compressor 0.14 needs transformers<=5.17.
CLIENT_VENV := .venv-client
CLIENT_BIN := $(CLIENT_VENV)/bin
CLIENT_STAMP := $(CLIENT_VENV)/.installed

client-install: $(CLIENT_STAMP)

$(CLIENT_STAMP): pyproject.toml constraints-client.txt
	$(PY) -m venv $(CLIENT_VENV)
	$(CLIENT_BIN)/pip install -q --upgrade pip
	$(CLIENT_BIN)/pip install -q torch==2.13.0
	$(CLIENT_BIN)/pip install -q -c constraints-client.txt llmcompressor==0.14.0.1 transformers==5.17.0
	$(CLIENT_BIN)/pip install -q -c constraints-client.txt -e '.[test]'
	touch $(CLIENT_STAMP)

# end-to-end runs of llm-compressor's oneshot with staticexec's subgraphs (tests/client)
client: client-install
	$(CLIENT_BIN)/pytest -q -m client tests/client
# every supported transformers release in an environment of its own; each release's results are committed in
# docs/compatibility/transformers-X.json, so one release runs again on its own (make matrix RELEASES="5.20.2",
# resumed if it stopped) and docs/compatibility.md is written from the results of all of them.
# A plain `make matrix` runs only the releases whose results are incomplete or made by older analysis code.
matrix: install
	nice -n 10 $(BIN)/staticexec matrix $(if $(RELEASES),--releases $(RELEASES) --rerun)

# speed and memory, each a ratio measured side by side in one run; the comparisons with llm-compressor's
# own tracer run in the client environment (emission and chain, the chain part by part, then oneshot end to
# end in paired processes)
bench: install client-install
	$(BIN)/python benchmarks/emit_and_run.py --out docs/benchmarks.md
	$(CLIENT_BIN)/python benchmarks/versus_tracer.py --out docs/benchmarks.md
	$(CLIENT_BIN)/python benchmarks/where_time_goes.py --out docs/benchmarks.md
	$(CLIENT_BIN)/python benchmarks/oneshot_paired.py --out docs/benchmarks.md
	$(BIN)/python benchmarks/cold_analysis.py --out docs/benchmarks-analysis.md

clean:
	rm -rf $(VENV) $(CLIENT_VENV) .pytest_cache .staticexec-cache .matrix-envs
