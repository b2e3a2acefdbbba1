"""The README's rule table is generated from the rules' docstrings; this keeps it current."""

from __future__ import annotations

import re
from pathlib import Path

from torchls.ruledocs import rules_table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_rule_table_is_current():
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- rules:begin -->\n(.*?)\n<!-- rules:end -->", text, re.S)
    assert match, "README.md needs <!-- rules:begin --> ... <!-- rules:end --> markers"
    assert match.group(1).strip() == rules_table(), (
        "the README's rule table is out of date: paste the output of `torchls rules --format markdown` "
        "between the markers"
    )
