"""Map the names jedi and the import table produce to the public names knowledge entries use.

jedi reports where a symbol is *defined*: ``torch._C.TensorBase.view``, ``torch._C._VariableFunctions.cat``,
``torch.nn.modules.loss.CrossEntropyLoss``, ``torch.optim.adamw.AdamW``, ``torch.autograd.grad_mode.no_grad``.
Users and the handbook use where it is *exported*: ``torch.Tensor.view``, ``torch.cat``,
``torch.nn.CrossEntropyLoss``, ``torch.optim.AdamW``, ``torch.no_grad``. :func:`candidates` lists the public names
a defined name may have, best first; the knowledge base picks the first one it has an entry for.

A climb from a module to a namespace above it (``torch.nn.modules.loss`` -> ``torch.nn``) is taken only where the
installed torch binds both names to the same object (:mod:`torchls.kb.identity`): the same last part is no proof
(``torch.distributed.nn.functional.all_gather`` is not ``torch.distributed.all_gather``). Without that table
there is no climb at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from torchls.core.facts import LOWERCASE_CLASSES

if TYPE_CHECKING:
    from torchls.kb.identity import Identity

# Private homes of public objects, rewritten before anything else.
_PREFIX_REWRITES = (
    ("torch._C._VariableFunctions.", "torch."),
    ("torch._C.TensorBase.", "torch.Tensor."),
    ("torch._C._TensorBase.", "torch.Tensor."),
    ("torch._tensor.Tensor.", "torch.Tensor."),
    ("torch._C._nn.", "torch.nn.functional."),
    ("torch._C._linalg.linalg_", "torch.linalg."),
    ("torch._C._special.special_", "torch.special."),
    ("torch._C._fft.fft_", "torch.fft."),
    ("torch._C._distributed_c10d.", "torch.distributed."),
    ("torch._C.", "torch."),
    ("torch.nn.parameter.Parameter", "torch.nn.Parameter"),
)

# Namespaces users import from. A name defined directly in one of them is already public; a name defined in a
# module below one of them (``torch.nn.modules.loss``) may be exported by one above it, where the identity table
# says the name there is the same object.
PUBLIC_NAMESPACES = frozenset(
    """
    torch torch.nn torch.nn.functional torch.nn.init torch.nn.utils torch.nn.utils.rnn torch.nn.parallel
    torch.optim torch.optim.lr_scheduler torch.optim.swa_utils torch.utils.data torch.utils.checkpoint
    torch.autograd torch.autograd.functional torch.cuda torch.cuda.amp torch.amp torch.backends
    torch.backends.cudnn torch.backends.mps torch.backends.cuda torch.mps torch.distributed torch.linalg
    torch.distributed.nn torch.fft torch.special torch.jit torch.onnx torch.export torch.compiler
    torch.distributions torch.testing torch.hub torch.fx torch.utils torch.utils.tensorboard torch.profiler
    torch.func torch.sparse torch.nn.attention torch.ao.quantization torch.quantization
    """.split()
)

# Members inherited from a base class: ``AdamW.step`` is documented as ``Optimizer.step``. Classes first, then
# the base of every class defined directly in a namespace. The legacy typed tensors (``torch.LongTensor``,
# ``torch.cuda.FloatTensor``: what old code and some annotations name) are tensors; the deprecated
# ``torch.cuda.amp.GradScaler`` is a thin subclass of ``torch.amp.GradScaler``.
_TYPED_TENSORS = "Float Double Half BFloat16 Byte Char Short Int Long Bool".split()
_INHERITED_BY_CLASS = {
    "torch.nn.Parameter": "torch.Tensor",
    "torch.cuda.amp.GradScaler": "torch.amp.GradScaler",
    **{f"{home}.{kind}Tensor": "torch.Tensor" for home in ("torch", "torch.cuda") for kind in _TYPED_TENSORS},
}

_INHERITED_BY_NAMESPACE = {
    "torch.optim": "torch.optim.Optimizer",
    "torch.optim.lr_scheduler": "torch.optim.lr_scheduler.LRScheduler",
    "torch.nn": "torch.nn.Module",
    "torch.distributions": "torch.distributions.Distribution",
}


def split_module(name: str) -> tuple[list[str], list[str]]:
    """Split a dotted name into its module part and its object part.

    The object part starts at the first capitalised segment (a class) or, when there is none, is the last
    segment (a function or constant): ``torch.nn.modules.module.Module.parameters`` ->
    (``torch.nn.modules.module``, ``Module.parameters``); ``torch.serialization.save`` ->
    (``torch.serialization``, ``save``).
    """
    parts = name.split(".")
    for index, part in enumerate(parts[1:], start=1):
        if part[:1].isupper() or (index < len(parts) - 1 and ".".join(parts[: index + 1]) in LOWERCASE_CLASSES):
            return parts[:index], parts[index:]
    return parts[:-1], parts[-1:]


def candidates(name: str, public: Iterable[str] = (), identity: Identity | None = None) -> list[str]:
    """Public names ``name`` may be known by, best first, ``name`` itself (after private rewrites) first.

    ``public`` adds namespaces beyond :data:`PUBLIC_NAMESPACES` (the modules of team knowledge entries);
    ``identity`` is the installed torch's table of names per object, without which no module is climbed.
    """
    original = name
    for old, new in _PREFIX_REWRITES:
        if name.startswith(old) or name == old.rstrip("."):
            name = new + name[len(old) :] if name.startswith(old) else new.rstrip(".")
            break
    if identity is not None and identity.knows(original) and identity.knows(name) and not identity.same(original, name):
        name = original  # the rule's public spelling is another object in this torch: keep the real name
    namespaces = PUBLIC_NAMESPACES.union(public)
    module, obj = split_module(name)
    out = [name]
    # Defined in an implementation module: try each public namespace above it, nearest first, where it is the
    # same object there. A module that only has entries of its own (``torch.serialization.safe_globals``) is
    # still the implementation home of the names torch exports higher up (``torch.serialization.save`` is
    # ``torch.save``).
    if identity is not None and ".".join(module) not in PUBLIC_NAMESPACES:
        for cut in range(len(module) - 1, 0, -1):
            prefix = ".".join(module[:cut])
            climbed = ".".join([prefix, *obj])
            if prefix in namespaces and identity.same_object(name, climbed):
                out.append(climbed)
    for public_name in list(out):
        out.extend(_inherited(public_name))
    return list(dict.fromkeys(out))


def _inherited(name: str) -> list[str]:
    module, obj = split_module(name)
    if len(obj) != 2:
        return []
    owner = ".".join([*module, obj[0]])
    base = _INHERITED_BY_CLASS.get(owner) or _INHERITED_BY_NAMESPACE.get(".".join(module))
    return [f"{base}.{obj[1]}"] if base and base != owner else []


def module_of(name: str) -> str:
    """The module part of a public name (``torch.nn.functional.relu`` -> ``torch.nn.functional``)."""
    return ".".join(split_module(name)[0])
