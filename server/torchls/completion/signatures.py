"""Signature help while a call is typed: the installed torch's signatures (every overload), the overload the
arguments so far fit, and the active parameter with its Chinese explanation."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from torchls.core.calls import CallContext, call_context
from torchls.core.text import Position
from torchls.hover import COLD_WAIT_SECONDS, JediNotReady
from torchls.session import Session

from .arguments import callee_of, live_doc


@dataclass(frozen=True, slots=True)
class ParameterInfo:
    label: tuple[int, int]  # offsets into the signature label
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


def _split_parameters(signature: str) -> list[tuple[int, int, str]]:
    """``(start, end, name)`` of each parameter in ``name(a: int, b=1, *, c)`` (top-level commas only)."""
    open_at = signature.find("(")
    if open_at < 0:
        return []
    out = []
    depth = 0
    start = open_at + 1
    for index in range(open_at + 1, len(signature)):
        char = signature[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                out.append((start, index))
                break
            depth -= 1
        elif char == "," and depth == 0:
            out.append((start, index))
            start = index + 1
    params = []
    for begin, end in out:
        piece = signature[begin:end]
        stripped = piece.strip()
        if not stripped or stripped == "/":
            continue
        lead = len(piece) - len(piece.lstrip())
        name = re.split(r"[:=]", stripped, maxsplit=1)[0].strip()
        params.append((begin + lead, begin + lead + len(stripped), name))
    return params


def _choose(signatures: list[SignatureInfo], call: CallContext) -> int:
    """The first overload the call's arguments so far fit: enough positions, and the keyword being typed."""
    for number, signature in enumerate(signatures):
        names = signature.parameter_names
        starred = any(n.startswith("*") and n != "*" for n in names)
        positional = [n for n in names if not n.startswith("*")]
        if "*" in names:
            positional = positional[: names.index("*")]
        if call.keyword and call.keyword not in [n.lstrip("*") for n in names]:
            continue
        # The argument being typed counts too when it is positional: `torch.max(x, 1, |` needs three places.
        needed = call.positional_count + (0 if call.keyword else 1)
        if needed <= len(positional) or starred:
            return number
    return 0


def _active_parameter(signature: SignatureInfo, call: CallContext) -> int | None:
    names = [n.lstrip("*") for n in signature.parameter_names]
    if call.keyword:
        return names.index(call.keyword) if call.keyword in names else None
    raw = signature.parameter_names
    for index, name in enumerate(raw):
        if name == "*":
            break
        if name.startswith("*"):
            return index  # *size takes every remaining positional argument
        if index == call.argument_index:
            return index
    return None


async def signature_help(
    session: Session, uri: str, path: str | None, text: str, version: int | None, position: Position
) -> SignatureResult | None:
    document = session.index_for_line(uri, text, version, position.line)
    lines = document.lines
    call = call_context(lines, position, document.index.statement_line_before(position.line))
    if call is None:
        return None
    try:
        callee = await asyncio.wait_for(callee_of(session, document.index, call, text, path), COLD_WAIT_SECONDS * 4)
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
    short = public.rsplit(".", 1)[-1]
    signatures = []
    for raw in raw_signatures[:8]:
        label = public + raw[len(short) :] if raw.startswith(short + "(") else raw
        pieces = _split_parameters(label)
        parameters = []
        for start, end, name in pieces:
            plain = name.lstrip("*")
            param = entry.param(plain) if entry is not None else None
            doc = param.desc if param is not None else (live.param_docs.get(plain) if live is not None else None)
            parameters.append(ParameterInfo((start, end), doc))
        signatures.append(
            SignatureInfo(
                label=label,
                documentation=entry.summary if entry is not None else None,
                parameters=parameters,
                parameter_names=[name for _, _, name in pieces],
            )
        )
    active = _choose(signatures, call)
    chosen = signatures[active]
    signatures[active] = SignatureInfo(
        chosen.label, chosen.documentation, chosen.parameters, chosen.parameter_names, _active_parameter(chosen, call)
    )
    return SignatureResult(signatures, active)
