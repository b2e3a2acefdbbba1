"""A receiver nothing proves, named by its member: ``lse.permute(0, 2, 1)`` is a tensor's ``permute``.

Where neither the file's analysis nor jedi can say what ``lse`` is (it came from another library, a dict, a
function with no annotation), the member's name often says it alone: no builtin type, no ``nn.Module`` has a
``permute``, so in a torch file ``lse`` is a tensor. The guess is taken only when no other type the file's imports
bring has that member (``x.shape`` in a file that imports NumPy could be an array) and never for a library whose
arrays mirror tensors wholesale. Hover shows the guess with a line that says it was inferred from the name;
diagnostics never use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

TENSOR = "torch.Tensor"

# Classes whose members are never a tensor's alone: the builtins' values, torch's modules, and the dtypes and
# devices code keeps in variables (``dtype.is_floating_point``, ``device.type``). (Optimizer, torch.Size and friends
# share no member with Tensor that is not also a builtin's.)
ALWAYS_OTHER = (
    "builtins.str",
    "builtins.list",
    "builtins.dict",
    "builtins.tuple",
    "builtins.set",
    "torch.nn.Module",
    "torch.dtype",
    "torch.device",
)

# Imported modules whose values may have tensor-like members, and the classes to compare with.
IMPORTED_OTHERS = {
    "numpy": ("numpy.ndarray",),
    "cv2": ("numpy.ndarray",),  # OpenCV images are NumPy arrays
    "scipy": ("numpy.ndarray",),
    "pandas": ("pandas.DataFrame", "pandas.Series"),
    "PIL": ("PIL.Image.Image",),
}

# Tensor members whose names many other classes use for their own (a Lightning ``Fabric.device``, a diffusers
# model's ``dtype``, a path's ``name``, the ``indices`` of what ``topk``/``sort``/``max(x, dim)`` return): the name
# alone says nothing.
GENERIC_NAMES = frozenset({"device", "dtype", "data", "name", "names", "layout", "type", "index", "indices", "is_cuda"})

# Attributes through which torch layers hold their tensors: ``m.weight.dtype`` or ``conv.bias.data`` is a tensor's
# even when ``m`` is unknown, and even for a member other classes share.
PARAMETER_NAMES = frozenset({"weight", "bias", "running_mean", "running_var", "grad"})

# Libraries whose arrays have nearly all of a tensor's members: a member name proves nothing where they are
# imported, but for an in-place method (``copy_``, ``add_``): theirs are immutable or NumPy-like, without those.
MIRRORING_LIBRARIES = frozenset({"tensorflow", "jax", "cupy", "mxnet", "mindspore", "dask", "xarray"})
# ... and Paddle, whose tensors have torch's in-place methods too: nothing is guessed where it is imported.
MIRRORING_IN_PLACE = frozenset({"paddle"})


def classes_to_compare(imported_modules: Iterable[str], member: str = "") -> tuple[str, ...] | None:
    """The classes whose members a guess of ``member`` in a file with these imports (top-level module names) must
    avoid; None when a library the file imports mirrors tensors there (no guess at all)."""
    tops = set(imported_modules)
    in_place = member.endswith("_") and not member.startswith("_")
    if tops & MIRRORING_IN_PLACE or (tops & MIRRORING_LIBRARIES and not in_place):
        return None
    others = list(ALWAYS_OTHER)
    for module, classes in IMPORTED_OTHERS.items():
        if module in tops:
            others.extend(classes)
    return tuple(dict.fromkeys(others))


def tensor_member_by_name(
    member: str,
    imported_modules: Iterable[str],
    members_of: Callable[[str], Iterable[str] | None],
    receiver_attribute: str | None = None,
    receiver_members: Iterable[str] = (),
) -> bool:
    """True when ``member`` is a tensor's and no other class the file may hold has it; through a receiver named
    like a layer's tensor (``receiver_attribute`` in :data:`PARAMETER_NAMES`), only arrays the file imports count.
    A name in :data:`GENERIC_NAMES` says nothing alone, but the receiver's other members may: ``x.device`` where
    the same ``x`` also has a ``permute`` (``receiver_members``) is a tensor's.

    ``members_of(qualname)`` lists a class's public members (instances'), or None while they are not known yet:
    then there is no guess, as there is none without the tensor's own list.
    """
    through_parameter = receiver_attribute in PARAMETER_NAMES
    if member.startswith("_"):
        return False
    tensor = members_of(TENSOR)
    if tensor is None or any(not other.startswith("_") and other not in tensor for other in receiver_members):
        return False  # the same receiver has a member no tensor has (``fabric.setup``): it is something else
    if member in GENERIC_NAMES and not through_parameter:
        return member in tensor and any(
            tensor_member_by_name(other, imported_modules, members_of, receiver_attribute)
            for other in receiver_members
            if other not in GENERIC_NAMES
        )
    others = classes_to_compare(imported_modules, member)
    if others is None or member not in tensor:
        return False
    if through_parameter:
        others = tuple(q for q in others if q not in ALWAYS_OTHER)  # a parameter is no str, list or module
    for qualname in others:
        listed = members_of(qualname)
        if listed is None or member in listed:
            return False
    return True
