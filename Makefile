# make test    create .venv, install everything, run the default test suite
# make test-commands  make train, make train-exit, make train-ppo and every recipe's quick run, tiny, two workers
# make test-integrations  install Ray, RLlib, Tianshou, OpenSpiel and run their tests
# make test-jax  the JAX engine (conquian_env.jax, extra "jax") in a venv of its own, .venv-jax, on JAX's CPU backend
# make bench-jax  the JAX engine's steps/s next to the numba engine (on the CPU; see benchmarks/bench_jax.py --gpu)
# make bench   speed benchmarks (print numbers); make bench-reference adds OpenSpiel's gin_rummy
# make bench-vector  the batched engine by N, with OpenSpiel and the scalar engine, and PPO batched vs per-game
# make train   the shipped scorer's recipe, short (train.py distill: 40,000 greedy games labelled, then the deep-sets
#              scorer's fit with its curve from the untrained network) into runs/default/{labels,fit}; resumes;
#              make train-exit: expert iteration's short preset (train.py exit, 4 rounds of 2000 games) into runs/exit;
#              make train-ppo: the MaskablePPO recipe (train.py ppo) into runs/ppo; train.py RECIPE is conquian-train RECIPE
#              make train-ppo-quick: its quick preset, a curve that moves in about a minute (runs/ppo-quick)
# make train-selfplay  self-play from scratch (train.py selfplay, 50M frames) into runs/selfplay; resumes
# make train-first     the guide's first training run: 2M self-play frames into runs/first (under a minute)
# make lint    ruff
# make docs    the documentation site into site/ (mkdocs-material, mkdocstrings; offline, warnings are errors;
#              npm fetches the iframe-worker shim for the search from disk), from .venv-docs: the docs extra only
#              (no torch, not the package: the API pages are read from the source)
# PyTorch: the CPU build torch==$(TORCH_SPEC) is installed first when the venv has no torch.
#   Pick another build with e.g.  make TORCH_SPEC="torch==2.9.1" test   or install torch into
#   .venv yourself before running make (an existing torch is kept).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: docs-vendor install test test-slow test-commands test-all test-integrations test-jax bench-jax bench bench-reference bench-vector train train-exit train-ppo train-ppo-quick train-selfplay train-first lint docs test-docs clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -e ".[train,dev]"
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# the README's and the training guide's commands (make train, make train-exit, make train-ppo and each
# recipe's quick run) at a tiny size with two workers, in a temporary folder (tests/test_commands.py)
test-commands: $(STAMP)
	$(BIN)/python -m pytest -q -m slow tests/test_commands.py

# Ray (distributed tournaments), RLlib, Tianshou and OpenSpiel: optional extras, installed here on demand
# (ray[rllib] pins its own gymnasium); their tests, slow ones included
test-integrations: $(STAMP)
	$(BIN)/python -m pip install -e ".[ray,rllib,tianshou,openspiel]"
	$(BIN)/python -m pytest -q -m "slow or not slow" tests/test_integrations.py tests/test_ray_tournament.py tests/test_openspiel.py

# JAX and Pgx in a venv apart from .venv (no torch there, nothing of theirs in the main env);
# every test of tests/test_jax.py, slow ones included, on the CPU backend
JAX_VENV ?= .venv-jax
JAX_STAMP := $(JAX_VENV)/.installed
$(JAX_STAMP): pyproject.toml Makefile
	test -x $(JAX_VENV)/bin/python || $(PYTHON) -m venv $(JAX_VENV)
	$(JAX_VENV)/bin/python -m pip install -e ".[jax,fast]" "pytest>=8"
	touch $(JAX_STAMP)

test-jax: $(JAX_STAMP)
	JAX_PLATFORMS=cpu $(JAX_VENV)/bin/python -m pytest -q -m "slow or not slow" tests/test_jax.py

bench-jax: $(JAX_STAMP)
	$(JAX_VENV)/bin/python benchmarks/bench_jax.py

test-all: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m "slow or not slow"

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_env.py

# also measures OpenSpiel's C++ gin_rummy in the same process, for a ratio
bench-reference: $(STAMP)
	$(BIN)/python -c "import pyspiel" 2>/dev/null || $(BIN)/python -m pip install open_spiel
	$(BIN)/python benchmarks/bench_env.py

# the batched engine (conquian_env.vector) against the same references, plus MaskablePPO batched vs per-game
bench-vector: $(STAMP)
	$(BIN)/python -c "import pyspiel" 2>/dev/null || $(BIN)/python -m pip install open_spiel
	$(BIN)/python benchmarks/bench_vector.py

# RUN: the run folder (an existing one is resumed); TRAIN_ARGS: more options (distill fit's for train, exit's for
# train-exit, ppo's for train-ppo: on a resume too); TRAIN_GAMES: the games train labels; LABEL_ARGS: more options of train's labelling (distill generate)
RUN ?= runs/default
EXIT_RUN ?= runs/exit
PPO_RUN ?= runs/ppo
SELFPLAY_RUN ?= runs/selfplay
FIRST_RUN ?= runs/first
TRAIN_ARGS ?=
TRAIN_GAMES ?= 40000
LABEL_ARGS ?=
QUICK ?= --games 2000 --rounds 4 --eval-games 2000 --workers 2
# PPO_NEW, SELFPLAY_NEW, FIRST_NEW: the options of a new run only (a resume takes them from the run's config.json)
PPO_NEW ?=
SELFPLAY_NEW ?= --total-frames 50000000 --eval-every 5000000 --checkpoint-every 10000000 --snapshot-every 10000000
FIRST_NEW ?= --total-frames 2000000 --eval-every 500000 --checkpoint-every 1000000 --snapshot-every 1000000 \
	--eval-games 1000
train: $(STAMP)
	$(BIN)/python train.py distill generate --out $(RUN)/labels --games $(TRAIN_GAMES) $(LABEL_ARGS)
	$(BIN)/python train.py distill fit --data $(RUN)/labels --out $(RUN)/fit --holdout 5 --eval-games 2000 --workers 0 $(TRAIN_ARGS)

train-exit: $(STAMP)
	if [ -f $(EXIT_RUN)/config.json ]; then \
		$(BIN)/python train.py exit --resume $(EXIT_RUN) $(TRAIN_ARGS); \
	else \
		$(BIN)/python train.py exit --out $(EXIT_RUN) $(QUICK) $(TRAIN_ARGS); \
	fi

train-ppo: $(STAMP)
	if [ -f $(PPO_RUN)/checkpoints/latest.zip ]; then \
		$(BIN)/python train.py ppo --resume $(PPO_RUN) $(TRAIN_ARGS); \
	else \
		$(BIN)/python train.py ppo --out $(PPO_RUN) $(PPO_NEW) $(TRAIN_ARGS); \
	fi

# self-play from scratch (train.py selfplay): 50M frames (about 8 minutes on two cores), an evaluation every 5M, resumed where it stopped
train-selfplay: $(STAMP)
	if [ -f $(SELFPLAY_RUN)/checkpoints/state.json ]; then \
		$(BIN)/python train.py selfplay --resume $(SELFPLAY_RUN) $(TRAIN_ARGS); \
	else \
		$(BIN)/python train.py selfplay --out $(SELFPLAY_RUN) $(SELFPLAY_NEW) $(TRAIN_ARGS); \
	fi

# the first training run of the guide: self-play for 2M frames, a curve point every 500k (under a minute)
train-first: $(STAMP)
	if [ -f $(FIRST_RUN)/checkpoints/state.json ]; then \
		$(BIN)/python train.py selfplay --resume $(FIRST_RUN) $(TRAIN_ARGS); \
	else \
		$(BIN)/python train.py selfplay --out $(FIRST_RUN) $(FIRST_NEW) $(TRAIN_ARGS); \
	fi


# the PPO recipe's quick preset (docs/training.md, "A first run in a minute"): from scratch against random,
# no warm start, a small network; tests/test_ppo_first_run.py reads these flags from here
PPO_QUICK_RUN ?= runs/ppo-quick
PPO_QUICK ?= --total-steps 196608 --bc-games 0 --n-envs 64 --n-steps 128 --batch-size 1024 --learning-rate 3e-4 \
	--clip-range 0.2 --ent-coef 0.01 --features raw --net-arch 64 64 --opponents random@1 \
	--eval-opponents random greedy --best-by random --eval-games 200 --eval-every 65536 --checkpoint-every 65536 \
	--snapshot-every 0
train-ppo-quick: $(STAMP)
	if [ -f $(PPO_QUICK_RUN)/checkpoints/latest.zip ]; then \
		$(BIN)/python train.py ppo --resume $(PPO_QUICK_RUN) $(TRAIN_ARGS); \
	else \
		$(BIN)/python train.py ppo --out $(PPO_QUICK_RUN) $(PPO_QUICK) $(TRAIN_ARGS); \
	fi

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# the site's tools alone, in a venv of their own: the docs extra's requirements, read from pyproject.toml (the
# package itself is not installed: griffe reads its source, nothing is imported); --strict: a broken link,
# anchor or docstring reference fails the build
DOCS_VENV ?= .venv-docs
DOCS_STAMP := $(DOCS_VENV)/.installed
MKDOCS_QUIET := DISABLE_MKDOCS_2_WARNING=true NO_MKDOCS_2_WARNING=1
$(DOCS_STAMP): pyproject.toml Makefile
	test -x $(DOCS_VENV)/bin/python || $(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -c 'import re; t = open("pyproject.toml").read(); \
		m = re.search(r"^docs = \[(.*?)\]$$", t, re.M | re.S); print("\n".join(re.findall(r"\"([^\"]+)\"", m.group(1))))' \
		> $(DOCS_VENV)/requirements.txt
	$(DOCS_VENV)/bin/python -m pip install -q -r $(DOCS_VENV)/requirements.txt
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP) docs-vendor
	$(MKDOCS_QUIET) $(DOCS_VENV)/bin/mkdocs build --strict

# the search from disk (file://) needs material's iframe-worker shim: fetched from the npm registry into
# the git-ignored .docs-vendor/ (never committed); docs/_ext/offline_search.py copies it into the site
IFRAME_WORKER ?= iframe-worker@1.0.4
VENDOR_SHIM := .docs-vendor/iframe-worker/shim/index.js

docs-vendor: $(VENDOR_SHIM)

$(VENDOR_SHIM):
	rm -rf .docs-vendor/iframe-worker .docs-vendor/pack && mkdir -p .docs-vendor/pack
	cd .docs-vendor/pack && npm pack --silent "$(IFRAME_WORKER)" >/dev/null && tar xzf iframe-worker-*.tgz
	mv .docs-vendor/pack/package .docs-vendor/iframe-worker && rm -rf .docs-vendor/pack
	test -f $(VENDOR_SHIM)

# builds the site and follows every internal link in headless Chromium (tests/test_docs.py)
# (in .venv, with the docs extra added there too, so that the tests reading mkdocs.yml and the docstring
# converter run rather than skip)
test-docs: $(STAMP) docs
	$(BIN)/python -c "import mkdocs, material, mkdocstrings_handlers.python, mkdocs_gen_files, mkdocs_literate_nav" \
		2>/dev/null || $(BIN)/python -m pip install -e ".[docs]"
	CONQUIAN_DOCS_SITE=site $(BIN)/python -m pytest -q -m "slow or not slow" tests/test_docs.py

clean:
	rm -rf $(VENV) $(JAX_VENV) $(DOCS_VENV) site .docs-vendor build *.egg-info .pytest_cache .ruff_cache .hypothesis
