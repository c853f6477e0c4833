#!/usr/bin/env bash
# AgileRL: conquian_env.integrations.agilerl and its example (examples/agilerl_dqn.py) in a venv of its own: agilerl pins
# pettingzoo<1.27, which the main venv must not get.  The venv sees the main .venv's
# packages (torch, numpy, this project) through a .pth file, so pip adds only agilerl, its
# own dependencies and the older pettingzoo.  An install that fails (no network, a
# resolver conflict upstream) is reported and skipped; a failing test fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
main_site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
venv="$(mktemp -d)/agilerl"
python3 -m venv "$venv"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
printf '%s\n%s\n' "$main_site" "$PWD" > "$site/main_venv.pth"
if ! "$venv/bin/python" -m pip install -q "agilerl>=2.58" "peft>=0.21" "pettingzoo>=1.25,<1.27"; then
    echo "warning: agilerl could not be installed: its example was not run"
    exit 0
fi
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_integrations.py -k agilerl
rm -rf "$(dirname "$venv")"
