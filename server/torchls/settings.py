"""One typed settings tree for every way settings arrive.

``initializationOptions``, ``workspace/didChangeConfiguration``, ``workspace/configuration`` and the command
line all go through :func:`parse_settings`. A value of the wrong type is reported (in Chinese, for the editor)
and replaced by its default; the other settings still apply. An unknown key is reported too, so a typo does not
fail silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

SECTION = "torchls"


@attrs.frozen
class Settings:
    """Everything the server reads from the client. JSON keys are camelCase (``knowledgePaths``)."""

    interpreter: str | None = attrs.field(
        default=None,
        metadata={"key": "interpreter", "doc": "jedi 读取的 Python 解释器（项目虚拟环境中 torch 所在的那个）"},
    )
    knowledge_paths: tuple[str, ...] = attrs.field(
        default=(),
        metadata={"key": "knowledgePaths", "doc": "额外的知识库目录，覆盖或补充内置条目"},
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


_converter = cattrs.Converter()
_converter.register_structure_hook(str, _strict_str)
_converter.register_structure_hook_func(lambda t: t == (str | None), _optional_str)
_converter.register_structure_hook_func(lambda t: t == tuple[str, ...], _str_tuple)

attrs.resolve_types(Settings)  # field types are strings under postponed annotations
_FIELDS = {field.metadata["key"]: field for field in attrs.fields(Settings)}


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
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        field = _FIELDS.get(key)
        if field is None:
            known = "、".join(sorted(_FIELDS))
            problems.append(f"未知的 torchls 设置项 `{key}`，已忽略（可用的设置项：{known}）")
            continue
        try:
            values[field.name] = _converter.structure(value, field.type)
        except (TypeError, ValueError, cattrs.BaseValidationError) as error:
            default = getattr(Settings(), field.name)
            problems.append(f"torchls 设置项 `{key}` 的值无效（{_reason(error)}），已改用默认值 {default!r}")
            values[field.name] = default
    return attrs.evolve(base, **values), problems


def _reason(error: Exception) -> str:
    if isinstance(error, cattrs.BaseValidationError) and error.exceptions:
        return str(error.exceptions[0])
    return str(error)


def describe_settings() -> dict[str, str]:
    """Setting key -> Chinese description, for docs and the client's package.json check."""
    return {key: field.metadata["doc"] for key, field in _FIELDS.items()}
