"""The rules' documentation, generated from their docstrings: pages for the editor, tables for the README.

A diagnostic's ``codeDescription`` links to a Markdown page per rule. The pages are written once per torchls
version into the cache folder, so the link works offline and opens in the editor itself.
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path

from torchls import __version__
from torchls.core.findings import Severity
from torchls.core.rules import ALL_RULES, RULES_BY_CODE
from torchls.core.rules.base import Rule

log = logging.getLogger(__name__)

SEVERITY_LABELS = {Severity.ERROR: "错误", Severity.WARNING: "警告", Severity.INFO: "提示"}


def rule_page(rule: type[Rule]) -> str:
    """The full Markdown page of one rule."""
    body = inspect.cleandoc(rule.__doc__ or "")
    summary, _, rest = body.partition("\n")
    facts = [
        f"- 代码：`{rule.code}`（`{rule.name}`）",
        f"- 严重程度：{SEVERITY_LABELS[rule.severity]}",
        f"- 自动修复：{'有' if rule.fixable else '无'}",
        f"- 相关卡片：`{rule.kb_entry}`（终端里运行 `torchls explain {rule.kb_entry}`）",
        f"- 在一行末尾写 `# noqa: {rule.code}` 可以关闭这一行的报告",
    ]
    return f"# {rule.code} {rule.name}\n\n{summary}\n\n" + "\n".join(facts) + f"\n\n{rest.strip()}\n"


def rules_table() -> str:
    """The Markdown table of every rule, as the README shows it."""
    lines = ["| 代码 | 名称 | 严重程度 | 修复 | 说明 |", "| --- | --- | --- | --- | --- |"]
    for rule in ALL_RULES:
        summary = rule.summary().replace("|", "\\|")
        fix = "✔" if rule.fixable else ""
        lines.append(f"| {rule.code} | `{rule.name}` | {SEVERITY_LABELS[rule.severity]} | {fix} | {summary} |")
    return "\n".join(lines)


def rule_doc_uri(code: str, folder: Path) -> str | None:
    """A ``file://`` URI of the rule's page in ``folder``, writing the pages first if they are missing."""
    rule = RULES_BY_CODE.get(code)
    if rule is None:
        return None
    version_folder = folder / f"rules-{__version__}"
    page = version_folder / f"{code}.md"
    if not page.exists():
        try:
            version_folder.mkdir(parents=True, exist_ok=True)
            for each in ALL_RULES:
                (version_folder / f"{each.code}.md").write_text(rule_page(each), encoding="utf-8")
        except OSError as error:
            log.info("could not write rule pages to %s: %s", version_folder, error)
            return None
    return page.resolve().as_uri()
