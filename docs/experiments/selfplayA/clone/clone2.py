"""Clone the labels of clone.py into a network variant, evaluate with a torch batched bot.

    python clone2.py OUT/labels.npz nb 10 OUT/nb128          # the neighbours' head (nbpool: pooled; nb:128: 128 wide)
"""
import os, sys, time
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, torch
from agents.batched import make_batch_opponent
from agents.networks.batched import policy_inputs
from conquian_env.model_layouts import FEATURE_SETS
from conquian_train.learner import Network, ILLEGAL_LOGIT
from conquian_train.recipes.selfplay import duplicate_score
from nbhead import nb_network
torch.set_num_threads(2)
DATA, KIND, EPOCHS, OUT = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
hidden = tuple(int(w) for w in (sys.argv[5] if len(sys.argv) > 5 else "128,128").split(","))
F = "potential"
zs = [np.load(d) for d in DATA.split(",")]  # several label files: held out from the first
X, M, A = (np.concatenate([z[k] for z in zs]) for k in ("x", "m", "a"))
n = len(A); hold = n // 20
torch.manual_seed(0)
mk = (lambda *a: nb_network(*a, kind=KIND.split(":")[0], width=int(KIND.split(":")[1]) if ":" in KIND else 64)) if KIND.startswith("nb") else (lambda h, s, inputs, features: Network(h, s, inputs=inputs, head="cards", features=features))
net = mk(hidden, False, FEATURE_SETS[F].size, F)
opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-5)
rng = np.random.default_rng(0)
Xt, Mt, At = torch.from_numpy(X), torch.from_numpy(M), torch.from_numpy(A)

class TorchBot:
    def reseed(self, seed): pass
    @torch.no_grad()
    def act_batch(self, g, rows):
        x, m = policy_inputs(g, rows, F)
        lg = net(torch.from_numpy(x).float())[0].masked_fill(~torch.from_numpy(m.astype(bool)), ILLEGAL_LOGIT)
        return lg.argmax(1).numpy()

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
    msg = f"epoch {ep+1}: loss {loss.item():.3f} held-out agreement {agree(0, hold):.3f} train {agree(hold, 2 * hold):.3f}"
    if ep % 2 == 1 or ep == EPOCHS - 1:
        r = duplicate_score(TorchBot(), make_batch_opponent("greedy", 1), 2000, 1000003, None)
        msg += f" vs greedy {r['score']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"
    print(msg + f" ({time.time()-t0:.0f}s)", flush=True)
    torch.save(net.state_dict(), f"{OUT}_e{ep+1}.pt")
