"""Read knowledge folders: YAML with line numbers, validation, and one error per problem without losing others."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from torchls.kb.files import expected_name, iter_yaml_files
from torchls.kb.schema import Entry, KbError, validate_entry

log = logging.getLogger(__name__)

try:  # the C loader is several times faster on a cold start
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _BaseLoader = yaml.SafeLoader


class _LineDict(dict):
    """A mapping that remembers the line of each key (1-based) and any duplicate keys."""

    line: int
    key_lines: dict[str, int]
    duplicate_keys: list[str]


class _LineList(list):
    """A sequence that remembers the line of each item (1-based)."""

    item_lines: list[int]


class _LineLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    pass


def _construct_map(loader: Any, node: yaml.MappingNode) -> Iterator[_LineDict]:
    data = _LineDict()
    data.line = node.start_mark.line + 1
    data.key_lines = {}
    data.duplicate_keys = []
    yield data
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            key = str(key)
        if key in data:
            data.duplicate_keys.append(key)
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = key_node.start_mark.line + 1


def _construct_seq(loader: Any, node: yaml.SequenceNode) -> Iterator[_LineList]:
    data = _LineList()
    data.item_lines = [item.start_mark.line + 1 for item in node.value]
    yield data
    data.extend(loader.construct_object(item, deep=True) for item in node.value)


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def load_file(path: Path, root: Path) -> tuple[Entry | None, list[KbError]]:
    """Load and validate one entry file."""
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return None, [KbError(shown, 1, f"无法读取文件：{error}")]
    try:
        documents = list(yaml.load_all(text, Loader=_LineLoader))
    except yaml.MarkedYAMLError as error:
        return None, [_yaml_error(shown, error)]
    except yaml.YAMLError as error:
        return None, [KbError(shown, 1, f"YAML 错误：{error}")]
    documents = [d for d in documents if d is not None]
    if len(documents) != 1:
        return None, [KbError(shown, 1, f"每个文件应恰好包含一个条目，实际有 {len(documents)} 个")]
    return validate_entry(documents[0], shown, expected_name(path, root))


def _yaml_error(shown: str, error: yaml.MarkedYAMLError) -> KbError:
    """An unclosed bracket is noticed lines later; the construct's start (the context) is where to look."""
    problem = error.problem or str(error)
    problem_line = error.problem_mark.line + 1 if error.problem_mark else 1
    if error.context_mark is not None and error.context:
        context_line = error.context_mark.line + 1
        if context_line != problem_line:
            message = f"YAML 语法错误：{error.context}，到第 {problem_line} 行仍未结束（{problem}）"
            return KbError(shown, context_line, message)
    return KbError(shown, problem_line, f"YAML 语法错误：{problem}")


def load_folder(root: Path) -> tuple[dict[str, Entry], list[KbError]]:
    """Load every entry under ``root``; a bad file becomes an error and the rest still load."""
    entries: dict[str, Entry] = {}
    errors: list[KbError] = []
    if not root.is_dir():
        return entries, [KbError(str(root), 1, "知识库目录不存在或不是目录")]
    for path in iter_yaml_files(root):
        entry, problems = load_file(path, root)
        errors.extend(problems)
        if entry is not None:
            entries[entry.name] = entry
    return entries, errors
