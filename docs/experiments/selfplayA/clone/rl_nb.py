"""RL from scratch (the selfplay recipe's loop and defaults) with a card head variant: the neighbour head.
Snapshots and evaluations play the torch actor (a NumpyPolicy whose logits are the torch network's).

    python rl_nb.py runs/n1-nb 30000000
    python rl_nb.py runs/n1-nb 160000000 resume=1      # on from its last checkpoint
"""
import copy, os, sys
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, torch
from agents.networks.ppo import NumpyPolicy
import conquian_train.learner as LM
from conquian_train.recipes import selfplay as SP
from nbhead import nb_network

out, frames = sys.argv[1], int(sys.argv[2])
extra = dict(kv.split("=") for kv in sys.argv[3:])
resume = extra.pop("resume", "0") == "1"
ints = {"eval_every", "eval_games", "snapshot_every", "checkpoint_every", "num_games", "horizon", "minibatch", "epochs"}
kw = {k: (int(v) if k in ints else float(v)) for k, v in extra.items()}
kw.setdefault("eval_every", 5_000_000)
c = SP.SelfPlayConfig(out=out, total_frames=frames, checkpoint_every=10**12, progress=False, **kw)


class TorchActor(NumpyPolicy):
    def __init__(self, net):
        layers = net.actor_layers()
        named = [(w, b, "ReLU" if i < len(layers) - 1 else "Identity") for i, (w, b) in enumerate(layers)]
        super().__init__(named, "potential")
        self.net = copy.deepcopy(net).float().eval()

    @torch.no_grad()
    def logits(self, x):
        x = np.asarray(x)
        one = x.ndim == 1
        t = torch.from_numpy(np.atleast_2d(x)).float()
        h = self.net.trunk(t)
        lg = self.net.cards(t, h, self.net.policy(h)).numpy()
        return lg[0] if one else lg


class Model(SP.SelfPlayModel):
    suffix = ".pt"

    def save(self, path):
        with open(path, "wb") as f:
            torch.save(self.network.net.state_dict(), f)


def model(self):
    return Model(TorchActor(self.learner.net), {"frames": self.frames})


SP.SelfPlayRun.model = model
LM.Network = lambda hidden, sees_all, inputs, head, features: nb_network(hidden, sees_all, inputs, features)
run = SP.SelfPlayRun(c, resume=resume)
if resume:  # the kept snapshots were written without their head: the resumed run's past is its present network
    run.snapshots = [TorchActor(run.learner.net) for _ in run.snapshots]
    run.seat_snapshots()
run.train()
