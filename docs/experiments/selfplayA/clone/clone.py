"""Diagnostic: can the self-play network (card head over "potential", 128x128) hold a policy above greedy?
Clone the shipped scorer (0.545 vs greedy) by cross-entropy on its own games, evaluate vs greedy.

    python clone.py OUT scorer 600000 8      # labels (OUT/labels.npz), then 8 epochs of the card head
    CLONE_SEED=456 python clone.py OUT2 scorer 1400000 0             # 1.4M more on other deals
    python clone2.py OUT/labels.npz,OUT2/labels.npz nb 6 OUT/nb2m    # the 2M rows of the table
"""
import os, sys, time
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy as np, torch
from agents.batched import make_batch_opponent
from agents.networks.batched import BatchPolicy, policy_inputs
from agents.networks.card_head import CardHead, card_planes
from agents.networks.ppo import NumpyPolicy
from agents.networks.selfplay import save_selfplay
from conquian_env.model_layouts import FEATURE_SETS
from conquian_env.vector import VectorGame
from conquian_env.kernels import PLAYER
from conquian_train.learner import Network, ILLEGAL_LOGIT
from conquian_train.recipes.selfplay import duplicate_score

torch.set_num_threads(2)
OUT = sys.argv[1]; TEACHER = sys.argv[2]; LABELS = int(sys.argv[3]); EPOCHS = int(sys.argv[4])
os.makedirs(OUT, exist_ok=True)
F = "potential"
data = os.path.join(OUT, "labels.npz")
if not os.path.exists(data):
    t0 = time.time()
    N = 2048
    g = VectorGame(N, seed=int(os.environ.get("CLONE_SEED", "123")), first="alternate")
    teacher = make_batch_opponent(TEACHER, 7)
    greedy = make_batch_opponent("greedy", 8)
    tseat = np.arange(N) % 2  # the teacher's seat per game (games end and redeal: fine, the seat stays)
    xs, ms, acts = [], [], []
    n = 0
    while n < LABELS:
        players = g.state[:, PLAYER]
        _, masks = g.observe_rows(np.arange(N), players, masks_only=True)
        mine = players == tseat
        choice = masks.sum(1) > 1
        actions = np.argmax(masks, axis=1)
        rows = np.flatnonzero(mine & choice)
        if len(rows):
            a = teacher.act_batch(g, rows)
            x, m = policy_inputs(g, rows, F)
            xs.append(x.copy()); ms.append(m.astype(bool)); acts.append(a.copy()); n += len(rows)
            actions[rows] = a
        rows = np.flatnonzero(~mine & choice)
        if len(rows):
            actions[rows] = greedy.act_batch(g, rows)
        g.step(actions)
    np.savez(data, x=np.concatenate(xs), m=np.concatenate(ms), a=np.concatenate(acts))
    print(f"labels {n} in {time.time()-t0:.0f}s", flush=True)
z = np.load(data)
X, M, A = z["x"], z["m"], z["a"]
n = len(A); hold = n // 20
torch.manual_seed(0)
net = Network((128, 128), sees_all=False, inputs=FEATURE_SETS[F].size, head="cards", features=F)
opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-5)
rng = np.random.default_rng(0)
Xt, Mt, At = torch.from_numpy(X), torch.from_numpy(M), torch.from_numpy(A)
def policy():
    layers = net.actor_layers()
    named = [(w, b, "ReLU" if i < len(layers) - 1 else "Identity") for i, (w, b) in enumerate(layers)]
    head = CardHead(net.head_arrays(), F, card_planes(F), layers[-1][0].shape[1])
    return NumpyPolicy(named, F, head=head)
def agree(lo, hi):
    with torch.no_grad():
        lg = net(Xt[lo:hi].float())[0].masked_fill(~Mt[lo:hi], ILLEGAL_LOGIT)
        return float((lg.argmax(1) == At[lo:hi]).float().mean())
for ep in range(EPOCHS):
    t0 = time.time()
    order = rng.permutation(np.arange(hold, n))
    for s in range(0, len(order) - 1023, 2048):
        mb = torch.from_numpy(order[s:s + 2048])
        lg = net(Xt[mb].float())[0].masked_fill(~Mt[mb], ILLEGAL_LOGIT)
        loss = torch.nn.functional.cross_entropy(lg, At[mb])
        opt.zero_grad(); loss.backward(); opt.step()
    pol = policy()
    r = duplicate_score(BatchPolicy(pol), make_batch_opponent("greedy", 1), 2000, 1000003, None)
    print(f"epoch {ep+1}: loss {float(loss):.3f} held-out agreement {agree(0, hold):.3f} train {agree(hold, hold+hold):.3f} "
          f"vs greedy {r['score']:.3f} [{r['low']:.3f}, {r['high']:.3f}] ({time.time()-t0:.0f}s)", flush=True)
    save_selfplay(os.path.join(OUT, f"clone_e{ep+1}.npz"), [(w, b) for w, b, _ in pol.layers], {"note": "clone"},
                  features=F, head=pol.head)
    torch.save(net.state_dict(), os.path.join(OUT, f"clone_e{ep+1}.pt"))
