"""Where the cursor is inside a call, from tokens: works on the half-typed code of an open call.

Signature help and argument completion run while the user is typing ``nn.Conv2d(3, 64, ker`` — code that does
not parse. This module reads the tokens of the last lines before the cursor, finds the innermost call whose
parenthesis is still open, and says which argument the cursor is in, whether it is a keyword, and whether the
cursor sits in the value of a keyword (``reduction='|``).
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from dataclasses import dataclass, field

from torchls.core.text import Position

# Identifiers as Python reads them, Chinese included: ``神经网络.Conv2d``.
_NAME = r"[^\W\d]\w*"
_DOTTED_AT_END = re.compile(rf"({_NAME}(?:\.{_NAME})*)\.({_NAME})?$")
_PARTIAL_AFTER_DOT = re.compile(rf"\.({_NAME})?$")
_LOOKBACK_LINES = 40  # without statement positions: calls spanning more lines than this are rare
_MAX_STATEMENT_LINES = 400  # a statement start further back than this is not read (a huge literal): too slow


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


def _tokens(lines: list[str]) -> list[tokenize.TokenInfo]:
    text = "\n".join(lines)
    found: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            found.append(token)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # an open bracket or string at the end: the tokens so far are what we want
    return found


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

    stack: list[dict] = []  # one entry per open bracket: its kind and, for calls, the arguments so far
    in_string = False
    string_prefix = ""
    for index, token in enumerate(tokens):
        kind, text = token.type, token.string
        if kind == tokenize.OP and text in "([{":
            callee = _callee_before(tokens, index) if text == "(" else None
            stack.append(
                {
                    "bracket": text,
                    "callee": callee,
                    "end": original(*token.start),
                    "args": 0,
                    "positional": 0,
                    "keyword": None,
                    "used": set(),
                    "current_is_keyword": False,
                }
            )
        elif kind == tokenize.OP and text in ")]}":
            if stack:
                stack.pop()
        elif kind == tokenize.OP and text == "," and stack and stack[-1]["bracket"] == "(":
            frame = stack[-1]
            if not frame["current_is_keyword"]:
                frame["positional"] += 1
            frame["args"] += 1
            frame["keyword"] = None
            frame["current_is_keyword"] = False
        elif kind == tokenize.OP and text == "=" and stack and stack[-1]["bracket"] == "(":
            previous = tokens[index - 1] if index else None
            if previous is not None and previous.type == tokenize.NAME:
                frame = stack[-1]
                frame["keyword"] = previous.string
                frame["used"].add(previous.string)
                frame["current_is_keyword"] = True
        elif kind == tokenize.ERRORTOKEN and text in ("'", '"'):
            # An unterminated string at the end of the window: the cursor is inside it.
            rest = "".join(t.string for t in tokens[index + 1 :])
            in_string, string_prefix = True, rest
            break
    if not stack or stack[-1]["bracket"] != "(" or stack[-1]["callee"] is None:
        return None
    frame = stack[-1]
    typing_name = None
    last = tokens[-1] if tokens else None
    cursor = (len(window), position.column - indents[-1])
    if not in_string and last is not None and last.type == tokenize.NAME and last.end == cursor:
        typing_name = last.string
        if frame["keyword"] == typing_name:  # ``reduction`` just typed, no ``=`` yet
            frame["keyword"] = None
    used = frozenset(frame["used"] - ({frame["keyword"]} if frame["keyword"] else set()))
    return CallContext(
        callee=frame["callee"],
        callee_end=frame["end"],
        argument_index=frame["args"],
        positional_count=frame["positional"],
        keyword=frame["keyword"],
        typing_name=typing_name,
        in_string=in_string,
        string_prefix=string_prefix,
        used_keywords=used,
    )


def _callee_before(tokens: list[tokenize.TokenInfo], paren: int) -> str | None:
    """The dotted name just before an opening parenthesis (``nn.Conv2d``), or None (``f()(``, ``(a)(``)."""
    parts: list[str] = []
    index = paren - 1
    expect_name = True
    while index >= 0:
        token = tokens[index]
        if token.type in (tokenize.NL, tokenize.COMMENT):
            index -= 1
            continue
        if expect_name and token.type == tokenize.NAME and not keyword.iskeyword(token.string):
            parts.append(token.string)
            expect_name = False
        elif not expect_name and token.type == tokenize.OP and token.string == ".":
            expect_name = True
        else:
            break
        index -= 1
    if not parts or expect_name:
        return None
    if index >= 0 and tokens[index].type == tokenize.NAME and tokens[index].string in ("def", "class"):
        return None  # ``class Net(nn.Module`` and ``def forward(self, x`` are not calls
    return ".".join(reversed(parts))


def attribute_context(line_prefix: str) -> tuple[str, str] | None:
    """``(receiver, partial)`` when the text before the cursor ends in ``receiver.partial``: ``("nn", "Li")``.

    Only plain dotted receivers (``torch.nn``, ``self.fc``, ``x``): anything else is for jedi.
    """
    match = _DOTTED_AT_END.search(line_prefix)
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
    match = _PARTIAL_AFTER_DOT.search(line_prefix)
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
