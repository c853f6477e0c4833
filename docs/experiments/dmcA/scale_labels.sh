#!/usr/bin/env bash
# The label sets of scale.py: 75,000 greedy games a set, K = 32 uniform labels, seeds 7 .. 10
# (about 380 s a set on the two cores, 2.2 GB each).  A set is written to a temporary folder and
# renamed when complete, so a rerun after a kill redoes only the missing sets.
set -euo pipefail
PY=${PY:-python}
for seed in 7 8 9 10; do
  out=runs/s$seed
  [ -f "$out/uniform.npz" ] && continue
  rm -rf "$out.tmp"
  PYTHONPATH=. $PY docs/experiments/dmcA/labels.py label \
    "{\"games\": 75000, \"K\": 32, \"out\": \"$out.tmp\", \"seed\": $seed, \"modes\": [\"uniform\"]}"
  rm -rf "$out" && mv "$out.tmp" "$out"
done
