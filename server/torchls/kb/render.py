"""Markdown cards for hover, completion documentation, the full-card document and ``torchls explain``.

Two sizes of the same card:

- **compact** (hover, the default): the real signature, the one-line purpose, every pitfall (a long one cut to
  its first sentence, never dropped), a short example and one line that says where the rest is. At most
  :data:`MAX_HOVER_LINES` lines of Markdown, code blocks and blank lines included, for every shipped entry: a
  hover box in VS Code, a float in Neovim, and the box VS Code stacks under a diagnostic's message.
- **full** (``compact=False``: the ``hover.card`` setting, the ``torchls.showCard`` document, the terminal):
  everything the entry has, pitfalls right after the description so they are never scrolled away.

:func:`plain_text` turns the knowledge base's inline Markdown into text for the places that show none
(completion's ``labelDetails`` and ``detail``).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Literal

from torchls.core.brackets import balanced, closing_bracket, split_top_level
from torchls.core.overloads import parse_signature
from torchls.docinfo import SymbolDoc
from torchls.kb import versions
from torchls.kb.schema import DEVICE_LINE, Entry, Example, Param

KIND_LABELS = {
    "function": "函数",
    "class": "类",
    "method": "方法",
    "property": "属性",
    "attribute": "常量",
    "module": "模块",
}
# What jedi calls a symbol (``SymbolDoc.kind``), for a card without an entry.
JEDI_KIND_LABELS = {
    "function": "函数",
    "class": "类",
    "instance": "对象（实例）",
    "module": "模块",
    "property": "属性",
    "statement": "变量",
    "param": "参数",
    "keyword": "关键字",
}

MAX_HOVER_LINES = 20  # the compact card, in lines of Markdown
SHOW_CARD_COMMAND = "torchls.showCard"  # opens the full card as a document (torchls.lsp.show_card)

# Where the compact card says the full card is: a command link (VS Code runs it), the code action (other
# editors), or the command line (``torchls explain --short``).
Pointer = Literal["link", "action", "command-line"]

_MAX_FULL_OVERLOADS = 6
_MIN_EXAMPLE_LINES = 3  # fewer lines of code than this are no example: the card points to the full one instead
_PITFALL_CHARS = 60  # a longer pitfall shows its first sentence in the compact card
_PITFALL_HARD_CHARS = 90  # ... and a first sentence longer than this only its part before the first `：`
_MAX_ENGLISH_DOC = 1800
_MAX_ENGLISH_PARAM = 220
_TORCH_IMPORT = re.compile(r"(import|from)\s+torch\b")


def _code(text: str, language: str = "python") -> str:
    return f"```{language}\n{text.rstrip()}\n```"


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0].strip()


# ------------------------------------------------------------------------------------------- plain text

_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")


def plain_text(markdown: str) -> str:
    """``计算 `a + b`，**不是**原地操作`` -> ``计算 a + b，不是原地操作``: inline code loses its back-quotes and strong
    emphasis its stars, for fields an editor shows as plain text. The code itself is kept as written."""
    if "`" not in markdown and "**" not in markdown:
        return markdown  # most text: a long completion list converts every summary
    pieces: list[str] = []
    last = 0
    for match in _CODE_SPAN.finditer(markdown):
        pieces.append(_STRONG.sub(r"\1", markdown[last : match.start()]))
        code = match.group(2)
        if len(code) > 2 and code.startswith(" ") and code.endswith(" "):
            code = code[1:-1]  # CommonMark: `` `x` `` holds `x`
        pieces.append(code)
        last = match.end()
    pieces.append(_STRONG.sub(r"\1", markdown[last:]))
    return "".join(pieces)


# ------------------------------------------------------------------------------------------- signatures


def _param_name(param: str) -> str:
    return re.split(r"[:=\s]", param.strip().lstrip("*"), maxsplit=1)[0]


def public_parameters(signature: str) -> str:
    """The signature without private parameters (``torch.save(obj, f, _use_new_zipfile_serialization=True)`` ->
    ``torch.save(obj, f)``), still valid Python: a bare ``*`` or ``/`` left with nothing to mark goes too. The
    text is kept as it is when its parameter list cannot be split with certainty."""
    opening = signature.find("(")
    closing = closing_bracket(signature, opening) if opening >= 0 else -1
    if closing < 0:
        return signature
    inside = signature[opening + 1 : closing]
    if not balanced(inside):
        return signature
    params = [param.strip() for param in split_top_level(inside, ",")]
    params = [param for param in params if param]
    kept = [param for param in params if not _param_name(param).startswith("_") or param in ("*", "/")]
    if len(kept) == len(params):
        return signature
    while kept and kept[0] == "/":
        kept.pop(0)  # every positional-only parameter was private
    tidy: list[str] = []
    for index, param in enumerate(kept):
        following = kept[index + 1] if index + 1 < len(kept) else None
        if param == "*" and (following is None or following.startswith("**") or following == "/"):
            continue  # a bare `*` must be followed by a named parameter
        tidy.append(param)
    return signature[: opening + 1] + ", ".join(tidy) + signature[closing:]


def _public_signature(entry_name: str, signature: str) -> str:
    """jedi writes ``Linear(in_features: int, ...)``; the card shows the public ``torch.nn.Linear(...)``, with
    torch's private aliases spelled out as signature help spells them (``_size_2_t`` -> ``int | tuple[int, int]``)."""
    short = entry_name.rsplit(".", 1)[-1]
    if signature.startswith(short + "("):
        signature = entry_name + signature[len(short) :]
    return public_parameters(parse_signature(signature).label)


def _signatures(entry: Entry, live: SymbolDoc | None, chosen: Sequence[str] | None = None) -> list[str]:
    """The card's signatures: ``chosen`` where the caller chose them (a hover on a call: the overload it calls
    first, :mod:`torchls.overload_choice`), else the installed torch's, else the handbook's."""
    if chosen:
        return [public_parameters(signature) for signature in chosen]
    signatures = [_public_signature(entry.name, s) for s in (live.signatures if live else ())]
    if not signatures and entry.signature:
        signatures = [public_parameters(entry.signature)]
    return signatures


# ------------------------------------------------------------------------------------------- versions


def version_tuple(version: str) -> tuple[int, ...] | None:
    """``2.13.0+cpu`` -> (2, 13, 0); ``1.13`` -> (1, 13); None for text that does not start with a version."""
    match = _VERSION_PREFIX.match(version.strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else None


def _older(installed: str | None, needed: str) -> str | None:
    """The installed version, shortened (``1.13``), when it is older than ``needed``; else None."""
    have, want = version_tuple(installed or ""), version_tuple(needed)
    if have is None or want is None:
        return None
    length = max(len(have), len(want))
    if have + (0,) * (length - len(have)) >= want + (0,) * (length - len(want)):
        return None
    return ".".join(map(str, have[:2]))


_VERSION_PREFIX = re.compile(r"\d+(\.\d+)*")


def api_since(entry: Entry) -> str | None:
    """The release that added the API: the entry's ``since``, else the version table's (:mod:`torchls.kb.versions`)."""
    return entry.since or versions.api_since(entry.name)


def param_since(entry: Entry, param: Param) -> str | None:
    """The release that added a parameter: the entry's ``since``, else the version table's."""
    return param.since or versions.param_since(entry.name, param.name)


def _api_too_new(entry: Entry, torch_version: str | None) -> str | None:
    since = api_since(entry)
    older = _older(torch_version, since) if since else None
    return f"⚠️ 这个 API 需要 torch ≥ {since}，当前环境为 {older}。" if older else None


def _params_too_new(entry: Entry, torch_version: str | None) -> str | None:
    """One line naming the documented parameters the installed torch does not have yet (compact card)."""
    if torch_version is None:
        return None
    sinces = [(p, param_since(entry, p)) for p in entry.params]
    newer = [(p, since) for p, since in sinces if since and _older(torch_version, since)]
    if not newer:
        return None
    installed = _older(torch_version, newer[0][1])
    names = "、".join(f"`{p.name}`（≥ {since}）" for p, since in newer)
    return f"⚠️ 当前环境的 torch {installed} 还没有这些参数：{names}。"


# ------------------------------------------------------------------------------------------- sections


def _param_line(param: Param, torch_version: str | None = None, since: str | None = None) -> str:
    """One parameter; ``since`` is the release that added it (the entry's or the version table's)."""
    since = since or param.since
    details = [f"`{param.type}`"] if param.type else []
    if param.default is not None:
        details.append(f"默认 `{param.default}`")
    if since:
        details.append(f"torch ≥ {since}")
    head = f"- `{param.name}`" + (f"（{'，'.join(details)}）" if details else "")
    older = _older(torch_version, since) if since else None
    warning = f"⚠️ 此参数需要 torch ≥ {since}，当前环境为 {older}。" if older else ""
    choices = "".join(f"\n  - `{choice.value}`：{choice.desc}" for choice in param.choices)
    return f"{head}：{warning}{param.desc}{choices}"


def _english(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _is_private(name: str) -> bool:
    return name.startswith("_")


def _params_section(entry: Entry, live: SymbolDoc | None, torch_version: str | None) -> list[str]:
    lines = [_param_line(p, torch_version, param_since(entry, p)) for p in entry.params if not _is_private(p.name)]
    if live is not None:
        documented = {p.name for p in entry.params} | set(entry.omitted_params)
        for name in live.param_names:
            if name in documented or name in ("self", "cls") or _is_private(name):
                continue
            english = live.param_docs.get(name)
            text = f"*（英文原文）* {_english(english, _MAX_ENGLISH_PARAM)}" if english else "*（暂无中文说明）*"
            lines.append(f"- `{name}`：{text}")
    return ["**参数**", *lines] if lines else []


def _top_level(text: str) -> Iterator[int]:
    """Indexes of the characters of ``text`` outside inline code and brackets: where a sentence may end."""
    depth, in_code = 0, False
    for index, char in enumerate(text):
        if char == "`":
            in_code = not in_code
        elif in_code:
            continue
        elif char in "（([":
            depth += 1
        elif char in "）)]":
            depth = max(depth - 1, 0)
        elif depth == 0:
            yield index


def short_pitfall(text: str) -> str:
    """A pitfall for the compact card: as written when short; else its first sentence (up to the first `。` or
    `；`), and for a first sentence that is still long, its claim before the first `：`. Cut text ends in `…`."""
    text = text.strip()
    if len(text) <= _PITFALL_CHARS:
        return text
    cut = text
    for index in _top_level(text):
        if text[index] in "。；！？" and index < len(text) - 1:
            cut = text[:index]
            break
    if len(cut) > _PITFALL_HARD_CHARS:
        colon = next((i for i in _top_level(cut) if cut[i] == "：" and i >= 12), None)
        if colon is not None:
            cut = cut[:colon]
    return text if cut == text else cut.rstrip("，、：") + "…"


def _pitfall_lines(entry: Entry, compact: bool) -> list[str]:
    if not entry.pitfalls:
        return []
    if compact:
        items = [f"- {short_pitfall(p.text)}" + (f"（`{p.rule}`）" if p.rule else "") for p in entry.pitfalls]
    else:
        items = [f"- {p.text}" + (f"（torchls 会检查：`{p.rule}`）" if p.rule else "") for p in entry.pitfalls]
    return ["**⚠️ 避坑**", *items]


def _example_body(example: Example) -> list[str]:
    """The example's code for the compact card: without its leading torch imports and device line
    (:data:`~torchls.kb.schema.DEVICE_LINE`) and without blank lines (the full card keeps the runnable script)."""
    lines = example.code.rstrip().splitlines()
    while lines and (not lines[0].strip() or _TORCH_IMPORT.match(lines[0]) or lines[0].rstrip() == DEVICE_LINE):
        lines.pop(0)
    return [line for line in lines if line.strip()]


def _short_example(entry: Entry, room: int) -> tuple[Example, list[str]] | None:
    """The example that fits in ``room`` lines of code: the first one when it fits, else the first that does,
    else the first one cut short. None when there is no room for an example at all."""
    if room < _MIN_EXAMPLE_LINES or not entry.examples:
        return None
    bodies = [(example, _example_body(example)) for example in entry.examples]
    fitting = next(((example, body) for example, body in bodies if body and len(body) <= room), None)
    if fitting is not None:
        return fitting
    example, body = bodies[0]
    return example, [*body[: room - 1], "# ……（完整示例见完整卡片）"]


def show_card_link(name: str) -> str:
    """``command:torchls.showCard?<arguments>``: a link VS Code runs as the command (its arguments are a JSON
    array, percent-encoded)."""
    return f"command:{SHOW_CARD_COMMAND}?{urllib.parse.quote(json.dumps([{'name': name}], separators=(',', ':')))}"


def _pointer_line(entry: Entry, live: SymbolDoc | None, overloads: int, pointer: Pointer) -> str:
    """The compact card's last line: what the full card adds, and how to open it."""
    has_params = any(not _is_private(p.name) for p in entry.params) or bool(live and live.param_names)
    sections = (("参数", has_params), ("形状", bool(entry.shapes)), ("返回值", bool(entry.returns)))
    adds = [what for what, present in sections if present]
    contents = ("、".join(adds) + "和" if adds else "") + ("全部示例" if len(entry.examples) > 1 else "示例")
    if pointer == "link":
        where = f"[完整卡片]({show_card_link(entry.name)})（{contents}）"
    elif pointer == "command-line":
        where = f"完整卡片（{contents}）：`torchls explain {entry.name}`"
    else:
        where = f"完整卡片（{contents}）：代码操作“查看完整卡片”"
    extras = [f"另有 {overloads} 个重载"] if overloads else []
    if entry.url:
        extras.append(f"[官方文档]({entry.url})")
    return " · ".join([where, *extras])


# ------------------------------------------------------------------------------------------- cards


def _summary_line(entry: Entry) -> str:
    return f"**{entry.name}** · {KIND_LABELS.get(entry.kind, entry.kind)}：{entry.summary}"


def _compact_card(
    entry: Entry,
    live: SymbolDoc | None,
    heading: str | None,
    torch_version: str | None,
    pointer: Pointer,
    chosen: Sequence[str] | None = None,
) -> str:
    # Built line by line: the line budget counts every line. A paragraph right after a closing fence needs no
    # blank line before it; one after a list does (it would continue the list's last item).
    lines: list[str] = [heading, ""] if heading else []
    signatures = _signatures(entry, live, chosen)
    if signatures:
        lines += ["```python", signatures[0], "```"]
    first_signature_at = len(lines) - 2
    lines.append(_summary_line(entry))
    warnings = [w for w in (_api_too_new(entry, torch_version), _params_too_new(entry, torch_version)) if w]
    if warnings:
        lines += ["", " ".join(warnings)]
    pitfalls = _pitfall_lines(entry, compact=True)
    if pitfalls:
        lines += ["", *pitfalls]
    pointer_line = _pointer_line(entry, live, max(len(signatures) - 1, 0), pointer)
    room = MAX_HOVER_LINES - len(lines) - 5  # a blank line, the title, two fences and the pointer line
    example = _short_example(entry, room)
    if example is None:
        lines += ["", pointer_line]
    else:
        shown, code = example
        lines += ["", f"**示例：{shown.title}**", "```python", *code, "```", pointer_line]
    # The other overloads, after the first (the one a call calls), in the lines the budget leaves.
    others = signatures[1 : 1 + max(MAX_HOVER_LINES - len(lines), 0)]
    if others:
        lines[-1] = _pointer_line(entry, live, len(signatures) - 1 - len(others), pointer)
        lines[first_signature_at + 1 : first_signature_at + 1] = others
    return "\n".join(lines)


def _full_card(
    entry: Entry,
    live: SymbolDoc | None,
    heading: str | None,
    torch_version: str | None,
    chosen: Sequence[str] | None = None,
) -> str:
    parts: list[str] = [heading] if heading else []
    signatures = _signatures(entry, live, chosen)
    if signatures:
        shown = signatures[:_MAX_FULL_OVERLOADS]
        block = _code("\n".join(shown))
        if len(signatures) > len(shown):
            block += f"\n\n*另有 {len(signatures) - len(shown)} 个重载，见官方文档。*"
        parts.append(block)
    parts.append(_summary_line(entry))
    warning = _api_too_new(entry, torch_version)
    if warning:
        parts.append(warning)
    if entry.description:
        parts.append(entry.description.strip())
    pitfalls = _pitfall_lines(entry, compact=False)
    if pitfalls:
        parts.append("\n".join(pitfalls))
    params = _params_section(entry, live, torch_version)
    if params:
        parts.append("\n".join(params))
    if entry.shapes:
        parts.append("\n".join(["**形状**", *(f"- `{name}`：{text}" for name, text in entry.shapes)]))
    if entry.returns:
        parts.append(f"**返回**：{entry.returns}")
    for example in entry.examples:
        parts.append(f"**示例：{example.title}**\n{_code(example.code)}")
    if entry.see_also:
        parts.append("**相关**：" + " · ".join(f"`{name}`" for name in entry.see_also))
    notes = []
    since = api_since(entry)
    if since:
        notes.append(f"torch {since} 起提供")
    notes.extend(f"{v.version}：{v.note}" for v in entry.versions)
    # The table's deprecation and removal, unless the entry's own notes already tell that story.
    said = " ".join(v.note for v in entry.versions)
    deprecated, removed = versions.deprecated_since(entry.name), versions.removed_in(entry.name)
    if deprecated and "弃用" not in said:
        notes.append(f"torch {deprecated} 起弃用")
    if removed and not any(word in said for word in ("移除", "删除")):
        notes.append(f"torch {removed} 起移除")
    if notes:
        parts.append("**版本**：" + "；".join(note.rstrip("。；") for note in notes) + "。")
    if entry.url:
        parts.append(f"[官方文档]({entry.url})")
    return "\n\n".join(parts)


def render_card(
    entry: Entry,
    live: SymbolDoc | None = None,
    compact: bool = True,
    heading: str | None = None,
    torch_version: str | None = None,
    pointer: Pointer = "action",
    signatures: Sequence[str] | None = None,
) -> str:
    """The Chinese card of ``entry``; ``live`` (from jedi) supplies the installed torch's real signature, and
    ``torch_version`` (the user's torch) turns on warnings for an API or parameters newer than it.
    ``signatures``: the labels to show, in order, where the caller chose the overload (a hover on a call).

    ``compact``: the hover card (see the module's docstring), its last line saying where the full card is
    (``pointer``); otherwise the full card.
    """
    if compact:
        return _compact_card(entry, live, heading, torch_version, pointer, signatures)
    return _full_card(entry, live, heading, torch_version, signatures)


def card_document(entry: Entry, live: SymbolDoc | None = None, torch_version: str | None = None) -> str:
    """The full card as a Markdown document of its own (the ``torchls.showCard`` command): a title, then the card."""
    return f"# {entry.name}\n\n{_full_card(entry, live, None, torch_version)}\n"


def render_param(
    entry: Entry | None, owner: str, name: str, live: SymbolDoc | None = None, torch_version: str | None = None
) -> str | None:
    """The card for a keyword argument ``name=`` in a call of ``owner``."""
    param = entry.param(name) if entry else None
    title = f"**`{name}`** — `{owner}` 的参数"
    if param is not None:
        line = _param_line(param, torch_version, param_since(entry, param) if entry else None)
        return f"{title}\n\n{line[2:]}" + (f"\n\n{entry.summary}" if entry else "")
    english = live.param_docs.get(name) if live else None
    if english:
        return f"{title}\n\n*（英文原文，暂无中文说明）* {_english(english, 600)}"
    return None


def render_fallback(
    name: str, live: SymbolDoc, heading: str | None = None, signatures: Sequence[str] | None = None
) -> str:
    """A torch symbol without an entry: torch's own docstring, marked as the English original. Without a
    docstring the card says so and shows what jedi knows: the signature, or the kind of symbol. ``signatures``
    as for :func:`render_card`."""
    parts = [heading] if heading else []
    if signatures:
        signatures = [public_parameters(signature) for signature in signatures]
    else:
        signatures = [_public_signature(name, s) for s in live.signatures]
    if signatures:
        parts.append(_code("\n".join(signatures[:_MAX_FULL_OVERLOADS])))
    doc = live.docstring.strip()
    # jedi puts the signatures at the top of the docstring; they are shown above already.
    lines = doc.splitlines()
    while lines and any(lines[0].startswith(s.split("(", 1)[0] + "(") for s in live.signatures):
        lines.pop(0)
    doc = "\n".join(lines).strip()
    kind = JEDI_KIND_LABELS.get(live.kind, f"`{live.kind}`" if live.kind else "")
    title = f"**{name}**" + (f" · {kind}" if kind else "")
    if doc:
        parts.append(f"{title} — 暂无中文条目，以下为 torch 自带的英文文档（English original）。")
        if len(doc) > _MAX_ENGLISH_DOC:
            doc = doc[:_MAX_ENGLISH_DOC].rsplit("\n", 1)[0] + "\n…"
        parts.append(_code(doc, "text"))
    else:
        parts.append(f"{title} — 暂无中文条目，torch 也没有为它写文档（没有 docstring）。")
        if not signatures:
            known = f"jedi 只知道它是{kind}" if kind else "jedi 不知道它的种类"
            parts.append(f"{known}，没有签名可以显示。")
    parts.append("*提示：这个 API 还没有中文条目，欢迎在 knowledge/ 中补充。*")
    return "\n\n".join(parts)
