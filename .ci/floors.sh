#!/usr/bin/env bash
# The lowest versions pyproject.toml admits for the environment's own dependencies
# (numpy, gymnasium, pettingzoo): install them in a throwaway venv and run the
# PettingZoo API test and the Gymnasium single-agent view on them.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(mktemp -d)/floors"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q "numpy==1.24.*" "gymnasium==1.0.0" "pettingzoo==1.25.0"
"$venv/bin/python" - <<'PY'
import sys
sys.path.insert(0, ".")
import gymnasium, numpy, pettingzoo
import conquian_env
from pettingzoo.test import api_test, seed_test
api_test(conquian_env.env(), num_cycles=300)
seed_test(conquian_env.env, num_cycles=300)
env = gymnasium.make("conquian_env/Conquian-v0", opponent=lambda obs, mask, view: int(mask.nonzero()[0][0]))
obs, info = env.reset(seed=1)
steps = 0
for _ in range(2000):
    obs, reward, done, truncated, info = env.step(int(env.unwrapped.action_masks().nonzero()[0][-1]))
    steps += 1
    if done:
        env.reset()
print(f"floors OK: numpy {numpy.__version__}, gymnasium {gymnasium.__version__}, "
      f"pettingzoo {pettingzoo.__version__}: api_test, seed_test, {steps} single-agent steps")
PY
rm -rf "$(dirname "$venv")"
