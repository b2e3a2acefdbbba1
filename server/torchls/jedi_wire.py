"""The pipes between the server and its jedi process: frames of plain data, checked on both ends.

A frame is a 4-byte length and a pickle. What a pickle may hold is fixed here: the builtins' scalars and
containers, and the answer types of :mod:`torchls.docinfo`, which both processes import by that module's name.
Anything else is refused when it is written and when it is read. The reason is the child: it runs
``python -m torchls.jedi_host``, so a class defined in that module pickles as ``__main__.X`` there and cannot be found
in the server, where unpickling it raised ``AttributeError`` in the middle of a hover. Now such an answer is refused
in the child, which reports the failure instead, and the server never loads a class it did not expect.
"""

from __future__ import annotations

import io
import pickle
import struct
from typing import IO

from torchls.docinfo import JediHit, SymbolDoc

# The only classes a frame may name (everything else in a frame is a builtin scalar or container).
WIRE_TYPES: tuple[type, ...] = (SymbolDoc, JediHit)
_ALLOWED = {(kind.__module__, kind.__qualname__): kind for kind in WIRE_TYPES}
_HEADER = struct.Struct(">I")


class WireError(Exception):
    """A frame that cannot be written or read: it holds something other than plain data or a wire type."""


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: object) -> object:
        # Called for every object but the builtins' own scalars and containers (which pickle by value), and for
        # the class of each wire-type instance, which is written by its importable name.
        if type(obj) in WIRE_TYPES or any(obj is kind for kind in WIRE_TYPES):
            return NotImplemented  # pickled as usual
        raise WireError(f"{type(obj).__module__}.{type(obj).__qualname__} is not plain data")


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> type:
        kind = _ALLOWED.get((module, name))
        if kind is None:
            raise WireError(f"a frame names {module}.{name}, which is not a wire type")
        return kind


def encode(value: object) -> bytes:
    """``value`` as a frame's body; raises :class:`WireError` for anything that is not plain data."""
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except WireError:
        raise
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as error:
        raise WireError(f"cannot encode {type(value).__name__}: {error}") from error
    return buffer.getvalue()


def decode(data: bytes) -> object:
    """A frame's body as its value; raises :class:`WireError` for a frame that is not plain data or is damaged."""
    try:
        return _Unpickler(io.BytesIO(data)).load()
    except WireError:
        raise
    except Exception as error:  # a damaged frame raises anything from EOFError to UnicodeDecodeError
        raise WireError(f"cannot decode a frame: {type(error).__name__}: {error}") from error


def write_frame(stream: IO[bytes], value: object) -> None:
    """Write ``value`` as one frame. Raises :class:`WireError` before writing anything when it is not plain
    data, so the stream stays in step; ``OSError`` when the other end has gone."""
    data = encode(value)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(stream: IO[bytes]) -> object:
    """The next frame's value. Raises ``EOFError`` when the other end has gone, :class:`WireError` when the frame
    (read whole, so the stream stays in step) is not plain data."""
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        raise EOFError
    data = _read_exactly(stream, _HEADER.unpack(header)[0])
    if data is None:
        raise EOFError
    return decode(data)
