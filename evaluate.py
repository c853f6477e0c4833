"""Tournaments between Conquian bots: ``python evaluate.py --help`` (in the repository).

A thin script: the knobs are the fields of :class:`conquian_arena.tournament.TournamentConfig`
and the work is done by :mod:`conquian_arena` (schedule, workers and the resumable
``games.jsonl`` in :mod:`~conquian_arena.tournament`, statistics in
:mod:`~conquian_arena.stats`, reports in :mod:`~conquian_arena.report`).  Installed, the same
command is ``conquian-evaluate``::

    python evaluate.py greedy random --games 200 -j 2          # a few seconds
    python evaluate.py random pimc:iterations=100 --gauntlet greedy --games 40 -j 2
"""

from __future__ import annotations

import sys

from conquian_arena.tournament import TournamentConfig, main, run_tournament

__all__ = ["TournamentConfig", "main", "run_tournament"]

if __name__ == "__main__":
    sys.exit(main())
