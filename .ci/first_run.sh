#!/usr/bin/env bash
# A compiled bot's first run, as a user meets it: the wheel's [fast] extra installed into the fresh
# venv of .ci/wheel.sh, numba's cache cold, from a folder outside the repository:
#   conquian-evaluate pimc greedy --games 2 -j 1     prints the compiling line (what, once, how long)
#   the same again                                   loads every kernel from the cache: no compiling line
#   conquian-evaluate search greedy --games 2 -j 1   compiles only the belief search's few kernels
# and prints each run's wall and CPU time (user + sys) and when the compiling line came
# (docs/benchmarks.md, "A compiled bot's first run").
# Usage: bash .ci/first_run.sh VENV_BIN WHEEL WORK_DIR (.ci/wheel.sh calls it after its own checks)
set -euo pipefail
bin="$1"
wheel="$2"
work="$3"
fail() { echo "first-run check failed: $*" >&2; exit 1; }

"$bin/python" -m pip install -q "$wheel[fast]"
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"  # first: from the repository, python would import its conquian_env, not the wheel's
# the package folder of a fresh venv is writable: numba caches next to the installed sources
unset NUMBA_CACHE_DIR
site="$("$bin/python" -c "import conquian_env, os; print(os.path.dirname(os.path.dirname(conquian_env.__file__)))")"
find "$site/conquian_env" "$site/agents" -name '*.nb[ic]' -delete  # cold, whatever ran before

timed() {  # $1: a name; the command after it; prints one line of times, keeps stderr in $work/$1.err
    local name="$1"; shift
    "$bin/python" - "$work/$name.err" "$@" <<'EOF'
import resource, subprocess, sys, time
err, cmd = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
notice = None
with open(err, "w") as f:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if notice is None and line.startswith("conquian-env: compiling"):
            notice = time.perf_counter() - start
        f.write(line)
    code = proc.wait()
wall = time.perf_counter() - start
use = resource.getrusage(resource.RUSAGE_CHILDREN)
said = f"compiling line at {notice:.1f} s" if notice is not None else "no compiling line"
shown = [c for k, c in enumerate(cmd) if k and c != "--out" and cmd[k - 1] != "--out"]
print(f"{' '.join(shown)}: wall {wall:.1f} s, cpu {use.ru_utime + use.ru_stime:.1f} s "
      f"(user {use.ru_utime:.1f} + sys {use.ru_stime:.1f}), {said}")
sys.exit(code)
EOF
}

timed first "$bin/conquian-evaluate" pimc greedy --games 2 -j 1 --out "$work/first" --no-progress \
    || { cat "$work/first.err"; fail "the first run exited $?"; }
grep -q "^conquian-env: compiling .* for this machine" "$work/first.err" \
    || { cat "$work/first.err"; fail "the first run printed no compiling line"; }
test "$(grep -c "^conquian-env: compiling" "$work/first.err")" -eq 1 \
    || { cat "$work/first.err"; fail "the compiling line was printed more than once"; }
grep "^conquian-env: compiling" "$work/first.err"

timed second "$bin/conquian-evaluate" pimc greedy --games 2 -j 1 --out "$work/second" --no-progress \
    || { cat "$work/second.err"; fail "the second run exited $?"; }
grep -q "^conquian-env: compiling" "$work/second.err" \
    && { cat "$work/second.err"; fail "the second run compiled again: a kernel missed numba's cache"; }

timed search "$bin/conquian-evaluate" search greedy --games 2 -j 1 --out "$work/search" --no-progress \
    || { cat "$work/search.err"; fail "search's first run exited $?"; }
echo "first run ok"
