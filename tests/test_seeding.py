"""Named seed streams (conquian_env.seeding): every stream keeps the values it had before it
had a name (the same seed, the same games), and no module writes a derivation by hand."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np

from conquian_env import seeding
from conquian_env.seeding import (
    bot_game_random,
    bot_game_rng,
    derive_seed,
    game_number_seed,
    mixed_seed_31,
    seat_seed,
    stream_rng,
)
from conquian_train import seeding as train_seeding
from conquian_train.seeding import pool_member_seed, worker_seed

ROOT = Path(__file__).resolve().parents[1]


def test_the_stream_words_keep_their_values():
    words = ("TOURNAMENT_DEAL", "TOURNAMENT_GAME", "TOURNAMENT_BOT", "VECTOR_OPPONENT", "BOOTSTRAP")
    assert tuple(getattr(seeding, w) for w in words) == (0, 1, 3, 1, 2)
    # the training recipes' words are theirs (the environment names no recipe)
    words = ("EXIT_GAMES", "EXIT_ANALYSIS", "WARM_START_GAMES", "IMITATION_SPLIT", "PPO_SEGMENT")
    assert tuple(getattr(train_seeding, w) for w in words) == (23, 29, 11, 5, 31)
    words = ("BELIEF_DEALS", "BELIEF_BOTS", "BELIEF_FIT", "DISTILL_DEALS", "DISTILL_SEATS", "DISTILL_LABELS")
    words += ("DISTILL_FIT",)
    assert tuple(getattr(train_seeding, w) for w in words) == (0xBE11E0, 0xBE11E1, 0xBE11E2, *range(0xD1571, 0xD1575))
    assert not set(words) & set(vars(seeding))


def test_derived_seeds_are_the_published_ones():
    # SeedSequence's hashing is a numpy guarantee; these are the values games were played with
    assert derive_seed(7, seeding.TOURNAMENT_DEAL, 3) == 5093101976529578930
    assert derive_seed(7, train_seeding.EXIT_GAMES, 3) == 1028447516139558492
    assert derive_seed(7, seeding.VECTOR_OPPONENT) == 3317731564112288844


def test_the_named_functions_are_the_old_arithmetic():
    for seed in (0, 5, 2**40):
        assert [seat_seed(seed, s) for s in (0, 1)] == [seed * 2, seed * 2 + 1]
        assert worker_seed(seed, 3) == seed * 1000 + 3
        assert pool_member_seed(seed, 2) == game_number_seed(seed, 2) == derive_seed(seed, 2)
        draws = stream_rng(seed, seeding.BOOTSTRAP, 9).integers(2**62, size=4)
        assert (draws == np.random.default_rng([seed, 2, 9]).integers(2**62, size=4)).all()
        assert (bot_game_rng(seed, None).random(3) == np.random.default_rng([seed, 0]).random(3)).all()
        assert (bot_game_rng(seed, 4).random(3) == np.random.default_rng([seed, 4]).random(3)).all()
        assert bot_game_random(seed, None).random() == random.Random(f"{seed}/None").random()
    assert mixed_seed_31(9, 4) == int(np.random.SeedSequence([9, 4]).generate_state(1)[0] >> 1) < 2**31
    assert (stream_rng(np.int64(3), 2).random(2) == stream_rng(3, 2).random(2)).all()


# the forms the streams had before they had names, written out where they were used
HAND_WRITTEN = [
    r"seed \* 2 \+ seat",
    r"seed \* 1000 \+",
    r"default_rng\(\[seed",
    r"SeedSequence\(\[seed, 2\]\)",
    r"derived_seed = derive_seed",
    r"SeedSequence\(\[seed, self",
    r"derive_seed\([^)]*, (?:0|1|3|11|23|29), ",
]


def test_no_module_writes_a_seed_derivation_by_hand():
    found = []
    for folder in ("conquian_env", "agents", "conquian_arena", "conquian_train"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in ("conquian_env/seeding.py", "conquian_train/seeding.py"):
                continue
            text = path.read_text(encoding="utf-8")
            found += [f"{rel}: {p}" for p in HAND_WRITTEN if re.search(p, text)]
    assert not found, "use the named streams of conquian_env.seeding or conquian_train.seeding: " + "; ".join(found)
