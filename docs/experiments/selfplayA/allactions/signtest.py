# does the update's all-actions term raise E_pi[Q] on the rows it trains? (AA=1 AA_MODE=replace, value/entropy off)
import sys, types, numpy as np, torch
torch.set_num_threads(1)
from conquian_env.vector import VectorGame
from conquian_env import kernels as K
from conquian_env.model_layouts import feature_set
from conquian_train.learner import Learner, UpdateSettings, ILLEGAL_LOGIT
from conquian_train.rollout import SeatRollout, hidden_planes
from conquian_train.recipes.selfplay import SelfPlayRun
from conquian_env.potential import potential_rows
inputs = feature_set("potential").size
L = Learner((128, 128), True, UpdateSettings(2048, 1, 2e-3, .2, 0.0, 0.0, .5, .995, .95), bf16=False, seed=0,
            inputs=inputs, head="cards", features="potential")
L.load(sys.argv[1])
N = 1024
g = VectorGame(N, seed=13, first="alternate")
fake = types.SimpleNamespace(games=g, learner=L, config=types.SimpleNamespace(observation="potential"),
                             aa_rng=np.random.default_rng(0), aa_buf=None)
data = SeatRollout(N, N * 40, hidden=True, inputs=inputs)
for step in range(40):
    st = g.state; players = st[:, K.PLAYER]; obs, mask = g.observations, g.masks
    rows = np.flatnonzero(mask.sum(1) > 1); actions = np.argmax(mask, 1)
    sl = data.add(rows, players[rows])
    data.obs[sl, :obs.shape[1]] = obs[rows]; potential_rows(st, rows, players[rows], data.obs[sl])
    data.mask[sl] = mask[rows]; hidden_planes(st, rows, players[rows], data.hidden[sl])
    L.sample(data, sl); SelfPlayRun.discard_q(fake, data, sl, rows)
    actions[rows] = data.action[sl]; g.step(actions)
hq = np.flatnonzero(data.hasq[:data.count])
def epq():
    with torch.no_grad():
        lg, _ = L.net(torch.from_numpy(data.obs[hq]).float(), torch.from_numpy(data.hidden[hq]).float())
        lg = lg.masked_fill(~torch.from_numpy(data.mask[hq].astype(bool)), ILLEGAL_LOGIT)
        p = torch.softmax(lg, 1)[:, 40:80].numpy()
    return float((p * data.q[hq]).sum(1).mean())
print("discard rows", len(hq), "E_pi[Q] before %.4f" % epq())
# make every row terminal with zero advantage so only the all-actions term moves the policy
data.nxt[:data.count] = -1; data.reward[:data.count] = data.value[:data.count]
for it in range(3):
    st = L.update(data, np.random.default_rng(it))
    print(f"after pass {it+1}: E_pi[Q] {epq():.4f}  kl {st['approx_kl']:.4f}")
