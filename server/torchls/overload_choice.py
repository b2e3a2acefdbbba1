"""Which of a function's overloads a call calls, and how each is spelled: the one home for signature help and
hover, so that both show the same overload under the same readable label whatever jedi's state.

The choosing itself is pure (:func:`torchls.core.overloads.choose_overload`, on jedi's signature text); this module
adds what needs the session: whether the call goes through an instance (a bound method never passes ``self``),
what a name written as an argument is (``torch.float16`` a dtype, ``mask`` a tensor), and the handbook's usual
form of the call, which breaks ties.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

from torchls.core.annotations import torch_constant_kind
from torchls.core.calls import Argument, CallContext, ValueKind
from torchls.core.overloads import KindOf, Signature, choose_overload, parse_signature
from torchls.core.text import Position
from torchls.docinfo import SymbolDoc
from torchls.kb.schema import Entry
from torchls.session import Session

MAX_OVERLOADS = 8
# How long a question to jedi about the receiver may take before the usual case (a bound method) is assumed.
_RECEIVER_WAIT_SECONDS = 3.2
_TENSOR_CLASSES = ("torch.Tensor", "torch.nn.Parameter")


@dataclass(frozen=True, slots=True)
class Overloads:
    signatures: list[Signature]  # in jedi's order, readable, under the public name
    chosen: int  # the one the call's arguments fit
    kind_of: KindOf  # what each argument is, for the active parameter

    def chosen_first(self) -> list[Signature]:
        """The chosen overload, then the others in jedi's order (what a hover card lists)."""
        return [self.signatures[self.chosen], *(s for n, s in enumerate(self.signatures) if n != self.chosen)]


async def overloads_for_call(
    session: Session,
    index,
    call: CallContext,
    public: str,
    entry: Entry | None,
    live: SymbolDoc | None,
    text: str,
    path: str | None,
    ask_jedi: bool = True,
) -> Overloads | None:
    """The overloads of ``public`` (the installed torch's, else the handbook's one signature) and the one ``call``
    fits; None when neither knows a signature. ``ask_jedi``: whether jedi may be asked what a receiver the file
    does not prove is (a hover does not wait for that: it takes the usual case, a method bound to a value)."""
    raw_signatures = list(live.signatures) if live is not None and live.signatures else []
    if not raw_signatures and entry is not None and entry.signature:
        raw_signatures = [entry.signature]
    if not raw_signatures:
        return None
    raw_signatures = raw_signatures[:MAX_OVERLOADS]
    bound = False
    if any(_first_parameter_is_self(raw) for raw in raw_signatures):
        bound = await _called_through_instance(session, index, call, public, text, path, ask_jedi)
    signatures = [_parse(raw, public, bound) for raw in raw_signatures]
    kind_of = _argument_kinds(index, call.callee_end)
    # The handbook's signature is the usual form (``torch.max(input, dim, ...)``); it is written as called, so
    # without ``self``, and says nothing about a method called through its class.
    preferred = None
    if entry is not None and entry.signature and (bound or not any(map(_first_parameter_is_self, raw_signatures))):
        preferred = parse_signature(entry.signature, bound=True)
    return Overloads(signatures, choose_overload(signatures, call, kind_of, preferred), kind_of)


@functools.lru_cache(maxsize=2048)  # every hover on a call parses its overloads: the same few texts again and again
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
    session: Session, index, call: CallContext, callee: str, text: str, path: str | None, ask_jedi: bool
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
    if call.receiver_end is None or not ask_jedi or not resolver.warm.is_set():
        return True  # a method reached through a value is by far the usual case
    end = call.receiver_end
    asked = asyncio.wrap_future(resolver.submit(resolver.receiver_types, text, path, end.line, end.column))
    try:
        found = await asyncio.wait_for(asked, _RECEIVER_WAIT_SECONDS)
    except TimeoutError:
        return True
    return not found or any(instance for _, instance in found)  # only a class (``Alias.view(x, ...)``) is not


def _argument_kinds(index, position: Position) -> KindOf:
    """What each argument is: its literal kind, or for a name what the file proves (a dtype, a tensor). Each name
    is looked up once: every overload asks about every argument."""

    @functools.cache
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
