"""The Chinese writing rules of the handbook, checked on a loaded entry.

These are style, not validity: an entry that breaks them still loads and shows in the editor, but ``torchls kb
check`` reports it and the shipped knowledge base must have none. Inline code (back-quoted) is exempt: inside it
``(N, C)`` and ``a,b`` are code, not Chinese punctuation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from torchls.kb.schema import Entry, KbError, old_device_lines, old_device_message

_HAN = r"[\u4e00-\u9fff]"
_LATIN = r"[A-Za-z0-9`]"
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_RULES = (
    (re.compile(_HAN + _LATIN), "中文与英文、数字或代码之间要有一个空格"),
    (re.compile(_LATIN + _HAN), "英文、数字或代码与中文之间要有一个空格"),
    (re.compile(_HAN + r"[,;:!?()]|[,;:!?(]" + _HAN), "中文句子里要用全角标点（，；：！？（））"),
)
_SUMMARY_ENDINGS = ("。", "！", "？")


def _texts(entry: Entry) -> Iterator[tuple[str, str]]:
    """Every piece of prose in an entry, with the field it comes from."""
    yield "summary", entry.summary
    if entry.description:
        yield "description", entry.description
    if entry.returns:
        yield "returns", entry.returns
    for param in entry.params:
        yield f"params.{param.name}", param.desc
        for choice in param.choices:
            yield f"params.{param.name}.choices", choice.desc
    for name, text in entry.shapes:
        yield f"shapes.{name}", text
    for index, example in enumerate(entry.examples, 1):
        yield f"examples[{index}].title", example.title
    for index, pitfall in enumerate(entry.pitfalls, 1):
        yield f"pitfalls[{index}]", pitfall.text
    for note in entry.versions:
        yield f"versions.{note.version}", note.note


def style_problems(entry: Entry) -> list[KbError]:
    """The places where ``entry`` breaks the writing rules of ``knowledge/README.md``, one error per field."""
    problems = []
    summary = entry.summary.strip()
    if "\n" in summary:
        problems.append(KbError(entry.source, entry.line, "summary 只能有一行"))
    if not summary.endswith(_SUMMARY_ENDINGS):
        problems.append(KbError(entry.source, entry.line, "summary 要以句号结尾"))
    unfinished = [field for field, text in _texts(entry) if "TODO" in text]
    unfinished += ["see_also"] if "TODO" in entry.see_also else []
    unfinished += [f"examples[{i}].code" for i, example in enumerate(entry.examples, 1) if "TODO" in example.code]
    if unfinished:
        problems.append(KbError(entry.source, entry.line, f"还有没写完的 TODO：{'、'.join(unfinished)}"))
    for index, example in enumerate(entry.examples, 1):
        # Not an error that drops the entry: a team's old examples still load, and the runner still defines DEVICE.
        if lines := old_device_lines(example.code):
            problems.append(KbError(entry.source, entry.line, f"examples[{index}].code：{old_device_message(lines)}"))
    for field, text in _texts(entry):
        prose = _INLINE_CODE.sub("`code`", text)
        for pattern, message in _RULES:
            match = pattern.search(prose)
            if match:
                around = prose[max(0, match.start() - 6) : match.end() + 6].replace("\n", " ")
                problems.append(KbError(entry.source, entry.line, f"{field}：{message}（“{around}”）"))
    return problems
