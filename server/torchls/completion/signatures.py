"""Signature help while a call is typed: the installed torch's signatures (every overload), the overload the
arguments so far fit, and the active parameter with its Chinese explanation.

The counting is :mod:`torchls.core.overloads`; which overload the arguments fit and how it is spelled is
:mod:`torchls.overload_choice`, shared with hover. This module adds which function is called and the handbook's
documentation of each parameter.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from torchls.core.calls import call_context
from torchls.core.overloads import Signature, active_parameter
from torchls.core.text import Position
from torchls.docinfo import SymbolDoc
from torchls.hover import COLD_WAIT_SECONDS, JediNotReady
from torchls.kb.schema import Entry
from torchls.overload_choice import overloads_for_call
from torchls.session import Session

from .arguments import callee_of, live_doc


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
    overloads = await overloads_for_call(session, index, call, public, entry, live, text, path)
    if overloads is None:
        return None
    signatures, chosen = overloads.signatures, overloads.chosen
    infos = [_info(signature, entry, live) for signature in signatures]
    infos[chosen] = _with_active(infos[chosen], active_parameter(signatures[chosen], call, overloads.kind_of))
    return SignatureResult(infos, chosen)


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
