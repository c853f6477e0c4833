"""The one seed derivation of the project: independent seeds from a seed and a path of words.

``derive_seed(seed, *words)`` hashes the non-negative integers (numpy's
:class:`~numpy.random.SeedSequence`, whose hashing mixes every word into every bit) into
a 63-bit seed.  Seeds derived from different words are independent, and one cannot be
computed from another without the words it came from; the next one is not the previous
one plus one.  Tournaments derive their deal and bot seeds with it
(:mod:`conquian_arena.tournament`), the browser front end its per-game seeds
(:mod:`conquian_arena.webplay`).

**Named streams.**  Every use of a seed has a name here: a stream word (the constants
below, the first word after the seed) or a small function.  Their values are the ones the
project used before they had names, so the same seed still gives the same games (changing
one changes every game that derives from it).  Most go through :func:`derive_seed`; a few
older uses keep their own arithmetic, named and documented here rather than written out
where they are used: :func:`seat_seed` (``seed * 2 + seat``), :func:`stream_rng` and
:func:`bot_game_rng` (numpy generators on the words' ``SeedSequence``).  New code uses
:func:`derive_seed` with a new stream word.
The training recipes' stream words are theirs (:mod:`conquian_train.seeding`).
"""

from __future__ import annotations

import random

import numpy as np

# ---------------------------------------------------------------- stream words (derive_seed(seed, WORD, ...))
#: a tournament's deal ``d``: ``derive_seed(seed, TOURNAMENT_DEAL, d)``
TOURNAMENT_DEAL = 0
#: the players' seed of a tournament game: ``derive_seed(seed, TOURNAMENT_GAME, deal, swap)``
TOURNAMENT_GAME = 1
#: the seed a tournament bot is built with: ``derive_seed(seed, TOURNAMENT_BOT, bot index)``
TOURNAMENT_BOT = 3
#: the vector environments' opponent: ``derive_seed(seed, VECTOR_OPPONENT)``
VECTOR_OPPONENT = 1
#: the seed an ``exec:`` bot's program is told for a game: ``derive_seed(game seed, PROGRAM_GAME, bot seed)``
PROGRAM_GAME = 5

# ---------------------------------------------------------------- stream words (stream_rng(seed, WORD, ...))
#: the Elo bootstrap's resampling generator: ``stream_rng(seed, BOOTSTRAP)``
BOOTSTRAP = 2
#: the integrations' (RLlib, Tianshou) first-player draws: ``stream_rng(seed, FIRST_PLAYER)``
FIRST_PLAYER = 1


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


def seat_seed(seed: int, seat: int) -> int:
    """The seed a player in ``seat`` gets for a game played with ``seed``
    (:func:`conquian_arena.match.play_game`): ``seed * 2 + seat``, as always (not
    :func:`derive_seed`: the games of every tournament and test depend on it)."""
    return seed * 2 + seat


def game_number_seed(seed: int, game: int) -> int:
    """The seed of game number ``game`` of a series (the browser front end's games):
    ``derive_seed(seed, game)``."""
    return derive_seed(seed, game)


def stream_rng(*words: int) -> np.random.Generator:
    """A numpy generator on ``SeedSequence(words)`` (``numpy.random.default_rng(list(words))``),
    e.g. ``stream_rng(seed, BOOTSTRAP)``: the form some streams used before
    :func:`derive_seed` (its numbers differ from ``default_rng(derive_seed(*words))``)."""
    return np.random.default_rng([int(w) for w in words])


def bot_game_rng(game_seed: int, bot_seed: int | None) -> np.random.Generator:
    """A bot's generator for one game (``Agent.reset(player, game_seed)``): from the game's
    seed and the bot's own (0 when it has none), ``default_rng([game_seed, bot_seed])``."""
    return stream_rng(game_seed, 0 if bot_seed is None else bot_seed)


def mixed_seed_31(game_seed: int, bot_seed: int) -> int:
    """A 31-bit seed mixing a game's seed with a bot's own (how the OpenSpiel bots of
    :mod:`agents.openspiel_bot` seed a game): ``SeedSequence([game_seed, bot_seed])``'s first
    32-bit word shifted right by one, as always."""
    return int(np.random.SeedSequence([int(game_seed), int(bot_seed)]).generate_state(1)[0] >> 1)


def program_game_seed(game_seed: int, bot_seed: int | None) -> int:
    """The seed an ``exec:`` bot's program is told for one game (:mod:`agents.program`): from the
    game's seed and the bot's own (0 when it has none), ``derive_seed(game_seed, PROGRAM_GAME,
    bot_seed)`` cut to 53 bits, so that every JSON reader (JavaScript's numbers too) holds it exactly."""
    return derive_seed(game_seed, PROGRAM_GAME, 0 if bot_seed is None else bot_seed) >> 10


def bot_game_random(game_seed: int, bot_seed: int | None) -> random.Random:
    """A search bot's ``random.Random`` for one game: seeded by the text ``f"{game_seed}/{bot_seed}"``
    (``"None"`` for a bot without a seed of its own), as always."""
    return random.Random(f"{game_seed}/{bot_seed}")
