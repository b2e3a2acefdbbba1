"""The knowledge-base entry: its fields, and validation of one parsed YAML document into an :class:`Entry`.

Every message here is for a person fixing a YAML file, so it names the field and says what is expected, in
Chinese (team knowledge folders show these messages in the editor).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("function", "class", "method", "property", "attribute", "module")
RULE_CODE = re.compile(r"^TL\d{3}$")
DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
EXAMPLE_DEVICES = ("any", "cuda", "mps")
# How an example that needs a device gets one: this exact line, unindented, after its imports (the handbook's own
# idiom, so a pasted example runs). The runner swaps it for the device the user chose, on the same line.
DEVICE_LINE = 'device = "cuda" if torch.cuda.is_available() else "cpu"'
# The name examples once used for a device that only the runner defined; pasted, it fails with NameError.
OLD_DEVICE_NAME = "DEVICE"


@dataclass(frozen=True, slots=True)
class KbError:
    """A problem in a knowledge file, reported as ``path:line: message``."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True, slots=True)
class Choice:
    """One allowed value of a parameter that takes a fixed set (``reduction='mean'``), as Python source."""

    value: str
    desc: str


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    desc: str
    type: str | None = None
    default: str | None = None
    since: str | None = None  # torch version that added the parameter, when after 1.0
    choices: tuple[Choice, ...] = ()


@dataclass(frozen=True, slots=True)
class Example:
    title: str
    code: str
    device: str = "any"  # "cuda"/"mps": the example needs that device and is skipped elsewhere


@dataclass(frozen=True, slots=True)
class Pitfall:
    text: str
    rule: str | None = None  # the diagnostic code that catches this mistake, when one exists


@dataclass(frozen=True, slots=True)
class VersionNote:
    version: str
    note: str


@dataclass(frozen=True, slots=True)
class Entry:
    """One public torch API, as written in ``knowledge/<dotted/path>.yaml``."""

    name: str
    kind: str
    summary: str
    examples: tuple[Example, ...]
    pitfalls: tuple[Pitfall, ...]
    see_also: tuple[str, ...]
    signature: str | None = None
    description: str | None = None
    params: tuple[Param, ...] = ()
    omitted_params: tuple[str, ...] = ()
    shapes: tuple[tuple[str, str], ...] = ()
    returns: str | None = None
    versions: tuple[VersionNote, ...] = ()
    since: str | None = None  # torch version that added the API itself, when after 1.0
    url: str | None = None
    aliases: tuple[str, ...] = ()
    source: str = ""  # the file it came from
    line: int = 1

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass(slots=True)
class _Checker:
    """Collects errors for one document while its fields are read."""

    path: str
    lines: Mapping[str, int]
    document_line: int
    errors: list[KbError] = field(default_factory=list)

    def line_of(self, key: str) -> int:
        return self.lines.get(key, self.document_line)

    def fail(self, line: int, message: str) -> None:
        self.errors.append(KbError(self.path, line, message))

    def text(self, data: Mapping[str, Any], key: str, required: bool, line: int | None = None) -> str | None:
        value = data.get(key)
        line = line if line is not None else self.line_of(key)
        if value is None:
            if required:
                self.fail(line, f"缺少必填字段 `{key}`")
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.fail(line, f"字段 `{key}` 应为文本，实际是 {type(value).__name__}")
            return None
        text = str(value).strip()
        if required and not text:
            self.fail(line, f"字段 `{key}` 不能为空")
            return None
        return text

    def items(self, data: Mapping[str, Any], key: str, required: bool) -> list[tuple[Any, int]]:
        """The elements of list field ``key`` with their line numbers."""
        value = data.get(key)
        if value is None:
            if required:
                self.fail(self.line_of(key), f"缺少必填字段 `{key}`（至少一项）")
            return []
        if not isinstance(value, list):
            self.fail(self.line_of(key), f"字段 `{key}` 应为列表")
            return []
        if required and not value:
            self.fail(self.line_of(key), f"字段 `{key}` 至少需要一项")
        lines = getattr(value, "item_lines", None) or [self.line_of(key)] * len(value)
        return list(zip(value, lines, strict=True))

    def mapping(self, item: Any, key: str, line: int) -> Mapping[str, Any] | None:
        if not isinstance(item, Mapping):
            self.fail(line, f"`{key}` 的每一项应为映射（键: 值）")
            return None
        return item


_KNOWN_KEYS = frozenset(
    "name kind summary signature description params omitted_params shapes returns examples pitfalls see_also "
    "versions since url aliases".split()
)
_PARAM_KEYS = frozenset({"name", "desc", "type", "default", "since", "choices"})


def _lines_of(data: Any) -> Mapping[str, int]:
    return getattr(data, "key_lines", {})


def validate_entry(
    data: Any, path: str, expected_name: str | None, document_line: int = 1
) -> tuple[Entry | None, list[KbError]]:
    """Turn one loaded YAML document into an Entry, or report why it cannot be one.

    ``expected_name`` is the dotted name the file's path implies; an entry must live where its name says.
    An entry with any error is not returned: a half-valid card would mislead more than a missing one.
    """
    if not isinstance(data, Mapping):
        return None, [KbError(path, document_line, "文件内容应为一个映射（name/kind/summary/...），而不是列表或文本")]
    check = _Checker(path, _lines_of(data), getattr(data, "line", document_line))
    for key in data:
        if key not in _KNOWN_KEYS:
            check.fail(check.line_of(str(key)), f"未知字段 `{key}`（可用字段：{', '.join(sorted(_KNOWN_KEYS))}）")
    for key in getattr(data, "duplicate_keys", ()):
        check.fail(check.line_of(key), f"字段 `{key}` 重复出现")

    name = check.text(data, "name", required=True)
    if name is not None and not DOTTED_NAME.match(name):
        check.fail(check.line_of("name"), f"`name` 应为点分的 API 名（如 torch.nn.Linear），实际是 {name!r}")
    if name is not None and expected_name is not None and name != expected_name:
        check.fail(check.line_of("name"), f"`name` 是 {name}，但文件路径对应 {expected_name}：文件名应与 API 名一致")
    kind = check.text(data, "kind", required=True)
    if kind is not None and kind not in KINDS:
        check.fail(check.line_of("kind"), f"`kind` 应为 {' / '.join(KINDS)} 之一，实际是 {kind!r}")
    summary = check.text(data, "summary", required=True)
    if summary is not None and "\n" in summary:
        check.fail(check.line_of("summary"), "`summary` 应只有一行（一句话说明用途）")

    params = _params(check, data)
    examples = _examples(check, data)
    pitfalls = _pitfalls(check, data)
    see_also = _names(check, data, "see_also", required=True)
    versions = _versions(check, data)
    shapes = _shapes(check, data)
    for key in ("since",):
        value = check.text(data, key, required=False)
        if value is not None and not VERSION.match(value):
            check.fail(check.line_of(key), f"`{key}` 应为版本号（如 2.0），实际是 {value!r}")
    url = check.text(data, "url", required=False)
    if url is not None and not url.startswith(("https://", "http://")):
        check.fail(check.line_of("url"), "`url` 应为 http(s) 链接")
    returns = check.text(data, "returns", required=kind in ("function", "method", "property"))
    aliases = _names(check, data, "aliases", required=False)
    for alias in aliases:
        if not alias.startswith("torch."):
            # ``math.pi`` would make every ``math.pi`` in user code show the torch card.
            check.fail(check.line_of("aliases"), f"`aliases` 只能是 torch 里的名字，{alias!r} 不是")

    if check.errors or name is None or kind is None or summary is None:
        return None, check.errors
    entry = Entry(
        name=name,
        kind=kind,
        summary=summary,
        signature=check.text(data, "signature", required=False),
        description=check.text(data, "description", required=False),
        params=tuple(params),
        omitted_params=tuple(_names(check, data, "omitted_params", required=False, dotted=False)),
        shapes=tuple(shapes),
        returns=returns,
        examples=tuple(examples),
        pitfalls=tuple(pitfalls),
        see_also=tuple(see_also),
        versions=tuple(versions),
        since=check.text(data, "since", required=False),
        url=url,
        aliases=tuple(aliases),
        source=path,
        line=check.document_line,
    )
    return (entry, []) if not check.errors else (None, check.errors)


def _each_mapping(
    check: _Checker, data: Mapping[str, Any], key: str, required: bool, read: Callable[[Mapping[str, Any], int], Any]
) -> list[Any]:
    out = []
    for item, line in check.items(data, key, required):
        mapping = check.mapping(item, key, line)
        if mapping is not None:
            value = read(mapping, line)
            if value is not None:
                out.append(value)
    return out


def _params(check: _Checker, data: Mapping[str, Any]) -> list[Param]:
    seen: set[str] = set()

    def read(item: Mapping[str, Any], line: int) -> Param | None:
        for key in item:
            if key not in _PARAM_KEYS:
                check.fail(line, f"参数项中有未知字段 `{key}`（可用：{', '.join(sorted(_PARAM_KEYS))}）")
        name = check.text(item, "name", required=True, line=line)
        desc = check.text(item, "desc", required=True, line=line)
        if name is None or desc is None:
            return None
        if name in seen:
            check.fail(line, f"参数 `{name}` 重复说明")
        seen.add(name)
        since = check.text(item, "since", required=False, line=line)
        if since is not None and not VERSION.match(since):
            check.fail(line, f"参数 `{name}` 的 `since` 应为版本号，实际是 {since!r}")
        default = item.get("default")
        return Param(
            name=name,
            desc=desc,
            type=check.text(item, "type", required=False, line=line),
            default=None if default is None else str(default),
            since=since,
            choices=tuple(_choices(check, item, name, line)),
        )

    return _each_mapping(check, data, "params", False, read)


def _choices(check: _Checker, item: Mapping[str, Any], param: str, line: int) -> list[Choice]:
    """``choices: [{value: "'mean'", desc: ...}]``: each value is written as Python source, like ``default``."""
    raw = item.get("choices")
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw:
        check.fail(line, f"参数 `{param}` 的 `choices` 应为非空列表")
        return []
    out = []
    lines = getattr(raw, "item_lines", None) or [line] * len(raw)
    for choice, choice_line in zip(raw, lines, strict=True):
        if not isinstance(choice, Mapping) or set(choice) - {"value", "desc"}:
            check.fail(choice_line, f"参数 `{param}` 的每个 choice 应为 {{value, desc}}")
            continue
        value = check.text(choice, "value", required=True, line=choice_line)
        desc = check.text(choice, "desc", required=True, line=choice_line)
        if value is None or desc is None:
            continue
        try:
            ast.literal_eval(value)
        except (ValueError, SyntaxError):
            message = f"参数 `{param}` 的 choice 值应写成 Python 字面量（如 \"'mean'\"），实际是 {value!r}"
            check.fail(choice_line, message)
            continue
        out.append(Choice(value, desc))
    return out


def _examples(check: _Checker, data: Mapping[str, Any]) -> list[Example]:
    def read(item: Mapping[str, Any], line: int) -> Example | None:
        code = check.text(item, "code", required=True, line=line)
        title = check.text(item, "title", required=False, line=line) or "示例"
        device = check.text(item, "device", required=False, line=line) or "any"
        if device not in EXAMPLE_DEVICES:
            check.fail(line, f"示例的 `device` 应为 {' / '.join(EXAMPLE_DEVICES)} 之一，实际是 {device!r}")
        if code is None:
            return None
        try:
            compile(code, f"{check.path}:{line}", "exec")
        except SyntaxError as error:
            # A `code: |` block starts on the line after its key.
            code_line = _lines_of(item).get("code", line)
            check.fail(code_line + (error.lineno or 1), f"示例代码有语法错误：{error.msg}")
            return None
        return Example(title=title, code=code + "\n", device=device)

    return _each_mapping(check, data, "examples", True, read)


def old_device_lines(code: str) -> list[int]:
    """The lines (1-based) of ``code`` where it uses the name ``DEVICE``, which only the runner used to define.

    Names only: ``DEVICE`` in a string or a comment is text. Code that does not parse has none (its syntax error is
    reported on its own)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return sorted({node.lineno for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == OLD_DEVICE_NAME})


def old_device_message(lines: list[int]) -> str:
    """In Chinese: why an example must not use ``DEVICE``, and the line to write instead."""
    where = "、".join(str(n) for n in lines)
    return (
        f"示例代码第 {where} 行用了变量 `{OLD_DEVICE_NAME}`：它只在运行器里有定义，复制出去运行会报 NameError。"
        f"请在 import 之后单独写一行 `{DEVICE_LINE}`，再用 `device`"
        "（运行器会把这一行换成用户选的设备；python -m torchls.kb.device_line 可以自动改写）"
    )


def _pitfalls(check: _Checker, data: Mapping[str, Any]) -> list[Pitfall]:
    def read(item: Any, line: int) -> Pitfall | None:
        if isinstance(item, str):
            return Pitfall(item.strip())
        mapping = check.mapping(item, "pitfalls", line)
        if mapping is None:
            return None
        text = check.text(mapping, "text", required=True, line=line)
        rule = check.text(mapping, "rule", required=False, line=line)
        if rule is not None and not RULE_CODE.match(rule):
            check.fail(line, f"避坑条目的 `rule` 应为规则代码（如 TL301），实际是 {rule!r}")
        return Pitfall(text, rule) if text else None

    out = []
    for item, line in check.items(data, "pitfalls", True):
        pitfall = read(item, line)
        if pitfall is not None:
            out.append(pitfall)
    return out


def _names(check: _Checker, data: Mapping[str, Any], key: str, required: bool, dotted: bool = True) -> list[str]:
    out = []
    for item, line in check.items(data, key, required):
        if not isinstance(item, str) or (dotted and not DOTTED_NAME.match(item)):
            check.fail(line, f"`{key}` 的每一项应为 API 名（如 torch.nn.Linear），实际是 {item!r}")
            continue
        out.append(item)
    return out


def _versions(check: _Checker, data: Mapping[str, Any]) -> list[VersionNote]:
    def read(item: Mapping[str, Any], line: int) -> VersionNote | None:
        version = check.text(item, "version", required=True, line=line)
        note = check.text(item, "note", required=True, line=line)
        if version is not None and not VERSION.match(version):
            check.fail(line, f"`version` 应为版本号（如 1.10），实际是 {version!r}")
        return VersionNote(version, note) if version and note else None

    return _each_mapping(check, data, "versions", False, read)


def _shapes(check: _Checker, data: Mapping[str, Any]) -> list[tuple[str, str]]:
    value = data.get("shapes")
    if value is None:
        return []
    if not isinstance(value, Mapping):
        check.fail(check.line_of("shapes"), "`shapes` 应为映射（张量名: 形状说明）")
        return []
    return [(str(k), str(v).strip()) for k, v in value.items()]
