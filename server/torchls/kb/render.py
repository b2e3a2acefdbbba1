"""Markdown cards for hover, completion documentation and ``torchls explain``.

A hover card must be readable in a small popup: the real signature first, then what the API is for, its
parameters, shapes and return value, the pitfalls (always shown, never trimmed), one example, related APIs,
version notes and the link. ``compact=False`` (the terminal) keeps the whole description and every example.
"""

from __future__ import annotations

import re

from torchls.docinfo import SymbolDoc
from torchls.kb.schema import Entry, Param

KIND_LABELS = {
    "function": "函数",
    "class": "类",
    "method": "方法",
    "property": "属性",
    "attribute": "常量",
    "module": "模块",
}
_MAX_OVERLOADS = 2
_MAX_HOVER_PARAMS = 8
_MAX_EXAMPLE_LINES = 18
_MAX_ENGLISH_DOC = 1800
_MAX_ENGLISH_PARAM = 220


def _code(text: str, language: str = "python") -> str:
    return f"```{language}\n{text.rstrip()}\n```"


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0].strip()


def _public_signature(entry_name: str, signature: str) -> str:
    """jedi writes ``Linear(in_features: int, ...)``; the card shows the public ``torch.nn.Linear(...)``."""
    short = entry_name.rsplit(".", 1)[-1]
    if signature.startswith(short + "("):
        return entry_name + signature[len(short) :]
    return signature


def _signature_block(entry: Entry, live: SymbolDoc | None) -> str | None:
    signatures = [_public_signature(entry.name, s) for s in (live.signatures if live else ())]
    if not signatures and entry.signature:
        signatures = [entry.signature]
    if not signatures:
        return None
    shown = signatures[:_MAX_OVERLOADS]
    block = _code("\n".join(shown))
    if len(signatures) > len(shown):
        block += f"\n\n*另有 {len(signatures) - len(shown)} 个重载，见官方文档。*"
    return block


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


def _param_line(param: Param, torch_version: str | None = None) -> str:
    details = [f"`{param.type}`"] if param.type else []
    if param.default is not None:
        details.append(f"默认 `{param.default}`")
    if param.since:
        details.append(f"torch ≥ {param.since}")
    head = f"- `{param.name}`" + (f"（{'，'.join(details)}）" if details else "")
    older = _older(torch_version, param.since) if param.since else None
    warning = f"⚠️ 此参数需要 torch ≥ {param.since}，当前环境为 {older}。" if older else ""
    choices = "".join(f"\n  - `{choice.value}`：{choice.desc}" for choice in param.choices)
    return f"{head}：{warning}{param.desc}{choices}"


_VERSION_PREFIX = re.compile(r"\d+(\.\d+)*")


def _english(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _params_section(entry: Entry, live: SymbolDoc | None, torch_version: str | None) -> list[str]:
    lines = [_param_line(p, torch_version) for p in entry.params]
    if live is not None:
        documented = {p.name for p in entry.params} | set(entry.omitted_params)
        for name in live.param_names:
            if name in documented or name in ("self", "cls"):
                continue
            english = live.param_docs.get(name)
            text = f"*（英文原文）* {_english(english, _MAX_ENGLISH_PARAM)}" if english else "*（暂无中文说明）*"
            lines.append(f"- `{name}`：{text}")
    return ["**参数**", *lines] if lines else []


def _pitfalls_section(entry: Entry) -> str | None:
    if not entry.pitfalls:
        return None
    pitfalls = [f"- {p.text}" + (f"（torchls 会检查：`{p.rule}`）" if p.rule else "") for p in entry.pitfalls]
    return "\n".join(["**⚠️ 避坑**", *pitfalls])


def render_card(
    entry: Entry,
    live: SymbolDoc | None = None,
    compact: bool = True,
    heading: str | None = None,
    torch_version: str | None = None,
) -> str:
    """The Chinese card of ``entry``; ``live`` (from jedi) supplies the installed torch's real signature, and
    ``torch_version`` (the user's torch) turns on warnings for an API or parameters newer than it.

    ``compact`` (hover): the pitfalls come right after the summary so they are never scrolled away, the
    description is its first paragraph, at most :data:`_MAX_HOVER_PARAMS` parameters and one example show.
    """
    parts: list[str] = []
    if heading:
        parts.append(heading)
    signature = _signature_block(entry, live)
    if signature:
        parts.append(signature)
    parts.append(f"**{entry.name}** · {KIND_LABELS.get(entry.kind, entry.kind)}：{entry.summary}")
    older = _older(torch_version, entry.since) if entry.since else None
    if older:
        parts.append(f"⚠️ 这个 API 需要 torch ≥ {entry.since}，当前环境为 {older}。")
    if entry.description:
        parts.append(_first_paragraph(entry.description) if compact else entry.description.strip())
    pitfalls = _pitfalls_section(entry)
    if compact and pitfalls:
        parts.append(pitfalls)
    params = _params_section(entry, live, torch_version)
    if compact and len(params) > _MAX_HOVER_PARAMS + 1:
        hidden = len(params) - 1 - _MAX_HOVER_PARAMS
        more = f"- ……另有 {hidden} 个参数，悬停在参数名上或用 `torchls explain` 查看"
        params = [*params[: _MAX_HOVER_PARAMS + 1], more]
    if params:
        parts.append("\n".join(params))
    if entry.shapes:
        parts.append("\n".join(["**形状**", *(f"- `{name}`：{text}" for name, text in entry.shapes)]))
    if entry.returns:
        parts.append(f"**返回**：{entry.returns}")
    if not compact and pitfalls:
        parts.append(pitfalls)
    for example in entry.examples[:1] if compact else entry.examples:
        code = example.code.rstrip().splitlines()
        if compact and len(code) > _MAX_EXAMPLE_LINES:
            code = [*code[:_MAX_EXAMPLE_LINES], "# ……（完整示例见 torchls explain）"]
        parts.append(f"**示例：{example.title}**\n{_code(chr(10).join(code))}")
    if entry.see_also:
        parts.append("**相关**：" + " · ".join(f"`{name}`" for name in entry.see_also))
    notes = []
    if entry.since:
        notes.append(f"torch {entry.since} 起提供")
    notes.extend(f"{v.version}：{v.note}" for v in entry.versions)
    if notes:
        parts.append("**版本**：" + "；".join(note.rstrip("。；") for note in notes) + "。")
    if entry.url:
        parts.append(f"[官方文档]({entry.url})")
    return "\n\n".join(parts)


def render_param(
    entry: Entry | None, owner: str, name: str, live: SymbolDoc | None = None, torch_version: str | None = None
) -> str | None:
    """The card for a keyword argument ``name=`` in a call of ``owner``."""
    param = entry.param(name) if entry else None
    title = f"**`{name}`** — `{owner}` 的参数"
    if param is not None:
        line = _param_line(param, torch_version)
        return f"{title}\n\n{line[2:]}" + (f"\n\n{entry.summary}" if entry else "")
    english = live.param_docs.get(name) if live else None
    if english:
        return f"{title}\n\n*（英文原文，暂无中文说明）* {_english(english, 600)}"
    return None


def render_fallback(name: str, live: SymbolDoc, heading: str | None = None) -> str:
    """A torch symbol without an entry: torch's own docstring, marked as the English original."""
    parts = [heading] if heading else []
    if live.signatures:
        parts.append(_code("\n".join(_public_signature(name, s) for s in live.signatures[:_MAX_OVERLOADS])))
    parts.append(f"**{name}** — 暂无中文条目，以下为 torch 自带的英文文档（English original）。")
    doc = live.docstring.strip()
    # jedi puts the signatures at the top of the docstring; they are shown above already.
    lines = doc.splitlines()
    while lines and any(lines[0].startswith(s.split("(", 1)[0] + "(") for s in live.signatures):
        lines.pop(0)
    doc = "\n".join(lines).strip()
    if doc:
        if len(doc) > _MAX_ENGLISH_DOC:
            doc = doc[:_MAX_ENGLISH_DOC].rsplit("\n", 1)[0] + "\n…"
        parts.append(_code(doc, "text"))
    parts.append("*提示：这个 API 还没有中文条目，欢迎在 knowledge/ 中补充。*")
    return "\n\n".join(parts)
