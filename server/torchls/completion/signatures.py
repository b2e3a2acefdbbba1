"""Signature help while a call is typed: the installed torch's signatures (every overload), the overload the
arguments so far fit, and the active parameter with its Chinese explanation.

The counting and choosing is :mod:`torchls.core.overloads` (pure, on jedi's signature text); this module adds what
needs the session: which function is called, whether it is called through an instance (a bound method never
passes ``self``), what a name written as an argument is (``torch.float16`` a dtype, ``mask`` a tensor), and the
handbook's documentation of each parameter.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from torchls.core.annotations import torch_constant_kind
from torchls.core.calls import Argument, CallContext, ValueKind, call_context
from torchls.core.overloads import KindOf, Signature, active_parameter, choose_overload, parse_signature
from torchls.core.text import Position
from torchls.docinfo import SymbolDoc
from torchls.hover import COLD_WAIT_SECONDS, JediNotReady
from torchls.kb.schema import Entry
from torchls.session import Session

from .arguments import callee_of, live_doc

_MAX_OVERLOADS = 8
_TENSOR_CLASSES = ("torch.Tensor", "torch.nn.Parameter")


@dataclass(frozen=True, slots=True)
class ParameterInfo:
    label: tuple[int, int]  # code-point offsets into the signature label
    documentation: str | None


@dataclass(frozen=True, slots=True)
class SignatureInfo:
    label: str
    documentation: str | None
    parameters: list[ParameterInfo]
    parameter_names: list[str]
    active_parameter: int | None = None


@dataclass(frozen=True, slots=True)
class SignatureResult:
    signatures: list[SignatureInfo]
    active_signature: int = 0


async def signature_help(
    session: Session, uri: str, path: str | None, text: str, version: int | None, position: Position
) -> SignatureResult | None:
    document = session.index_for_line(uri, text, version, position.line)
    index = document.index
    call = call_context(document.lines, position, index.statement_line_before(position.line))
    if call is None:
        return None
    try:
        callee = await asyncio.wait_for(callee_of(session, index, call, text, path), COLD_WAIT_SECONDS * 4)
    except (TimeoutError, JediNotReady):
        return None
    if callee is None:
        return None
    entry = session.kb.lookup(callee)
    public = entry.name if entry is not None else callee
    live = await live_doc(session, public)
    raw_signatures = list(live.signatures) if live is not None and live.signatures else []
    if not raw_signatures and entry is not None and entry.signature:
        raw_signatures = [entry.signature]
    if not raw_signatures:
        return None
    raw_signatures = raw_signatures[:_MAX_OVERLOADS]
    bound = False
    if any(_first_parameter_is_self(raw) for raw in raw_signatures):
        bound = await _called_through_instance(session, index, call, callee, text, path)
    signatures = [_parse(raw, public, bound) for raw in raw_signatures]
    kind_of = _argument_kinds(index, call.callee_end)
    # The handbook's signature is the usual form (``torch.max(input, dim, ...)``); it is written as called, so
    # without ``self``, and says nothing about a method called through its class.
    preferred = None
    if entry is not None and entry.signature and (bound or not any(map(_first_parameter_is_self, raw_signatures))):
        preferred = parse_signature(entry.signature, bound=True)
    chosen = choose_overload(signatures, call, kind_of, preferred)
    infos = [_info(signature, entry, live) for signature in signatures]
    infos[chosen] = _with_active(infos[chosen], active_parameter(signatures[chosen], call, kind_of))
    return SignatureResult(infos, chosen)


def _parse(raw: str, public: str, bound: bool) -> Signature:
    """jedi's text under the public name (``softmax(...)`` -> ``torch.Tensor.softmax(...)``), unless jedi names
    something else (a wrapper such as ``_lru_cache_wrapper``), which is then shown as jedi has it."""
    short = public.rsplit(".", 1)[-1]
    written_name = raw.split("(", 1)[0].strip()
    return parse_signature(raw, public if written_name in (short, public) else None, bound)


def _first_parameter_is_self(raw: str) -> bool:
    inside = raw.partition("(")[2].lstrip()
    return inside.startswith("self") and inside[4:5] in (",", ")", ":", " ")


async def _called_through_instance(
    session: Session, index, call: CallContext, callee: str, text: str, path: str | None
) -> bool:
    """Whether ``self`` is already given: ``att.softmax(``, ``self.fc(`` and ``model(`` are called through an
    instance; ``torch.Tensor.softmax(x, `` through the class, so ``x`` is ``self``."""
    receiver, _, method = call.callee.rpartition(".")
    if callee.endswith(".forward") and method != "forward":
        return True  # calling a layer itself: its ``forward``, bound to the layer
    if not receiver or index.qualify_dotted(call.callee) is not None:
        return False  # a plain function, or a path through modules and classes (``torch.Tensor.view``)
    if index.value_at(receiver, call.callee_end) is not None:
        return True
    resolver = session.resolver
    if call.receiver_end is None or not resolver.warm.is_set():
        return True  # a method reached through a value is by far the usual case
    end = call.receiver_end
    asked = asyncio.wrap_future(resolver.submit(resolver.receiver_types, text, path, end.line, end.column))
    try:
        found = await asyncio.wait_for(asked, COLD_WAIT_SECONDS * 4)
    except TimeoutError:
        return True
    return not found or any(instance for _, instance in found)  # only a class (``Alias.view(x, ...)``) is not


def _argument_kinds(index, position: Position) -> KindOf:
    """What each argument is: its literal kind, or for a name what the file proves (a dtype, a tensor)."""

    def kind_of(argument: Argument) -> ValueKind:
        if argument.kind is not ValueKind.NAME or argument.name is None:
            return argument.kind
        qualname = index.qualify_dotted(argument.name)
        if qualname is not None:
            return torch_constant_kind(qualname) or ValueKind.NAME
        value = index.value_at(argument.name, position)
        if value is not None and value.user_class is None and value.qualname in _TENSOR_CLASSES:
            return ValueKind.TENSOR
        return ValueKind.NAME

    return kind_of


def _info(signature: Signature, entry: Entry | None, live: SymbolDoc | None) -> SignatureInfo:
    parameters = []
    for parameter in signature.parameters:
        param = entry.param(parameter.name) if entry is not None else None
        doc = param.desc if param is not None else (live.param_docs.get(parameter.name) if live is not None else None)
        parameters.append(ParameterInfo(parameter.span, doc))
    return SignatureInfo(
        label=signature.label,
        documentation=entry.summary if entry is not None else None,
        parameters=parameters,
        parameter_names=[parameter.name for parameter in signature.parameters],
    )


def _with_active(info: SignatureInfo, active: int | None) -> SignatureInfo:
    return SignatureInfo(info.label, info.documentation, info.parameters, info.parameter_names, active)
