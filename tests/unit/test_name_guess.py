"""Naming a receiver by its member only where no other type the file may hold has that member."""

from __future__ import annotations

import pytest

from torchls.core.name_guess import classes_to_compare, tensor_member_by_name

MEMBERS = {
    "torch.Tensor": {
        "permute",
        "shape",
        "view",
        "split",
        "to",
        "masked_fill",
        "unsqueeze",
        "is_floating_point",
        "device",
    },
    "builtins.str": {"split", "upper"},
    "builtins.list": {"append"},
    "builtins.dict": {"items"},
    "builtins.tuple": {"count"},
    "builtins.set": {"add"},
    "torch.nn.Module": {"to", "parameters"},
    "torch.dtype": {"is_floating_point", "itemsize"},
    "torch.device": {"type", "index"},
    "numpy.ndarray": {"shape", "view"},
    "PIL.Image.Image": {"size", "split"},
}


def members_of(qualname):
    return MEMBERS.get(qualname)


@pytest.mark.parametrize(
    ("member", "imports", "expected"),
    [
        ("permute", {"torch"}, True),
        ("masked_fill", {"torch", "numpy"}, True),  # NumPy arrays have no masked_fill
        ("shape", {"torch"}, True),
        ("shape", {"torch", "numpy"}, False),  # an array's shape too
        ("view", {"torch", "cv2"}, False),  # OpenCV images are NumPy arrays
        ("split", {"torch"}, False),  # a str's split
        ("to", {"torch"}, False),  # a module's to
        ("unsqueeze", {"torch", "tensorflow"}, False),  # its tensors mirror torch's
        ("_private", {"torch"}, False),
        ("upper", {"torch"}, False),  # not a tensor's at all
        ("is_floating_point", {"torch"}, False),  # ``dtype.is_floating_point``: a torch.dtype has it too
    ],
)
def test_guess_only_what_no_other_type_has(member, imports, expected):
    assert tensor_member_by_name(member, imports, members_of) is expected


def test_no_guess_while_a_class_to_compare_is_not_listed_yet():
    assert not tensor_member_by_name("unsqueeze", {"torch", "pandas"}, members_of)  # pandas not listed yet
    assert not tensor_member_by_name("unsqueeze", {"torch"}, lambda q: None)  # nothing listed at all


def test_classes_to_compare_follow_the_imports():
    assert "numpy.ndarray" in classes_to_compare({"numpy"})
    assert "numpy.ndarray" not in classes_to_compare({"torch"})
    assert classes_to_compare({"jax"}) is None


def test_through_a_layers_tensor_even_a_common_member_is_the_tensors():
    assert not tensor_member_by_name("dtype", {"torch"}, _with("dtype"))  # ``fabric.dtype``: anything has one
    assert tensor_member_by_name("dtype", {"torch"}, _with("dtype"), "weight")  # m.weight.dtype
    assert not tensor_member_by_name("shape", {"torch", "numpy"}, members_of, "weight")  # an array's weight?
    assert not tensor_member_by_name("dtype", {"torch"}, _with("dtype"), "scale")  # not a layer's tensor name


def _with(member):
    def listed(qualname):
        found = MEMBERS.get(qualname)
        return (found | {member}) if qualname == "torch.Tensor" and found is not None else found

    return listed


def test_beside_a_library_that_mirrors_tensors_only_in_place_methods_are_guessed():
    listed = _with("copy_")
    assert tensor_member_by_name("copy_", {"torch", "jax"}, listed)  # jax arrays have no in-place methods
    assert not tensor_member_by_name("unsqueeze", {"torch", "jax"}, listed)
    assert not tensor_member_by_name("copy_", {"torch", "paddle"}, listed)  # Paddle's tensors have them too


@pytest.mark.parametrize(
    ("member", "receiver_members", "expected"),
    [
        ("device", (), False),  # a Fabric, a diffusers model, a path: the name alone says nothing
        ("device", ("permute", "shape"), True),  # the same receiver is permuted: a tensor
        ("device", ("shape",), False),  # NumPy arrays have a shape too (imported here): no proof
        ("device", ("permute", "setup"), False),  # ``setup`` is no tensor's: something else
        ("masked_fill", ("setup",), False),
        ("masked_fill", ("view", "_private"), True),
    ],
)
def test_the_receivers_other_members_decide_a_generic_name(member, receiver_members, expected):
    assert tensor_member_by_name(member, {"torch", "numpy"}, members_of, receiver_members=receiver_members) is expected
