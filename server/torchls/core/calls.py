"""Where the cursor is inside a call, from tokens: works on the half-typed code of an open call.

Signature help and argument completion run while the user is typing ``nn.Conv2d(3, 64, ker`` — code that does
not parse. This module reads the tokens of the last lines before the cursor, finds the innermost call whose
parenthesis is still open, and says which argument the cursor is in, whether it is a keyword, whether the
cursor sits in the value of a keyword (``reduction='|``), and what each argument written so far is: its keyword
and, where its tokens tell, the kind of its value (``-1`` an int, ``'same'`` a str, ``torch.float16`` a dotted
name), so that signature help can choose the overload they fit.
"""

from __future__ import annotations

import enum
import io
import keyword
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field

from torchls.core.brackets import closing_bracket
from torchls.core.text import Position

# Identifiers as Python reads them, Chinese included: ``神经网络.Conv2d``.
_NAME = r"[^\W\d]\w*"
_DOTTED_AT_END = re.compile(rf"(?<![\w.])({_NAME}(?:\.{_NAME})*)\.({_NAME})?$")  # starts only where a name does
_PARTIAL_AFTER_DOT = re.compile(rf"\.({_NAME})?$")
# How far back from the cursor the two patterns above look: a search anchored at the end still tries every start
# before it, so a 100k-character line cost minutes per keystroke. No receiver people type is longer.
_LONGEST_DOTTED = 1000
_LOOKBACK_LINES = 40  # without statement positions: calls spanning more lines than this are rare
_MAX_STATEMENT_LINES = 400  # a statement start further back than this is not read (a huge literal): too slow


class ValueKind(enum.Enum):
    """What an argument's value is, as far as its tokens tell (a literal's kind), or what a name turned out to be.

    The tokens give the first group; a ``NAME`` can become one of the second group where the file proves what the
    name is (``torch.float16`` is a dtype): that is for the caller, who knows the file's imports and values.
    """

    EMPTY = "empty"  # nothing typed yet
    INT = "int"
    FLOAT = "float"
    COMPLEX = "complex"
    STR = "str"
    BYTES = "bytes"
    BOOL = "bool"
    NONE = "None"
    SEQUENCE = "sequence"  # a list or tuple display: ``[2, 3]``, ``(2, 3)``, ``()``
    NAME = "name"  # a plain dotted name: ``mask``, ``torch.float16``
    STARRED = "starred"  # ``*shape``: any number of positional arguments
    DOUBLE_STARRED = "double starred"  # ``**options``: any keywords
    OTHER = "other"  # any other expression
    # What a NAME is, where the caller can prove it.
    DTYPE = "torch.dtype"
    TENSOR = "Tensor"
    LAYOUT = "torch.layout"
    MEMORY_FORMAT = "torch.memory_format"


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument of a call, as written so far."""

    keyword: str | None  # ``dim`` for ``dim=1``; None for a positional argument
    kind: ValueKind
    name: str | None = None  # the dotted name when ``kind`` is NAME


@dataclass(frozen=True, slots=True)
class CallContext:
    """The innermost open call around the cursor."""

    callee: str  # the callee as written, without spaces: ``nn.Conv2d``, ``self.fc``, ``x.view``
    callee_end: Position  # just after the callee, where jedi can be asked about it
    argument_index: int  # 0-based position of the argument the cursor is in (counting positional and keyword)
    positional_count: int  # positional arguments before the cursor's argument
    keyword: str | None  # the keyword the cursor's argument is for (``reduction=`` ... cursor)
    typing_name: str | None  # the identifier being typed where a keyword or value could start (``ker``)
    in_string: bool  # the cursor is inside a string literal that is the argument's value
    string_prefix: str = ""  # what was typed inside that string
    used_keywords: frozenset[str] = field(default_factory=frozenset)
    arguments: tuple[Argument, ...] = ()  # the arguments before the cursor's, in order
    current: Argument = Argument(None, ValueKind.EMPTY)  # the cursor's argument, as typed so far
    receiver_end: Position | None = None  # just after ``x`` in ``x.view``: None for a plain name (``max``)


# A closed bracket inside an argument stands for its contents: the kind of an argument needs no more than that.
_GROUP = -1


@dataclass(slots=True)
class _Frame:
    """One open bracket while reading tokens; for a call's parenthesis, the arguments read so far."""

    bracket: str
    callee: str | None = None
    callee_end: Position | None = None
    receiver_end: Position | None = None
    arguments: list[Argument] = field(default_factory=list)
    keyword: str | None = None  # the current argument's keyword, once its ``=`` is read
    value: list[tuple[int, str]] = field(default_factory=list)  # the current argument's value, as atoms
    atoms_before_equals: int = 0  # atoms of the current argument before its value (``name =`` is two)
    in_lambda_parameters: bool = False  # between ``lambda`` and its ``:``, commas separate no arguments
    had_comma: bool = False  # for a parenthesis: a tuple display, not a parenthesized expression

    def finish_argument(self) -> None:
        self.arguments.append(self.current_argument())
        self.keyword = None
        self.value = []
        self.had_comma = True

    def current_argument(self) -> Argument:
        kind, name = value_kind(self.value)
        return Argument(self.keyword, kind, name)


def _tokens(lines: list[str]) -> list[tokenize.TokenInfo]:
    text = "\n".join(lines)
    found: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            found.append(token)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # an open bracket or string at the end: the tokens so far are what we want
    return found


_SKIPPED = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12 splits f-strings into tokens
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def call_context(lines: list[str], position: Position, start_line: int | None = None) -> CallContext | None:
    """The open call around ``position`` (code points) in a document split into ``lines``; None outside calls.

    Tokens are read from ``start_line``, which must not be inside a string: the start of the statement around
    the cursor or before it (:meth:`ModuleIndex.statement_line_before`). Without it, the last 40 lines.
    """
    if position.line >= len(lines):
        return None
    first = max(0, position.line - _LOOKBACK_LINES)
    if start_line is not None and position.line - _MAX_STATEMENT_LINES <= start_line <= position.line:
        first = start_line
    window = [*lines[first : position.line], lines[position.line][: position.column]]
    # Indentation is dropped so that a window starting inside a block cannot end in a dedent the tokenizer
    # rejects; ``indents`` puts the columns back.
    indents = [len(line) - len(line.lstrip(" \t")) for line in window]
    tokens = _tokens([line[indent:] for line, indent in zip(window, indents, strict=True)])

    def original(row: int, column: int) -> Position:
        return Position(first + row - 1, column + indents[row - 1])

    stack: list[_Frame] = []
    in_string = False
    string_prefix = ""
    fstring_depth = 0
    for index, token in enumerate(tokens):
        kind, text = token.type, token.string
        if fstring_depth:  # inside a 3.12 f-string: its braces and commas are not the call's
            fstring_depth += (kind == _FSTRING_START) - (kind == _FSTRING_END)
            if not fstring_depth and stack:
                stack[-1].value.append((tokenize.STRING, "f''"))
            continue
        if kind == _FSTRING_START and _FSTRING_START is not None:
            fstring_depth = 1
            continue
        if kind in _SKIPPED:
            continue
        frame = stack[-1] if stack else None
        if kind == tokenize.OP and text in "([{":
            if frame is not None:
                frame.value.append((_GROUP, text))  # closed later; the contents stay in the new frame
            opened = _Frame(bracket=text)
            if text == "(":
                opened.callee, opened.receiver_end = _callee_before(tokens, index, original)
                opened.callee_end = original(*token.start)
            stack.append(opened)
        elif kind == tokenize.OP and text in ")]}":
            if stack:
                closed = stack.pop()
                if stack and stack[-1].value and stack[-1].value[-1][0] == _GROUP:
                    group = closed.bracket + ("," if closed.had_comma or not closed.value else "")
                    stack[-1].value[-1] = (_GROUP, group + text)
        elif frame is None or frame.bracket != "(":
            if frame is not None and kind == tokenize.OP and text == ",":
                frame.had_comma = True
            elif frame is not None:
                frame.value.append((kind, text))
        elif kind == tokenize.OP and text == "," and not frame.in_lambda_parameters:
            frame.finish_argument()
        elif kind == tokenize.OP and text == "=" and _is_keyword_equals(frame):
            frame.keyword = frame.value[0][1]
            frame.value = []
        elif kind == tokenize.ERRORTOKEN and text in ("'", '"'):
            # An unterminated string at the end of the window: the cursor is inside it.
            rest = "".join(t.string for t in tokens[index + 1 :])
            in_string, string_prefix = True, rest
            frame.value.append((tokenize.STRING, text + rest))
            break
        else:
            if kind == tokenize.NAME and text == "lambda":
                frame.in_lambda_parameters = True
            elif kind == tokenize.OP and text == ":" and frame.in_lambda_parameters:
                frame.in_lambda_parameters = False
            frame.value.append((kind, text))
    if not stack or stack[-1].bracket != "(" or stack[-1].callee is None:
        return None
    frame = stack[-1]
    typing_name = None
    last = tokens[-1] if tokens else None
    cursor = (len(window), position.column - indents[-1])
    if not in_string and last is not None and last.type == tokenize.NAME and last.end == cursor:
        typing_name = last.string
    keyword = frame.keyword
    used = {argument.keyword for argument in frame.arguments if argument.keyword}
    positional = sum(1 for argument in frame.arguments if argument.keyword is None)
    return CallContext(
        callee=frame.callee,
        callee_end=frame.callee_end,
        argument_index=len(frame.arguments),
        positional_count=positional,
        keyword=keyword,
        typing_name=typing_name,
        in_string=in_string,
        string_prefix=string_prefix,
        used_keywords=frozenset(used),
        arguments=tuple(frame.arguments),
        current=frame.current_argument(),
        receiver_end=frame.receiver_end,
    )


def call_of_callee(lines: list[str], callee_end: Position, start_line: int | None = None) -> CallContext | None:
    """The call whose callee ends at ``callee_end`` (``x.view`` in ``x.view(x.size(0), -1)``), read with every
    argument written, as if the cursor sat before its closing parenthesis (or at the end of its line while the
    call is still open). A name not followed by ``(`` reads as a call with no arguments yet, so that a hover on a
    bare name gets its usual overload the same way. None where no call can be read there."""
    if not 0 <= callee_end.line < len(lines):
        return None
    line = lines[callee_end.line]
    opening = callee_end.column + len(line[callee_end.column :]) - len(line[callee_end.column :].lstrip(" \t"))
    if line[opening : opening + 1] != "(":
        # Not called here: the same reading on the name followed by an opening parenthesis.
        written = [*lines[: callee_end.line], line[: callee_end.column] + "("]
        found = call_context(written, Position(callee_end.line, callee_end.column + 1), start_line)
        return found if found is not None and found.callee_end == callee_end else None
    window = "\n".join([line, *lines[callee_end.line + 1 : callee_end.line + _LOOKBACK_LINES]])
    closing = closing_bracket(window, opening)
    if closing < 0:
        end = Position(callee_end.line, len(line))
    else:
        before = window[:closing]
        newlines = before.count("\n")
        end = Position(callee_end.line + newlines, closing - (before.rfind("\n") + 1 if newlines else 0))
    found = call_context(lines, end, start_line)
    return found if found is not None and found.callee_end == Position(callee_end.line, opening) else None


def _is_keyword_equals(frame: _Frame) -> bool:
    """An ``=`` that follows a bare name opening the argument (``dim=``), not one inside ``lambda x=1:``."""
    return (
        frame.keyword is None
        and not frame.in_lambda_parameters
        and len(frame.value) == 1
        and frame.value[0][0] == tokenize.NAME
        and not keyword.iskeyword(frame.value[0][1])
    )


def value_kind(atoms: list[tuple[int, str]]) -> tuple[ValueKind, str | None]:
    """The kind of an argument's value from its atoms (tokens, closed brackets as one atom), and its dotted name
    when it is a plain name."""
    if not atoms:
        return ValueKind.EMPTY, None
    types = [kind for kind, _ in atoms]
    texts = [text for _, text in atoms]
    if texts[0] == "*" and types[0] == tokenize.OP:
        return ValueKind.STARRED, None
    if texts[0] == "**" and types[0] == tokenize.OP:
        return ValueKind.DOUBLE_STARRED, None
    if all(kind == tokenize.STRING for kind in types):
        prefix = texts[0][: min(texts[0].find(q) for q in "'\"" if q in texts[0])]
        return (ValueKind.BYTES if "b" in prefix.lower() else ValueKind.STR), None
    if len(atoms) <= 2 and types[-1] == tokenize.NUMBER and (len(atoms) == 1 or texts[0] in "+-"):
        return _number_kind(texts[-1]), None
    if len(atoms) == 1 and types[0] == _GROUP:
        group = texts[0]
        if group[0] == "[" or (group[0] == "(" and "," in group):
            return ValueKind.SEQUENCE, None
        return ValueKind.OTHER, None
    if len(atoms) == 1 and texts[0] in ("True", "False"):
        return ValueKind.BOOL, None
    if len(atoms) == 1 and texts[0] == "None":
        return ValueKind.NONE, None
    if _is_dotted_name(atoms):
        return ValueKind.NAME, "".join(texts)
    return ValueKind.OTHER, None


def _number_kind(literal: str) -> ValueKind:
    lowered = literal.lower()
    if lowered.endswith("j"):
        return ValueKind.COMPLEX
    if lowered.startswith(("0x", "0o", "0b")):
        return ValueKind.INT
    return ValueKind.FLOAT if any(mark in lowered for mark in ".e") else ValueKind.INT


def _is_dotted_name(atoms: list[tuple[int, str]]) -> bool:
    for number, (kind, text) in enumerate(atoms):
        if number % 2 == 0 and not (kind == tokenize.NAME and not keyword.iskeyword(text)):
            return False
        if number % 2 == 1 and text != ".":
            return False
    return len(atoms) % 2 == 1


def _callee_before(
    tokens: list[tokenize.TokenInfo], paren: int, original: Callable[[int, int], Position]
) -> tuple[str | None, Position | None]:
    """The dotted name just before an opening parenthesis (``nn.Conv2d``), or None (``f()(``, ``(a)(``), and the
    end of its receiver (``nn``) when it has one."""
    parts: list[str] = []
    receiver_end: Position | None = None
    index = paren - 1
    expect_name = True
    while index >= 0:
        token = tokens[index]
        if token.type in (tokenize.NL, tokenize.COMMENT):
            index -= 1
            continue
        if expect_name and token.type == tokenize.NAME and not keyword.iskeyword(token.string):
            parts.append(token.string)
            if len(parts) == 2:
                receiver_end = original(*token.end)
            expect_name = False
        elif not expect_name and token.type == tokenize.OP and token.string == ".":
            expect_name = True
        else:
            break
        index -= 1
    if not parts or expect_name:
        return None, None
    if index >= 0 and tokens[index].type == tokenize.NAME and tokens[index].string in ("def", "class"):
        return None, None  # ``class Net(nn.Module`` and ``def forward(self, x`` are not calls
    return ".".join(reversed(parts)), receiver_end


def attribute_context(line_prefix: str) -> tuple[str, str] | None:
    """``(receiver, partial)`` when the text before the cursor ends in ``receiver.partial``: ``("nn", "Li")``.

    Only plain dotted receivers (``torch.nn``, ``self.fc``, ``x``): anything else is for jedi.
    """
    match = _DOTTED_AT_END.search(line_prefix, max(0, len(line_prefix) - _LONGEST_DOTTED))
    if match is None:
        return None
    start = match.start()
    if start > 0 and (line_prefix[start - 1].isalnum() or line_prefix[start - 1] in "_.)]\"'"):
        return None  # ``f(x).y``, ``a[0].b``, ``"s".join``: not a plain dotted receiver
    if _inside_string_or_comment(line_prefix[:start]):
        return None
    return match.group(1), match.group(2) or ""


def dotted_partial(line_prefix: str) -> str | None:
    """The name being typed after a dot that follows any expression (``f(x).me``): ``"me"``; None elsewhere."""
    match = _PARTIAL_AFTER_DOT.search(line_prefix, max(0, len(line_prefix) - _LONGEST_DOTTED))
    if match is None or _inside_string_or_comment(line_prefix[: match.start()]):
        return None
    before = line_prefix[: match.start()].rstrip()
    if not before or not (before[-1] in ")]" or before[-1].isalnum() or before[-1] == "_"):
        return None  # ``1.`` is a float, ``..`` is nothing; a receiver ends in a name or a bracket
    if before[-1].isdigit() and re.search(r"(?<![\w.])\d+$", before):
        return None
    return match.group(1) or ""


def _inside_string_or_comment(prefix: str) -> bool:
    """A rough check on one line: an odd number of quotes, or a ``#`` outside quotes, before the cursor."""
    quote = None
    for char in prefix:
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#":
            return True
    return quote is not None
