#!/usr/bin/env bash
# The plain wheel without any extra: every bot spec, module and command that needs an optional package
# fails in one line naming what was asked for (the spec typed, the module, the command) and the install
# line (pip install 'conquian-env[EXTRA]', or torch's CPU line); everything else works:
#   conquian-evaluate SPEC greedy     for every bot kind of the registry (a placeholder path where one is needed)
#   import MODULE                     for every module of the four packages (the numba kernels aside: the
#                                     modules above them say it)
#   gymnasium.make(..., opponent=SPEC), conquian-play --web, conquian-evaluate --ray, conquian-train RECIPE
# Usage: bash .ci/extras.sh VENV_BIN   (.ci/wheel.sh calls it with the wheel's venv, from outside the repository)
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

"$bin/python" - "$bin" <<'EOF'
import importlib
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

from agents.registry import KNOWN_BOTS
from conquian_env.extras import PACKAGES, TORCH_INSTALL, MissingExtraError
from conquian_train.recipes import names

bin_dir = Path(sys.argv[1])
absent = {m for m in PACKAGES if importlib.util.find_spec(m) is None}
failures = []


def check_line(what, line, asked):
    """``line``: one line starting with ``asked`` and naming an install line."""
    if len(line.splitlines()) != 1:
        failures.append(f"{what}: not one line:\n{line}")
    elif not line.startswith(asked) and f": {asked}" not in line:
        failures.append(f"{what}: does not name {asked!r}: {line}")
    elif "pip install 'conquian-env[" not in line and TORCH_INSTALL not in line:
        failures.append(f"{what}: names no install line: {line}")


def run(what, argv, asked):
    """A command: it works (status 0), or fails (status 2) in one line naming ``asked``."""
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    if done.returncode == 0:
        return None
    text = (done.stderr or done.stdout).strip()
    if done.returncode != 2:
        failures.append(f"{what}: status {done.returncode}:\n{text}")
        return text
    check_line(what, text, asked)
    return text


# every bot kind, through the command a user types
told = {}
for kind, info in KNOWN_BOTS.items():
    if kind == "python":
        continue
    spec = kind if info.positional is None or info.positional.startswith("[") else f"{kind}:no-such-file"
    if kind == "noisy":  # a wrapper: its spec holds another bot's (the plain install plays random's)
        spec = "noisy:0.2:random"
    if kind == "exec":  # a program in any language needs no extra: one that plays the first legal action
        program = Path("first_legal.py").resolve()
        program.write_text(f"#!{sys.executable}\nimport json, sys\nfor line in sys.stdin:\n    msg = json.loads(line)\n"
                           "    if msg['type'] == 'act':\n        print(msg['legal'][0], flush=True)\n")
        program.chmod(0o755)
        spec = f"exec:{program}"
    argv = [str(bin_dir / "conquian-evaluate"), spec, "greedy", "--games", "2", "--no-plot", "--out", f"t-{kind}"]
    told[spec] = run(f"conquian-evaluate {spec}", argv, f"bot spec {spec!r}")
    print(f"{spec:24} {told[spec] or 'plays'}")
# what the plain install cannot play must say so
expected = {"numba": ("pimc", "search"), "torch": ("ppo",), "ray": ("rllib:no-such-file",)}
for module, specs in expected.items():
    for spec in specs:
        if module in absent and told.get(spec) is None:
            failures.append(f"{spec} played without {module}")

# the same spec through gymnasium.make
code = "import gymnasium, conquian_env\ngymnasium.make('conquian_env/Conquian-v0', opponent='search')"
done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
if "numba" in absent:
    check_line("gymnasium.make(opponent='search')", done.stderr.strip().splitlines()[-1].partition(": ")[2],
               "bot spec 'search'")

# every module
for package in ("conquian_env", "agents", "conquian_arena", "conquian_train"):
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        if info.name.endswith("kernels"):
            continue
        try:
            importlib.import_module(info.name)
        except MissingExtraError as err:
            check_line(f"import {info.name}", str(err), str(err).split()[0])
            print(f"import {info.name}: {err}")
        except Exception as err:
            failures.append(f"import {info.name}: {type(err).__name__}: {err}")

# commands with flags that need an extra, and every training recipe
if "flask" in absent:
    run("conquian-play --web", [str(bin_dir / "conquian-play"), "--web"], "conquian-play --web")
if "ray" in absent:
    run("conquian-evaluate --ray", [str(bin_dir / "conquian-evaluate"), "greedy", "random", "--ray", "local",
                                    "--no-plot", "--out", "t-ray"], "conquian-evaluate --ray")
for recipe in names():
    text = run(f"conquian-train {recipe} --help", [str(bin_dir / "conquian-train"), recipe, "--help"],
               "error: conquian-train")
    print(f"conquian-train {recipe} --help: {text or 'works'}")

if failures:
    sys.exit("extras check failed:\n" + "\n".join(failures))
print(f"extras ok: every spec, module and command without {', '.join(sorted(absent))} says what to install")
EOF
