import sys, types, numpy as np, torch
from conquian_env.vector import VectorGame
from conquian_env import kernels as K
from conquian_env.cards import CARD_NAMES
from conquian_env.actions import DISCARD_BASE
from conquian_env.model_layouts import feature_set
from conquian_train.learner import Learner, UpdateSettings
from conquian_train.rollout import SeatRollout, hidden_planes
from conquian_train.recipes.selfplay import SelfPlayRun
from conquian_env.potential import potential_rows

ckpt = sys.argv[1]
inputs = feature_set("potential").size
L = Learner((128, 128), True, UpdateSettings(2048, 1, 2e-3, .2, .01, .5, .5, .995, .95), bf16=False, seed=0,
            inputs=inputs, head="cards", features="potential")
L.load(ckpt)
N = 256
g = VectorGame(N, seed=7, first="alternate")
fake = types.SimpleNamespace(games=g, learner=L, config=types.SimpleNamespace(observation="potential"),
                             aa_rng=np.random.default_rng(0), aa_buf=None)
data = SeatRollout(N, N * 64, hidden=True, inputs=inputs)
rng = np.random.default_rng(1)
shown = 0; stats = []
for step in range(120):
    st = g.state
    players = st[:, K.PLAYER]
    obs, mask = g.observations, g.masks
    rows = np.flatnonzero(mask.sum(1) > 1)
    sl = data.add(rows, players[rows])
    data.obs[sl, :obs.shape[1]] = obs[rows]; potential_rows(st, rows, players[rows], data.obs[sl])
    data.mask[sl] = mask[rows]; hidden_planes(st, rows, players[rows], data.hidden[sl])
    L.sample(data, sl)
    SelfPlayRun.discard_q(fake, data, sl, rows)
    for k in np.flatnonzero(data.hasq[sl]):
        j = sl.start + k; i = rows[k]; p = st[i, K.PLAYER]
        hand = [c for c in range(40) if st[i, K.H0 + p] >> c & 1]
        q = data.q[j, hand]
        logits = None
        # which discards the opponent could take (can extend its meld with its hand)
        takeable = []
        for c in hand:
            tmp = st[i:i+1].copy(); K.apply(tmp, 0, DISCARD_BASE + c)
            takeable.append(bool(tmp[0, K.LMISC] & 1))
        stats.append((np.array(takeable), q, data.value[j]))
        if shown < 6 and any(takeable) and not all(takeable) and step > 30:
            shown += 1
            print(f"game {i} step {step} player {p} stock left {20 - st[i, K.SPOS]} V(s)={data.value[j]:+.3f} "
                  f"own meld {[CARD_NAMES[c] for c in range(40) if st[i, K.M0+p]>>c&1]} "
                  f"opp meld {[CARD_NAMES[c] for c in range(40) if st[i, K.M0+1-p]>>c&1]}")
            for c, t, qq in zip(hand, takeable, q):
                print(f"   discard {CARD_NAMES[c]:>3}  opp can take={t!s:5}  Q={qq:+.3f}")
    g.step(data.action[sl] if False else np.where(mask.sum(1) > 1, 0, np.argmax(mask, 1)) * 0 + 
           np.array([data.action[sl][list(rows).index(x)] if x in set(rows) else np.argmax(mask[x]) for x in range(N)]))
# aggregate: within rows with both kinds, mean Q of takeable minus mean Q of non-takeable
d = [qq[t].mean() - qq[~t].mean() for t, qq, v in stats if t.any() and (~t).any()]
print("rows with Q:", len(stats), " rows with takeable and non-takeable discards:", len(d),
      " mean Q(takeable) - Q(other): %.4f, share negative %.3f" % (np.mean(d), np.mean(np.array(d) < 0)))
allq = np.concatenate([qq for t, qq, v in stats]); print("Q mean %.3f std %.3f; within-row std mean %.4f" % (allq.mean(), allq.std(), np.mean([qq.std() for t,qq,v in stats])))
print("mean |Qbar_uniform - V(s)|: %.4f" % np.mean([abs(qq.mean() - v) for t, qq, v in stats]))
