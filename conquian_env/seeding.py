"""The one seed derivation of the project: independent seeds from a seed and a path of words.

``derive_seed(seed, *words)`` hashes the non-negative integers (numpy's
:class:`~numpy.random.SeedSequence`, whose hashing mixes every word into every bit) into
a 63-bit seed.  Seeds derived from different words are independent, and one cannot be
computed from another without the words it came from; the next one is not the previous
one plus one.  Tournaments derive their deal and bot seeds with it
(:mod:`conquian_arena.tournament`), the browser front end its per-game seeds
(:mod:`conquian_arena.webplay`).
"""

from __future__ import annotations

import numpy as np


def derive_seed(*words: int) -> int:
    """A seed in ``[0, 2**63)`` from ``words`` (non-negative integers, at least one).

    The same words give the same seed on every platform and numpy version that keeps
    ``SeedSequence``'s hashing (a documented guarantee of numpy).  Raises ``TypeError`` for a
    word that is not an integer (a ``bool`` is not one) and ``ValueError`` for a negative one.
    """
    if not words:
        raise ValueError("derive_seed needs at least one word (a seed)")
    for word in words:
        if isinstance(word, bool) or not isinstance(word, (int, np.integer)):
            raise TypeError(f"derive_seed words must be integers, got {word!r} ({type(word).__name__})")
        if word < 0:
            raise ValueError(f"derive_seed words must be non-negative, got {word}")
    state = np.random.SeedSequence([int(w) for w in words]).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))
