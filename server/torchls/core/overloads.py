"""Signatures as signature help needs them: parameters with their kinds, the overload the arguments written so
far fit, and the parameter the next argument goes to.

The input is jedi's text of a signature (``softmax(self, dim: _int, dtype: _dtype | None=None) -> Tensor``), the
only form it crosses the process boundary in. :func:`parse_signature` rebuilds the label under the public name,
with torch's private aliases made readable and, for a bound method, without ``self``, and records where each
parameter sits in the new label (code points; the LSP layer converts them to the client's encoding).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torchls.core.annotations import accepts, readable
from torchls.core.brackets import closing_bracket, split_top_level, top_level_index
from torchls.core.calls import Argument, CallContext, ValueKind


class ParameterKind(enum.Enum):
    POSITIONAL_ONLY = "positional only"
    POSITIONAL_OR_KEYWORD = "positional or keyword"
    VAR_POSITIONAL = "*args"
    KEYWORD_ONLY = "keyword only"
    VAR_KEYWORD = "**kwargs"


_POSITIONAL = (ParameterKind.POSITIONAL_ONLY, ParameterKind.POSITIONAL_OR_KEYWORD)
_BY_KEYWORD = (ParameterKind.POSITIONAL_OR_KEYWORD, ParameterKind.KEYWORD_ONLY)


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str  # without stars
    kind: ParameterKind
    annotation: str  # readable; "" when there is none
    span: tuple[int, int]  # code-point offsets of the whole parameter (``dim: int``) in the label


@dataclass(frozen=True, slots=True)
class Signature:
    label: str
    parameters: tuple[Parameter, ...]

    def positional(self) -> list[Parameter]:
        return [p for p in self.parameters if p.kind in _POSITIONAL]

    def var_positional(self) -> Parameter | None:
        return next((p for p in self.parameters if p.kind is ParameterKind.VAR_POSITIONAL), None)

    def var_keyword(self) -> Parameter | None:
        return next((p for p in self.parameters if p.kind is ParameterKind.VAR_KEYWORD), None)

    def by_keyword(self, name: str) -> Parameter | None:
        found = next((p for p in self.parameters if p.name == name and p.kind in _BY_KEYWORD), None)
        return found or self.var_keyword()


# ------------------------------------------------------------------------------------------ parsing


def parse_signature(raw: str, public_name: str | None = None, bound: bool = False) -> Signature:
    """A signature from jedi's (or the knowledge base's) text: ``name(params) -> return``.

    ``public_name`` replaces the name jedi reports (``torch._C.TensorBase.view`` is shown as
    ``torch.Tensor.view``); ``bound`` drops a leading ``self``, which a call through an instance never passes.
    """
    open_at = raw.find("(")
    close_at = closing_bracket(raw, open_at) if open_at >= 0 else -1
    if close_at < 0:
        return Signature(label=raw, parameters=())
    name = public_name or raw[:open_at]
    pieces = [piece.strip() for piece in split_top_level(raw[open_at + 1 : close_at], ",")]
    pieces = [piece for piece in pieces if piece]
    if bound and pieces and _piece_name(pieces[0]) == "self":
        pieces = pieces[1:]
    label = f"{name}("
    parameters: list[Parameter] = []
    kinds = _kinds(pieces)
    for number, (piece, kind) in enumerate(zip(pieces, kinds, strict=True)):
        if number:
            label += ", "
        text = _readable_piece(piece)
        if kind is not None:
            span = (len(label), len(label) + len(text))
            parameters.append(Parameter(_piece_name(piece), kind, _annotation(text), span))
        label += text
    label += ")" + _readable_return(raw[close_at + 1 :])
    return Signature(label=label, parameters=tuple(parameters))


def _kinds(pieces: list[str]) -> list[ParameterKind | None]:
    """Each piece's kind; None for the ``*`` and ``/`` markers, which are no parameters."""
    slash = pieces.index("/") if "/" in pieces else -1
    kinds: list[ParameterKind | None] = []
    keyword_only = False
    for number, piece in enumerate(pieces):
        if piece in ("*", "/"):
            kinds.append(None)
            keyword_only = keyword_only or piece == "*"
        elif piece.startswith("**"):
            kinds.append(ParameterKind.VAR_KEYWORD)
        elif piece.startswith("*"):
            kinds.append(ParameterKind.VAR_POSITIONAL)
            keyword_only = True
        elif keyword_only:
            kinds.append(ParameterKind.KEYWORD_ONLY)
        elif number < slash:
            kinds.append(ParameterKind.POSITIONAL_ONLY)
        else:
            kinds.append(ParameterKind.POSITIONAL_OR_KEYWORD)
    return kinds


def _piece_name(piece: str) -> str:
    return re.split(r"[:=]", piece, maxsplit=1)[0].strip().lstrip("*").strip()


def _readable_piece(piece: str) -> str:
    """``size: _size_2_t=1`` -> ``size: int | tuple[int, int]=1`` (jedi's own spacing around ``=`` kept)."""
    colon = top_level_index(piece, ":")
    if colon < 0:
        return piece
    equals = top_level_index(piece, "=", colon)
    annotation_end = equals if equals >= 0 else len(piece)
    annotation = readable(piece[colon + 1 : annotation_end])
    default = piece[annotation_end:]
    return f"{piece[:colon]}: {annotation}{default}"


def _annotation(piece: str) -> str:
    colon = top_level_index(piece, ":")
    if colon < 0:
        return ""
    equals = top_level_index(piece, "=", colon)
    return piece[colon + 1 : equals if equals >= 0 else len(piece)].strip()


def _readable_return(rest: str) -> str:
    arrow = rest.find("->")
    return f" -> {readable(rest[arrow + 2 :])}" if arrow >= 0 else ""


# ------------------------------------------------------------------------------------------ binding

KindOf = Callable[[Argument], ValueKind]


def _lexical_kind(argument: Argument) -> ValueKind:
    return argument.kind


@dataclass(frozen=True, slots=True)
class _Binding:
    fits: bool  # every argument written has a parameter to go to
    kinds_fit: bool  # and each literal's kind suits its parameter's annotation
    given: frozenset[str]  # names of the parameters given
    next_positional: int  # how many positional slots the written arguments took


def _bind(signature: Signature, arguments: Sequence[Argument], kind_of: KindOf) -> _Binding:
    positional = signature.positional()
    var_positional = signature.var_positional()
    given: set[str] = set()
    slot = 0
    fits = kinds_fit = True
    for argument in arguments:
        if argument.kind is ValueKind.DOUBLE_STARRED:
            continue  # ``**options``: any keywords, none we can name
        if argument.keyword is None:
            if slot < len(positional):
                parameter: Parameter | None = positional[slot]
                slot += 1
            else:
                parameter = var_positional
        else:
            parameter = signature.by_keyword(argument.keyword)
        if parameter is None or (parameter.name in given and parameter.kind in (*_POSITIONAL, *_BY_KEYWORD)):
            fits = False
            continue
        given.add(parameter.name)
        if argument.kind is not ValueKind.STARRED and not accepts(parameter.annotation, kind_of(argument)):
            kinds_fit = False
    return _Binding(fits, kinds_fit, frozenset(given), slot)


def _written(call: CallContext) -> list[Argument]:
    """The arguments that are already there: those before the cursor's, and the cursor's own when its keyword
    (``dim=``) or its value (``torch.max(x, 1``) has been typed."""
    if call.keyword is not None:
        return [*call.arguments, call.current]
    if _positional_phase(call) and call.current.kind is not ValueKind.EMPTY:
        return [*call.arguments, call.current]
    return list(call.arguments)  # after a keyword, a bare name being typed is the next keyword, not a value


def _positional_phase(call: CallContext) -> bool:
    """No keyword argument yet: the cursor's argument may still be positional (after one it cannot be)."""
    return call.keyword is None and not any(argument.keyword for argument in call.arguments)


def active_parameter(signature: Signature, call: CallContext, kind_of: KindOf = _lexical_kind) -> int | None:
    """The index in ``signature.parameters`` of the parameter the cursor's argument goes to, or None.

    A keyword being given (``dim=``) is that parameter. Before any keyword, it is the next positional place
    (or the ``*args`` that takes the rest). After a keyword, further positionals are a syntax error, so the next
    argument is a keyword: the first parameter not given yet, positionally or by keyword.
    """
    parameter = _active(signature, call, kind_of)
    return signature.parameters.index(parameter) if parameter is not None else None


def _active(signature: Signature, call: CallContext, kind_of: KindOf) -> Parameter | None:
    if call.keyword is not None:
        return signature.by_keyword(call.keyword)
    binding = _bind(signature, call.arguments, kind_of)
    if _positional_phase(call) and call.current.kind is not ValueKind.STARRED:
        positional = signature.positional()
        if binding.next_positional < len(positional):
            return positional[binding.next_positional]
        if signature.var_positional() is not None:
            return signature.var_positional()
    unwritten = [p for p in signature.parameters if p.kind in _BY_KEYWORD and p.name not in binding.given]
    typed = call.typing_name if not _positional_phase(call) else None
    if typed:  # ``F.interpolate(x, scale_factor=2, mo``: the keyword being typed
        started = [p for p in unwritten if p.name.startswith(typed)]
        if started:
            return started[0]
    if unwritten:
        return unwritten[0]
    return signature.var_keyword()


# ------------------------------------------------------------------------------------------ choosing


def choose_overload(
    signatures: Sequence[Signature],
    call: CallContext,
    kind_of: KindOf = _lexical_kind,
    preferred: Signature | None = None,
) -> int:
    """The index of the overload the call's arguments so far fit best.

    In order: every argument written has a place; their literal kinds suit their parameters; the argument being
    typed has a place too (``torch.max(output, |`` needs a second positional); ``preferred`` (the handbook's
    usual form) gives the same active parameter; jedi's order.
    """
    preferred_active = _active(preferred, call, kind_of) if preferred is not None else None

    def score(number: int) -> tuple[bool, bool, bool, bool, int]:
        signature = signatures[number]
        binding = _bind(signature, _written(call), kind_of)
        active = _active(signature, call, kind_of)
        return (
            binding.fits,
            binding.kinds_fit,
            active is not None and _has_place(signature, call, active),
            preferred_active is not None and active is not None and _same_place(active, preferred_active),
            -number,
        )

    return max(range(len(signatures)), key=score) if signatures else 0


def _has_place(signature: Signature, call: CallContext, active: Parameter) -> bool:
    """The cursor's argument can be ``active``: a positional one needs a positional place, not a keyword."""
    if not _positional_phase(call) or call.current.kind is ValueKind.STARRED:
        return True
    return active.kind in (*_POSITIONAL, ParameterKind.VAR_POSITIONAL)


def _same_place(parameter: Parameter, other: Parameter) -> bool:
    both_star = parameter.kind is ParameterKind.VAR_POSITIONAL and other.kind is ParameterKind.VAR_POSITIONAL
    return parameter.name == other.name or both_star
