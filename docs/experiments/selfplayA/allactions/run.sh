#!/bin/bash
cd /work/scratch/s8/aa
export PYTHONPATH=/work/scratch/s8/aa OMP_WAIT_POLICY=PASSIVE AA=1 AA_MODE=${AA_MODE:-replace} AA_COEF=${AA_COEF:-1.0} AA_FRAC=1.0 AA_NORM=${AA_NORM:-q} AA_CLIP=${AA_CLIP:-0}
exec /work/main/.venv/bin/python -m conquian_train.cli selfplay --out runs/$1 --total-frames 30000000 --eval-every 5000000 --checkpoint-every 5000000 --snapshot-every 10000000 --torch-threads 1 --no-progress
