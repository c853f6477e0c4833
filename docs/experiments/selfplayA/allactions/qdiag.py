import sys, types, numpy as np, torch
torch.set_num_threads(1)
from conquian_env.vector import VectorGame
from conquian_env import kernels as K
from conquian_env.model_layouts import feature_set
from conquian_train.learner import Learner, UpdateSettings, ILLEGAL_LOGIT
from conquian_train.rollout import SeatRollout, hidden_planes
from conquian_train.recipes.selfplay import SelfPlayRun
from conquian_env.potential import potential_rows
from agents.greedy.batched import BatchGreedy

inputs = feature_set("potential").size
L = Learner((128, 128), True, UpdateSettings(2048, 1, 2e-3, .2, .01, .5, .5, .995, .95), bf16=False, seed=0,
            inputs=inputs, head="cards", features="potential")
L.load(sys.argv[1])
N = 1024
g = VectorGame(N, seed=11, first="alternate")
gr = BatchGreedy()
fake = types.SimpleNamespace(games=g, learner=L, config=types.SimpleNamespace(observation="potential"),
                             aa_rng=np.random.default_rng(0), aa_buf=None)
res = []
for step in range(200):
    data = SeatRollout(N, N * 2, hidden=True, inputs=inputs)
    st = g.state; players = st[:, K.PLAYER]; obs, mask = g.observations, g.masks
    rows = np.flatnonzero(mask.sum(1) > 1)
    actions = np.argmax(mask, 1)
    if len(rows):
        sl = data.add(rows, players[rows])
        data.obs[sl, :obs.shape[1]] = obs[rows]; potential_rows(st, rows, players[rows], data.obs[sl])
        data.mask[sl] = mask[rows]; hidden_planes(st, rows, players[rows], data.hidden[sl])
        L.sample(data, sl)
        with torch.no_grad():
            logits, _ = L.net(torch.from_numpy(data.obs[sl]).float(), torch.from_numpy(data.hidden[sl]).float())
            logits = logits.masked_fill(~torch.from_numpy(data.mask[sl].astype(bool)), ILLEGAL_LOGIT)
            pi = torch.softmax(logits, 1).numpy()
        SelfPlayRun.discard_q(fake, data, sl, rows)
        hq = np.flatnonzero(data.hasq[sl])
        if len(hq):
            ga = gr.act_batch(g, rows[hq]) - 40
            for k, gc in zip(hq, ga):
                j = sl.start + k
                legal = np.flatnonzero(data.mask[j, 40:80])
                q = data.q[j, legal]; p = pi[k, 40 + legal]
                pc = legal[np.argmax(p)]; qc = legal[np.argmax(q)]
                res.append((pc == gc, qc == gc, pc == qc, data.q[j, gc] - data.q[j, pc], (p * q).sum(), q.max(), data.q[j, gc]))
        actions[rows] = data.action[sl]
    g.step(actions)
r = np.array(res, dtype=float)
print(f"discard rows {len(r)}: policy argmax = greedy {r[:,0].mean():.3f}; Q argmax = greedy {r[:,1].mean():.3f}; policy argmax = Q argmax {r[:,2].mean():.3f}")
print(f"mean Q(greedy's discard) - Q(policy's argmax) {r[:,3].mean():+.4f} (over rows where they differ: {r[r[:,0]==0,3].mean():+.4f}, share > 0: {(r[r[:,0]==0,3]>0).mean():.3f})")
print(f"mean E_pi[Q] {r[:,4].mean():+.4f}, mean max Q {r[:,5].mean():+.4f}, mean Q(greedy) {r[:,6].mean():+.4f}")
