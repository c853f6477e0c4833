import numpy as np, torch
from conquian_env.vector import VectorGame
from conquian_env import kernels as K
from conquian_env.actions import action_to_str, DISCARD_BASE
from conquian_env.cards import CARD_NAMES
from conquian_train.rollout import expand_discards, hidden_planes, HIDDEN_SIZE
from conquian_env.potential import potential_rows
from conquian_env.model_layouts import feature_set

rng = np.random.default_rng(0)
N = 512
g = VectorGame(N, seed=1, first="alternate")
buf = (np.zeros((N*12, K.NUM_COLUMNS), np.int64), np.zeros(N*12, np.int64), np.zeros(N*12, np.int64),
       np.zeros(N*12, bool), np.zeros(N*12, np.float32), np.zeros(N*12, np.int64))
checked = 0; ended = 0; opp_choice = 0; own_choice = 0; examples = {}
for step in range(400):
    st = g.state
    disc = np.flatnonzero(st[:, K.PHASE] == K.DISCARD)
    if len(disc):
        out, src, card, over, reward, mover = buf
        n = expand_discards(st, disc, *buf)
        for j in range(n):
            i = disc[src[j]]
            gs = g.get_game(int(i)); p = gs.player
            gs.apply(DISCARD_BASE + int(card[j])); forced = 0
            while not gs.is_terminal() and len(gs.legal_actions()) == 1:
                gs.apply(gs.legal_actions()[0]); forced += 1
            # compare with the compiled row
            tmp = VectorGame(1); tmp.state[0] = out[j]; got = tmp.get_game(0)
            assert got.to_dict() == gs.to_dict(), (got.to_dict(), gs.to_dict())
            assert over[j] == gs.is_terminal()
            if gs.is_terminal():
                ended += 1
                r = gs.returns()[p]
                assert reward[j] == r
                examples.setdefault("end", (int(i), CARD_NAMES[card[j]], forced, r, gs.winner))
            else:
                assert mover[j] == gs.player
                if gs.player == p: own_choice += 1
                else:
                    opp_choice += 1
                    if gs.face_up == card[j]:
                        examples.setdefault("opp_can_take", (int(i), CARD_NAMES[card[j]], forced, gs.legal_actions()))
            checked += 1
    a = g.random_actions(rng)
    g.step(a)
print("checked", checked, "ended", ended, "opp to choose", opp_choice, "own", own_choice)
print(examples)
