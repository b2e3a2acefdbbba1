"""One typed settings tree for every way settings arrive.

``initializationOptions``, ``workspace/didChangeConfiguration``, ``workspace/configuration`` and the command
line all go through :func:`parse_settings`. A value of the wrong type is reported (in Chinese, for the editor)
and replaced by its default; the other settings still apply. An unknown key is reported too, so a typo does not
fail silently. JSON keys are camelCase; nested sections (``diagnostics``) are JSON objects, exactly as VS Code
delivers ``torchls.diagnostics.select``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

SECTION = "torchls"
# Settings of the editor's client itself (VS Code sends the whole ``torchls`` section): not the server's to read.
CLIENT_ONLY_KEYS = frozenset({"trace"})
SEVERITY_NAMES = ("error", "warning", "information", "hint")


def _in_range(low: int, high: int):
    """A field check: an integer from ``low`` to ``high``."""

    def check(value: int) -> str | None:
        return None if low <= value <= high else f"应为 {low} 到 {high} 之间的整数，实际是 {value!r}"

    return check


def _device(value: str) -> str | None:
    if re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", value):
        return None
    return f"应为 auto、cpu、cuda、cuda:N 或 mps，实际是 {value!r}"


@attrs.frozen
class DiagnosticsSettings:
    enable: bool = attrs.field(default=True, metadata={"key": "enable", "doc": "是否报告 torchls 的诊断"})
    select: tuple[str, ...] = attrs.field(
        default=(), metadata={"key": "select", "doc": "只启用这些规则代码或前缀（如 TL1、TL301）；为空时启用全部"}
    )
    ignore: tuple[str, ...] = attrs.field(
        default=(), metadata={"key": "ignore", "doc": "不启用这些规则代码或前缀（比 select 更具体时优先）"}
    )
    severity: tuple[tuple[str, str], ...] = attrs.field(
        default=(),
        metadata={
            "key": "severity",
            "doc": '按规则代码或前缀改变严重程度：error、warning、information 或 hint（如 {"TL4": "hint"}）',
        },
    )
    debounce_ms: int = attrs.field(
        default=10,
        metadata={"key": "debounceMs", "doc": "输入停止多少毫秒后重新检查（0 到 5000）", "range": (0, 5000)},
    )


COMPLETION_MODES = ("all", "enriched")


@attrs.frozen
class CompletionSettings:
    mode: str = attrs.field(
        default="all",
        metadata={
            "key": "mode",
            "doc": "all：列出全部候选并附中文说明；enriched：只列出有中文条目的候选（与 Pylance 等一起使用时避免重复）",
            "choices": COMPLETION_MODES,
        },
    )


HOVER_CARDS = ("compact", "full")


@attrs.frozen
class HoverSettings:
    card: str = attrs.field(
        default="compact",
        metadata={
            "key": "card",
            "doc": "悬停卡片的详略：compact 只显示签名、用途、避坑要点和一个简短示例（不超过 20 行），"
            "完整卡片可以从卡片末尾的链接或代码操作“查看完整卡片”打开；full 在悬停框里显示完整卡片",
            "choices": HOVER_CARDS,
        },
    )


@attrs.frozen
class RunExampleSettings:
    enable: bool = attrs.field(
        default=True, metadata={"key": "enable", "doc": "是否在 torch 符号上提供“运行示例”的代码操作"}
    )
    device: str = attrs.field(
        default="auto",
        metadata={
            "key": "device",
            "doc": "运行示例的设备：auto（依次尝试 cuda、mps、cpu）、cpu、cuda、cuda:N 或 mps",
            "check": _device,
        },
    )
    interpreter: str | None = attrs.field(
        default=None,
        metadata={
            "key": "interpreter",
            "doc": "运行示例的 Python 解释器；不设置时用 interpreter 设置项，再没有就用服务器自己的 Python",
        },
    )
    timeout_seconds: int = attrs.field(
        default=30,
        metadata={
            "key": "timeoutSeconds",
            "doc": "示例最多运行多少秒（1 到 600），超时后连同子进程一起终止",
            "range": (1, 600),
        },
    )
    memory_limit_mb: int = attrs.field(
        default=4096,
        metadata={
            "key": "memoryLimitMb",
            "doc": "示例进程的内存（地址空间）上限，单位 MB，0 表示不限（Linux/macOS 上生效；CUDA 上不设上限）",
            "range": (0, 1048576),
        },
    )


def _unusable_path(raw: str) -> str | None:
    """Why ``raw`` cannot name a folder on this system (a NUL, a lone surrogate, ``~user`` of no such user)."""
    import os
    from pathlib import Path

    try:
        os.fsencode(raw)
        if "\x00" in raw:
            raise ValueError
        Path(raw).expanduser()
    except (ValueError, UnicodeError):
        return f"{raw!r} 不是有效的路径"
    except RuntimeError:  # expanduser: no home directory for that user
        return f"{raw!r} 中的 ~ 无法展开（没有这个用户或主目录）"
    return None


@attrs.frozen
class Settings:
    """Everything the server reads from the client."""

    interpreter: str | None = attrs.field(
        default=None,
        metadata={"key": "interpreter", "doc": "jedi 读取的 Python 解释器（项目虚拟环境中 torch 所在的那个）"},
    )
    knowledge_paths: tuple[str, ...] = attrs.field(
        default=(),
        metadata={
            "key": "knowledgePaths",
            "doc": "额外的知识库目录，覆盖或补充内置条目",
            "check": lambda paths: next(filter(None, map(_unusable_path, paths)), None),
        },
    )
    diagnostics: DiagnosticsSettings = attrs.field(
        factory=DiagnosticsSettings, metadata={"key": "diagnostics", "doc": "诊断（避坑检查）"}
    )
    completion: CompletionSettings = attrs.field(
        factory=CompletionSettings, metadata={"key": "completion", "doc": "补全"}
    )
    hover: HoverSettings = attrs.field(factory=HoverSettings, metadata={"key": "hover", "doc": "悬停"})
    run_example: RunExampleSettings = attrs.field(
        factory=RunExampleSettings, metadata={"key": "runExample", "doc": "运行知识库示例"}
    )


def _strict_str(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"应为字符串，实际是 {type(value).__name__}")
    return value


def _optional_str(value: Any, _type: Any) -> str | None:
    if value is None or value == "":
        return None
    return _strict_str(value, str)


def _str_tuple(value: Any, _type: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise TypeError(f"应为字符串列表，实际是 {type(value).__name__}")
    return tuple(_strict_str(item, str) for item in value)


def _strict_bool(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"应为 true 或 false，实际是 {type(value).__name__}")
    return value


def _strict_int(value: Any, _type: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"应为整数，实际是 {value!r}")
    return value


def _severity_map(value: Any, _type: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        raise TypeError(f"应为对象（规则代码: 严重程度），实际是 {type(value).__name__}")
    pairs = []
    for code, level in value.items():
        if not isinstance(code, str) or level not in SEVERITY_NAMES:
            raise TypeError(f"`{code}` 的严重程度应为 {' / '.join(SEVERITY_NAMES)} 之一，实际是 {level!r}")
        pairs.append((code, level))
    return tuple(pairs)


_converter = cattrs.Converter()
_converter.register_structure_hook(str, _strict_str)
_converter.register_structure_hook(bool, _strict_bool)
_converter.register_structure_hook(int, _strict_int)
_converter.register_structure_hook_func(lambda t: t == (str | None), _optional_str)
_converter.register_structure_hook_func(lambda t: t == tuple[str, ...], _str_tuple)
_converter.register_structure_hook_func(lambda t: t == tuple[tuple[str, str], ...], _severity_map)

attrs.resolve_types(DiagnosticsSettings)
attrs.resolve_types(CompletionSettings)
attrs.resolve_types(HoverSettings)
attrs.resolve_types(RunExampleSettings)
attrs.resolve_types(Settings)  # field types are strings under postponed annotations


def _fields(cls: type) -> dict[str, attrs.Attribute]:
    return {field.metadata["key"]: field for field in attrs.fields(cls)}


def _parse_section(cls: type, raw: Mapping[str, Any], base: Any, path: str, problems: list[str]) -> Any:
    values: dict[str, Any] = {}
    fields = _fields(cls)
    for key, value in raw.items():
        field = fields.get(key)
        if field is None:
            known = "、".join(sorted(f"{path}{k}" for k in fields))
            problems.append(f"未知的 torchls 设置项 `{path}{key}`，已忽略（可用的设置项：{known}）")
            continue
        if attrs.has(field.type):
            if not isinstance(value, Mapping):
                problems.append(f"torchls 设置项 `{path}{key}` 应为对象，实际是 {type(value).__name__}，已忽略")
                continue
            values[field.name] = _parse_section(field.type, value, getattr(base, field.name), f"{path}{key}.", problems)
            continue
        try:
            values[field.name] = _converter.structure(value, field.type)
            allowed = field.metadata.get("choices")
            if allowed and values[field.name] not in allowed:
                raise TypeError(f"应为 {' / '.join(allowed)} 之一，实际是 {value!r}")
            check = field.metadata.get("check")
            problem = check(values[field.name]) if check else None
            if "range" in field.metadata and problem is None:
                problem = _in_range(*field.metadata["range"])(values[field.name])
            if problem:
                raise TypeError(problem)
        except (TypeError, ValueError, cattrs.BaseValidationError) as error:
            default = getattr(cls(), field.name)
            problems.append(f"torchls 设置项 `{path}{key}` 的值无效（{_reason(error)}），已改用默认值 {_show(default)}")
            values[field.name] = default
    return attrs.evolve(base, **values)


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Settings from a client's JSON value, plus one Chinese message per problem.

    ``raw`` may be the settings object itself or wrap it as ``{"torchls": {...}}``. Keys missing from ``raw``
    keep their value from ``base`` (defaults when ``base`` is None).
    """
    base = base or Settings()
    if raw is None:
        return base, []
    if isinstance(raw, Mapping) and isinstance(raw.get(SECTION), Mapping):
        raw = raw[SECTION]
    if not isinstance(raw, Mapping):
        return base, [f"torchls 设置应为一个对象（JSON 对象），实际是 {type(raw).__name__}，已使用默认设置"]
    raw = {key: value for key, value in raw.items() if key not in CLIENT_ONLY_KEYS}
    problems: list[str] = []
    return _parse_section(Settings, raw, base, "", problems), problems


def _reason(error: Exception) -> str:
    if isinstance(error, cattrs.BaseValidationError) and error.exceptions:
        return str(error.exceptions[0])
    return str(error)


def _show(default: Any) -> str:
    if isinstance(default, tuple):
        return "[]" if not default else repr(list(default))
    if isinstance(default, bool):
        return "true" if default else "false"
    return "null" if default is None else repr(default)


def describe_settings() -> dict[str, str]:
    """Every setting's dotted key -> its Chinese description (docs, and the client's package.json check)."""
    described: dict[str, str] = {}

    def walk(cls: type, prefix: str) -> None:
        for key, field in _fields(cls).items():
            if attrs.has(field.type):
                walk(field.type, f"{prefix}{key}.")
            else:
                described[f"{prefix}{key}"] = field.metadata["doc"]

    walk(Settings, "")
    return described


def default_values() -> dict[str, Any]:
    """Every setting's dotted key -> its default, in JSON terms."""
    defaults: dict[str, Any] = {}

    def walk(instance: Any, prefix: str) -> None:
        for key, field in _fields(type(instance)).items():
            value = getattr(instance, field.name)
            if attrs.has(field.type):
                walk(value, f"{prefix}{key}.")
            elif field.type == tuple[tuple[str, str], ...]:
                defaults[f"{prefix}{key}"] = dict(value)
            else:
                defaults[f"{prefix}{key}"] = list(value) if isinstance(value, tuple) else value

    walk(Settings(), "")
    return defaults


def json_schema() -> dict[str, dict[str, Any]]:
    """Every setting's dotted key -> its JSON schema (type, default, enum, bounds, Chinese description), as an
    editor's settings UI declares it (VS Code's ``contributes.configuration``)."""
    schemas: dict[str, dict[str, Any]] = {}
    defaults = default_values()

    def walk(cls: type, prefix: str) -> None:
        for key, field in _fields(cls).items():
            if attrs.has(field.type):
                walk(field.type, f"{prefix}{key}.")
                continue
            dotted = f"{prefix}{key}"
            schema: dict[str, Any] = {"type": _JSON_TYPES[field.type], "default": defaults[dotted]}
            if field.type == tuple[str, ...]:
                schema["items"] = {"type": "string"}
            elif field.type == tuple[tuple[str, str], ...]:
                schema["additionalProperties"] = {"type": "string", "enum": list(SEVERITY_NAMES)}
            if "choices" in field.metadata:
                schema["enum"] = list(field.metadata["choices"])
            if "range" in field.metadata:
                schema["minimum"], schema["maximum"] = field.metadata["range"]
            schema["markdownDescription"] = field.metadata["doc"]
            schemas[dotted] = schema

    walk(Settings, "")
    return schemas


_JSON_TYPES: dict[Any, Any] = {
    bool: "boolean",
    int: "integer",
    str: "string",
    str | None: ["string", "null"],
    tuple[str, ...]: "array",
    tuple[tuple[str, str], ...]: "object",
}
