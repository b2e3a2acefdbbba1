"""Values that data code makes: NumPy arrays turned into tensors (checked against NumPy and torch), rows that keep
the kind of values they hold, dict configs, branches the code decides, and lists a loop fills."""

from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest
import torch

from torchls.core.text import SourceText
from torchls.core.values import InstanceValue, Number, SequenceOf, TensorValue, TupleValue
from torchls.core.values_at import FileValues

HEADER = "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def _values(body: str) -> dict[str, object]:
    """The value of every name the program assigns at module level, after the last assignment."""
    text = HEADER + textwrap.dedent(body)
    tree = ast.parse(text)
    found = FileValues(tree, SourceText(text))
    assert not found.failed
    values: dict[str, object] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
            values[statement.targets[0].id] = found.value_of(statement.targets[0])
    return values


# Expressions whose tensor the interpreter must give the dtype and shape torch gives, run for real.
CONVERSIONS = [
    "torch.from_numpy(rng.integers(0, 7, size=12).astype(np.int32))",
    "torch.from_numpy(rng.normal(size=(4, 3)))",
    "torch.from_numpy(rng.normal(size=(4, 3)).astype(np.float32)[:, 0])",
    "torch.tensor(np.digitize(rng.normal(size=9), [-0.5, 0.5]).astype(np.float64)[2])",
    "torch.tensor(np.digitize(rng.normal(size=9), [-0.5, 0.5]))",
    "torch.as_tensor(np.zeros((2, 5), dtype='int16'))",
    "torch.tensor(np.array([[1.5, 2], [3, 4]]))",
    "torch.tensor(np.array([1, 2, 3]) / 2)",
    "torch.tensor(rng.random())",
    "torch.from_numpy(np.ones(3, dtype=np.float32) * 0.5)",
    "torch.from_numpy(rng.normal(size=(6, 4)).astype(np.float32).mean(0))",
    "torch.tensor(np.random.randn(2, 3))",
    "torch.from_numpy(torch.randn(2, 3).numpy())",
    "torch.tensor(rng.integers(0, 3, size=(5, 2)).astype(float))",
]


@pytest.mark.parametrize("expression", CONVERSIONS)
def test_tensors_made_of_numpy_arrays_have_the_dtype_and_shape_torch_gives(expression):
    rng = np.random.default_rng(0)  # noqa: F841  (the expressions read it)
    real = eval(expression)
    value = _values(f"rng = np.random.default_rng(0)\nt = {expression}\n")["t"]
    assert isinstance(value, TensorValue)
    assert value.dtype == str(real.dtype), expression
    assert value.shape is None or value.shape == tuple(real.shape), expression


def test_numpy_values_not_proved_stay_unknown():
    values = _values(
        """
        a = np.load("x.npy").astype(some_dtype)
        b = torch.from_numpy(np.load("x.npy"))
        c = np.ones(3, dtype=np.int64).sum()
        """
    )
    assert values["a"] is None
    assert isinstance(values["b"], TensorValue) and values["b"].dtype is None
    assert isinstance(values["c"], InstanceValue) and values["c"].arg("dtype") is None  # the platform's int


def test_rows_keep_their_kind_only_while_the_last_dim_is_kept():
    values = _values(
        """
        p = F.log_softmax(torch.randn(8, 5), dim=-1)
        row = p[0]
        column = p[:, 0]
        oh = F.one_hot(torch.randint(0, 5, (8,)), 5)
        one = oh[3]
        bit = oh[3, 1]
        masked = p[p > -1]
        """
    )
    assert values["row"].provenance == "log_softmax"
    assert values["one"].provenance == "one_hot"
    assert values["column"].provenance is None
    assert values["bit"].provenance is None
    assert values["masked"].provenance is None


def test_python_values_of_a_tensor():
    values = _values(
        """
        ids = torch.randint(0, 5, (8,)).tolist()
        grid = torch.randn(2, 3).tolist()
        flags = (torch.randn(3) > 0).tolist()
        x = torch.randn(3).sum().item()
        """
    )
    assert values["ids"] == SequenceOf(Number("int"))
    assert values["grid"] == SequenceOf(SequenceOf(Number("float")))
    assert values["flags"] is None  # bools: no number kind
    assert values["x"] == Number("float")


def test_flatten_of_unknown_rank():
    values = _values(
        """
        x = torch.from_numpy(np.load("x.npy"))
        a = x.flatten(1)
        b = x.flatten(-2)
        """
    )
    assert values["a"].rank == 2
    assert values["b"].rank is None


def test_dict_get_and_the_branch_it_decides():
    values = _values(
        """
        def pick(cfg):
            if cfg.get("smooth"):
                return nn.BCEWithLogitsLoss()
            return nn.BCELoss()

        cfg = {"smooth": None}
        a = pick(cfg)
        missing = cfg.get("other", 3)
        b = pick({"smooth": 0.1})
        changed = {"smooth": None}
        changed.update(extra)
        c = pick(changed)
        """
    )
    assert values["a"].qualname == "torch.nn.BCELoss"
    assert values["missing"] is None  # a key it lacks may have been added by code not followed
    assert not hasattr(values["b"], "args")  # the live branch returns, but the code after it is still merged
    assert not hasattr(values["c"], "args")


def test_a_loop_that_appends_records_of_numbers():
    values = _values(
        """
        rows = []
        for line in open("f.csv"):
            rows.append((float(line), int(line)))
        first = rows[0]
        names = []
        for line in open("f.csv"):
            names.append(line.strip())
        """
    )
    assert values["first"] == TupleValue((Number("float"), Number("int")))
    assert not isinstance(values["names"], SequenceOf)  # nothing known about the items: no list of them


def test_real_numpy_agrees_with_the_expected_dtypes():
    # The facts the interpreter relies on, as the installed NumPy and torch have them.
    assert torch.from_numpy(np.zeros(2, dtype=np.int32)).dtype == torch.int32
    assert torch.tensor(np.float64(1.0)).dtype == torch.float64
    assert torch.tensor(1.0).dtype == torch.float32


# Lists made by one comprehension over a sequence of known length, as torch sees them (checked for real).
KNOWN_LENGTHS = [
    "torch.tensor([VOCAB.index(c) for c in TEXT])",  # a character-level model's ids: one per character
    "torch.tensor([i * 2 for i in range(100)])",  # a range too long to unroll still has its length
    "torch.stack([IDS[i : i + 17] for i in range(0, 68, 17)])",  # fixed windows of the ids
    "torch.tensor([ord(c) for c in VOCAB])",
]
SETUP = 'VOCAB = "abcdefghijklmnopqrstuvwxyz .,"\nTEXT = "the quick brown fox jumps over the lazy dog. " * 4\n'


@pytest.mark.parametrize("expression", KNOWN_LENGTHS)
def test_a_comprehension_over_a_sequence_of_known_length_has_that_length(expression):
    body = SETUP + "IDS = torch.tensor([VOCAB.index(c) for c in TEXT])\n" + f"made = {expression}\n"
    namespace: dict = {"torch": torch}
    exec(body, namespace)  # the program above, to compare with torch's own answer
    value = _values(body)["made"]
    assert isinstance(value, TensorValue) and value.shape == tuple(namespace["made"].shape), value


def test_a_filtered_comprehension_has_no_known_length():
    value = _values(SETUP + "made = torch.tensor([VOCAB.index(c) for c in TEXT if c != ' '])\n")["made"]
    assert isinstance(value, TensorValue) and value.shape == (None,), value
