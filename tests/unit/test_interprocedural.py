"""The checker follows the file's own code: helpers, constructor arguments, containers, loaders, modes.

Each case is a small program whose bug only shows when values travel through a call, a constructor, a loop or
a DataLoader, next to a near miss that must stay silent. The realistic versions live in tests/fixtures/pitfalls/.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchls.core.checker import check_source
from torchls.core.modes import mode_effects

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def codes(body: str) -> set[str]:
    return {f.code for f in check_source(HEADER + textwrap.dedent(body)).findings}


CASES = {
    "softmax made in a helper": (
        """
        def probabilities(model, x):
            return F.softmax(model(x), dim=-1)

        model = nn.Linear(8, 3)
        x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
        loss = F.cross_entropy(probabilities(model, x), y)
        """,
        "TL301",
        "F.softmax(model(x), dim=-1)",
        "model(x)",
    ),
    "layer sized from constructor arguments": (
        """
        class Head(nn.Module):
            def __init__(self, features, hidden):
                super().__init__()
                self.body = nn.Linear(features, hidden)
                self.out = nn.Linear(features, 2)

            def forward(self, x):
                return self.out(self.body(x))

        Head(16, 32)(torch.randn(4, 16))
        """,
        "TL101",
        "self.out = nn.Linear(features, 2)",
        "self.out = nn.Linear(hidden, 2)",
    ),
    "blocks built by a helper in a loop": (
        """
        def stage(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]

        layers, cin = [], 3
        for width in (8, 16):
            layers += stage(cin, width)
            cin = width
        model = nn.Sequential(*layers, nn.Flatten(), nn.Linear(16 * 16 * 16, 10))  # sized for one pooling
        model(torch.randn(2, 3, 32, 32))
        """,
        "TL101",  # the layers fit each other; the Linear does not fit what this input brings it
        "nn.Linear(16 * 16 * 16, 10)",
        "nn.Linear(16 * 8 * 8, 10)",
    ),
    "dataclass config and a property": (
        """
        from dataclasses import dataclass

        @dataclass
        class Config:
            width: int = 6
            heads: int = 4

            @property
            def dim(self):
                return self.width * 3

        cfg = Config()
        attention = nn.MultiheadAttention(cfg.dim, cfg.heads)
        """,
        "TL110",
        "cfg.dim, cfg.heads",
        "cfg.dim, 3",
    ),
    "DataLoader batches from a Dataset class": (
        """
        from torch.utils.data import DataLoader, Dataset

        class Rows(Dataset):
            def __init__(self, n):
                self.x = torch.randn(n, 5)
                self.y = torch.randint(0, 2, (n,))

            def __len__(self):
                return len(self.y)

            def __getitem__(self, i):
                return self.x[i], self.y[i]

        model = nn.Linear(5, 1)
        for x, y in DataLoader(Rows(64), batch_size=8):
            loss = F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
        """,
        "TL310",
        "model(x).squeeze(-1), y)",
        "model(x).squeeze(-1), y.float())",
    ),
    "view after a transpose made in another method": (
        """
        class Heads(nn.Module):
            def __init__(self, dim=32, heads=4):
                super().__init__()
                self.heads = heads

            def split(self, x):
                b, t, d = x.shape
                return x.view(b, t, self.heads, d // self.heads).transpose(1, 2)

            def merge(self, x):
                b, h, t, d = x.shape
                return x.transpose(1, 2).view(b, t, h * d)

            def forward(self, x):
                q = self.split(x)
                return self.merge(q @ q.transpose(-2, -1) @ q)

        Heads()(torch.randn(2, 7, 32))
        """,
        "TL104",
        "x.transpose(1, 2).view(b, t, h * d)",
        "x.transpose(1, 2).reshape(b, t, h * d)",
    ),
    "predictions a loop gathered in a list": (
        """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def predict(model, steps):
            preds = []
            for _ in range(steps):
                preds.append(model(torch.randn(4, 8, device=device)).argmax(1))
            return torch.cat(preds).numpy()

        predict(nn.Linear(8, 3).to(device), 10)
        """,
        "TL204",
        "torch.cat(preds).numpy()",
        "torch.cat(preds).cpu().numpy()",
    ),
    "a model left in train mode by the training helper": (
        """
        def train_epoch(model, optimizer, x, y):
            model.train()
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()

        def validate(model, x):
            with torch.no_grad():
                return model(x).argmax(1)

        model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 3))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
        train_epoch(model, optimizer, x, y)
        validate(model, x)
        """,
        "TL403",
        "with torch.no_grad():\n        return model(x)",
        "model.eval()\n    with torch.no_grad():\n        return model(x)",
    ),
    "a decoder loop's first step, with the encoder's hidden state": (
        """
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.GRU(8, 16, batch_first=True)

            def forward(self, src):
                return self.rnn(src)  # a user model returning (output, h_n)

        def attend(h, memory):
            query = h.transpose(0, 1)  # (1, B, H) -> (B, 1, H)
            return torch.softmax(query @ memory.transpose(1, 2), dim=-1) @ memory

        embed = nn.Embedding(10, 8)
        memory, h = Encoder()(torch.randn(4, 5, 8))
        token = torch.zeros(4, dtype=torch.long)
        for step in range(12):
            context = attend(h, memory)
            joined = torch.cat([embed(token), context], dim=-1)
            h = h + 0.1
            token = joined.argmax(-1)
        """,
        "TL105",
        "torch.cat([embed(token), context], dim=-1)",
        "torch.cat([embed(token), context.squeeze(1)], dim=-1)",
    ),
    "class labels read into a float table by a comprehension": (
        """
        class Rows(torch.utils.data.Dataset):
            def __init__(self, lines):
                self.table = torch.tensor([[float(v) for v in line.split(",")] for line in lines])

            def __len__(self):
                return len(self.table)

            def __getitem__(self, i):
                return self.table[i, :-1], self.table[i, -1]

        loader = torch.utils.data.DataLoader(Rows(read_lines()), batch_size=8)
        model = nn.Linear(4, 3)
        for x, label in loader:
            F.cross_entropy(model(x), label).backward()
        """,
        "TL306",
        "F.cross_entropy(model(x), label)",
        "F.cross_entropy(model(x), label.long())",
    ),
    "samples appended in __init__, batched by a loader, fed to mm": (
        """
        class Graphs(torch.utils.data.Dataset):
            def __init__(self, n=100):
                self.samples = []
                for _ in range(n):
                    self.samples.append((torch.randn(12, 5), torch.eye(12)))

            def __len__(self):
                return len(self.samples)

            def __getitem__(self, i):
                return self.samples[i]

        dims = [5] + [16] * 2
        layers = [nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])]
        for x, adj in torch.utils.data.DataLoader(Graphs(), batch_size=10):
            for layer in layers:
                x = torch.relu(layer(torch.mm(adj, x)))
        """,
        "TL102",
        "torch.mm(adj, x)",
        "torch.bmm(adj, x)",
    ),
    "a U-Net skip connection through functional pooling": (
        """
        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU())

        class UNet(nn.Module):
            def __init__(self, base=8):
                super().__init__()
                self.enc = block(1, base)
                self.mid = block(base, base * 2)
                self.up = nn.ConvTranspose2d(base * 2, base, 2, stride=2)
                self.dec = block(base, base)

            def forward(self, x):
                skip = self.enc(x)
                up = self.up(self.mid(F.max_pool2d(skip, 2)))
                return self.dec(torch.cat([up, skip], dim=1))

        UNet()(torch.randn(2, 1, 32, 32))
        """,
        "TL108",
        "self.dec = block(base, base)",
        "self.dec = block(base * 2, base)",
    ),
    "validation labels from a random_split left on the CPU": (
        """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        data = torch.utils.data.TensorDataset(torch.randn(100, 4), torch.randint(0, 2, (100,)))
        train_set, val_set = torch.utils.data.random_split(data, [80, 20])
        model = nn.Linear(4, 2).to(device)

        def accuracy(model, loader):
            correct = 0
            for x, y in loader:
                preds = model(x.to(device)).argmax(dim=1)
                correct += (preds == y).sum().item()
            return correct

        accuracy(model, torch.utils.data.DataLoader(val_set, batch_size=10))
        """,
        "TL207",
        "(preds == y)",
        "(preds == y.to(device))",
    ),
    "a padding mask built with eq() added to attention scores": (
        """
        import math

        def attend(q, k, ids):
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
            return torch.softmax(scores + ids.eq(0).float() * -1e9, dim=-1)

        ids = torch.randint(0, 100, (8, 12))
        attend(torch.randn(8, 4, 12, 16), torch.randn(8, 4, 12, 16), ids)
        """,
        "TL112",
        "ids.eq(0).float() * -1e9",
        "ids.eq(0)[:, None, None, :].float() * -1e9",
    ),
    "noise made on the CPU in a helper of forward, for a model on the GPU": (
        """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        class VAE(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(16, 8)

            def sample(self, mu, logvar):
                std = torch.exp(0.5 * logvar)
                return mu + torch.randn(mu.shape) * std

            def forward(self, x):
                mu, logvar = self.enc(x).chunk(2, dim=-1)
                return self.sample(mu, logvar)

        VAE().to(device)(torch.randn(4, 16).to(device))
        """,
        "TL203",
        "torch.randn(mu.shape)",
        "torch.randn_like(mu)",
    ),
    "teacher log-probabilities served by a dataset, read as probabilities": (
        """
        class Cached(torch.utils.data.Dataset):
            def __init__(self, teacher, n=32):
                self.x = torch.randn(n, 8)
                self.soft = F.log_softmax(teacher(self.x), dim=-1)

            def __len__(self):
                return len(self.x)

            def __getitem__(self, i):
                return self.x[i], self.soft[i]

        student = nn.Linear(8, 4)
        for x, soft in torch.utils.data.DataLoader(Cached(nn.Linear(8, 4)), batch_size=8):
            loss = F.kl_div(F.log_softmax(student(x), dim=-1), soft, reduction="batchmean")
        """,
        "TL311",
        "self.soft = F.log_softmax(teacher(self.x), dim=-1)",
        "self.soft = F.softmax(teacher(self.x), dim=-1)",
    ),
    "one-hot labels made per sample from a tolist() of class ids": (
        """
        class Crops(torch.utils.data.Dataset):
            def __init__(self, n=32):
                self.x = torch.randn(n, 8)
                self.labels = torch.randint(0, 5, (n,)).tolist()

            def __len__(self):
                return len(self.labels)

            def __getitem__(self, i):
                return self.x[i], F.one_hot(torch.as_tensor(self.labels[i]), num_classes=5)

        model = nn.Linear(8, 5)
        for x, y in torch.utils.data.DataLoader(Crops(), batch_size=8):
            loss = nn.CrossEntropyLoss()(model(x), y)
        """,
        "TL306",
        "num_classes=5)",
        "num_classes=5).float()",
    ),
    "class ids to a regression loss after a flatten(1) of unknown rank": (
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv1d(1, 8, 5), nn.AdaptiveAvgPool1d(1))
                self.head = nn.Linear(8, 5)

            def forward(self, x):
                return self.head(self.body(x).flatten(1))

        def step(model, x, stage):
            return nn.HuberLoss()(model(x), stage)

        n = int(input())
        step(Net(), torch.load("eeg_epochs.pt"), torch.randint(0, 5, (n,)))
        """,
        "TL307",
        "nn.HuberLoss()",
        "nn.CrossEntropyLoss()",
    ),
    "a loss factory whose config decides the branch": (
        """
        def build_criterion(cfg):
            if cfg.get("pos_weight"):
                return nn.BCEWithLogitsLoss(pos_weight=torch.tensor(cfg["pos_weight"]))
            return nn.BCELoss()

        model = nn.Linear(8, 3)
        cfg = {"lr": 1e-3, "pos_weight": None}
        loss = build_criterion(cfg)(model(torch.randn(4, 8)), torch.rand(4, 3))
        """,
        "TL303",
        '"pos_weight": None',
        '"pos_weight": 2.0',
    ),
    "integer labels of records a helper appends in a loop": (
        """
        import random

        def records(n):
            rng = random.Random(0)
            rows = []
            for _ in range(n):
                amount = rng.uniform(1, 100)
                rows.append((amount, int(amount > 50)))
            return rows

        class Records(torch.utils.data.Dataset):
            def __init__(self, rows):
                self.rows = rows

            def __len__(self):
                return len(self.rows)

            def __getitem__(self, i):
                amount, label = self.rows[i]
                return torch.tensor([amount]), torch.tensor(label)

        model = nn.Linear(1, 1)
        for x, y in torch.utils.data.DataLoader(Records(records(40)), batch_size=8):
            loss = nn.BCEWithLogitsLoss()(model(x).squeeze(-1), y)
        """,
        "TL310",
        "torch.tensor(label)",
        "torch.tensor(label, dtype=torch.float32)",
    ),
    "int32 labels converted from a NumPy array in a helper": (
        """
        import numpy as np

        def load(n=40):
            rng = np.random.default_rng(0)
            x = rng.normal(size=(n, 6)).astype(np.float32)
            y = rng.integers(0, 3, size=n).astype(np.int32)
            return x, y

        x, y = load()
        data = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        model = nn.Linear(6, 3)
        for xb, yb in torch.utils.data.DataLoader(data, batch_size=8):
            loss = F.cross_entropy(model(xb), yb)
        """,
        "TL306",
        ".astype(np.int32)",
        ".astype(np.int64)",
    ),
    "float64 class ids from a NumPy array indexed in __getitem__": (
        """
        import numpy as np

        class Frame(torch.utils.data.Dataset):
            def __init__(self, n=40):
                rng = np.random.default_rng(0)
                self.x = rng.normal(size=(n, 6)).astype(np.float32)
                self.y = np.digitize(self.x[:, 0], [-0.5, 0.5]).astype(np.float64)

            def __len__(self):
                return len(self.y)

            def __getitem__(self, i):
                return torch.from_numpy(self.x[i]), torch.tensor(self.y[i])

        model = nn.Linear(6, 3)
        for xb, yb in torch.utils.data.DataLoader(Frame(), batch_size=8):
            loss = F.cross_entropy(model(xb), yb)
        """,
        "TL306",
        ".astype(np.float64)",
        ".astype(np.int64)",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_the_bug_is_found_through_the_call_and_the_near_miss_is_silent(name):
    body, code, wrong, right = CASES[name]
    assert code in codes(body), f"{name}: {code} not reported"
    fixed = textwrap.dedent(body).replace(wrong, right)
    assert fixed != textwrap.dedent(body), "the near miss must change the program"
    assert code not in {f.code for f in check_source(HEADER + fixed).findings}, f"{name}: near miss reported"


def _effects(source: str) -> dict[str, dict]:
    tree = ast.parse(textwrap.dedent(source))
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    return {name: mode_effects(function, functions) for name, function in functions.items()}


def test_mode_effects_follow_calls_and_branches():
    effects = _effects(
        """
        def train_epoch(model):
            model.train()

        def evaluate(model):
            model.eval()
            score = 1
            model.train()

        def sometimes(model, flag):
            if flag:
                model.eval()

        def through(net):
            train_epoch(net)

        def hands_on(model):
            unknown_library(model)

        def reads_only(model):
            print(model)
        """
    )
    assert effects["train_epoch"] == {"model": True}
    assert effects["evaluate"] == {"model": True}
    assert effects["sometimes"] == {"model": None}
    assert effects["through"] == {"net": True}
    assert effects["hands_on"] == {"model": None}
    assert effects["reads_only"] == {}


def test_recursion_and_a_body_that_reassigns_stay_bounded():
    effects = _effects(
        """
        def ping(model):
            pong(model)

        def pong(model):
            ping(model)

        def rebinds(model):
            model = make()
            model.eval()
        """
    )
    assert effects["ping"] == {"model": None}
    assert effects["rebinds"] == {"model": None}


def test_a_helper_called_with_unknown_arguments_says_nothing():
    body = """
    def run(model, x):
        return F.softmax(model(x), dim=-1)

    def main(model, x, y):
        return F.cross_entropy(run(model, x), y)
    """
    # softmax is still proven whatever went in: the helper's value does not depend on its arguments
    assert "TL301" in codes(body)
    assert not codes("def f(a, b):\n    return f(b, a)\n\nf(torch.randn(2), 1)\n")
