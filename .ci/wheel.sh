#!/usr/bin/env bash
# The plain wheel, as a user gets it: built from this tree, installed into a fresh venv with its
# required dependencies only (numpy, gymnasium, pettingzoo, pillow: no extra, no numba, no torch,
# pip's cache kept), and used from a folder outside the repository:
#   conquian-evaluate scorer greedy --games 20   plays and summarizes (no scipy, matplotlib or tqdm needed)
#   conquian-evaluate pimc greedy                fails in one line naming the [fast] extra (no numba)
#   conquian-evaluate ppo greedy                 fails in one line naming torch and its CPU install line
#   conquian-play --rules                        prints the rule book shipped in the wheel
#   PettingZoo's api_test, and pettingzoo / gymnasium make() by name without importing conquian_env first.
# Usage: bash .ci/wheel.sh  (PYTHON=python3.12 bash .ci/wheel.sh for another interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$python" -m venv "$work/venv"
bin="$work/venv/bin"
# pip builds the wheel through the PEP 517 backend of pyproject.toml in an isolated environment
"$bin/python" -m pip install -q --upgrade pip
"$bin/python" -m pip wheel -q --no-deps --wheel-dir "$work/dist" "$repo"
wheel="$(ls "$work"/dist/conquian_env-*.whl)"
"$bin/python" -m pip install -q "$wheel"
rm -rf "$repo/build"  # setuptools' staging folder (git-ignored): a later editable install must not see it

mkdir "$work/elsewhere"
cd "$work/elsewhere"
fail() { echo "wheel check failed: $*" >&2; exit 1; }

"$bin/python" - <<'EOF' || fail "the plain install has packages it should not"
import importlib.util, sys
extra = [name for name in ("torch", "numba", "scipy", "matplotlib", "tqdm") if importlib.util.find_spec(name)]
sys.exit(f"installed without asking: {extra}" if extra else 0)
EOF
"$bin/python" -c "import conquian_env, os, sys; sys.exit(0 if '$repo' not in conquian_env.__file__ else 1)" \
    || fail "conquian_env was imported from the repository, not from the wheel"

out="$("$bin/conquian-evaluate" scorer greedy --games 20 --out "$work/t" 2>"$work/err")" \
    || { cat "$work/err"; fail "conquian-evaluate scorer greedy exited $?"; }
grep -q "Student t\|Wilson\|scored" <<<"$out" || { echo "$out"; fail "no score interval in the summary"; }
grep -q "^note: no matplotlib" "$work/err" || { cat "$work/err"; fail "no note that summary.png was skipped"; }
test -s "$work/t/summary.json" || fail "no summary.json"

one_line_error() {  # $1: what must be named, then the command
    local must="$1"; shift
    if "$@" >"$work/out" 2>"$work/err"; then fail "$* worked on a plain install"; fi
    test "$(wc -l <"$work/err")" -eq 1 || { cat "$work/err"; fail "$*: not a one-line error"; }
    grep -qF -- "$must" "$work/err" || { cat "$work/err"; fail "$*: the error does not name $must"; }
    cat "$work/err"
}
if "$bin/python" -c "import numba" 2>/dev/null; then
    "$bin/conquian-evaluate" pimc greedy --games 2 --out "$work/i" >/dev/null
else
    one_line_error "conquian-env[fast]" "$bin/conquian-evaluate" pimc greedy --games 2 --out "$work/i"
fi
one_line_error "download.pytorch.org/whl/cpu" "$bin/conquian-evaluate" ppo greedy --games 2 --out "$work/p"
grep -qF "[train]" "$work/err" && fail "the ppo error points to [train], which pulls a CUDA torch through SB3"
bash "$repo/.ci/extras.sh" "$bin" || fail "a spec, module or command without its extra did not say what to install"

"$bin/conquian-play" --rules | grep -q "Conquian" || fail "conquian-play --rules printed no rules"

"$bin/python" - <<'EOF' || fail "PettingZoo's api_test or make() by name"
import gymnasium as gym
import pettingzoo
from pettingzoo.test import api_test

# by name, with the libraries' module prefix (nothing imported first)
env = gym.make("conquian_env:conquian_env/Conquian-v0")
env.reset(seed=0)
import conquian_env

api_test(conquian_env.env(), num_cycles=200)
print("api_test passed; gym.make by module prefix works")
EOF
bash "$repo/.ci/first_run.sh" "$bin" "$wheel" "$work"  # last (it installs numba): a compiled bot's first run
echo "wheel ok: $(basename "$wheel")"
