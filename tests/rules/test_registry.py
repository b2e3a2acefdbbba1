"""The registry and each rule's documentation: what `torchls rules` and the README table are made of."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import torchls.core.rules as rules_package
from torchls.core.rules import ALL_RULES
from torchls.core.rules.base import Rule
from torchls.kb.base import KnowledgeBase

BANDS = {"shape": "TL1", "device": "TL2", "loss": "TL3", "loop": "TL4"}


def test_codes_and_names_are_unique_and_well_formed():
    codes = [rule.code for rule in ALL_RULES]
    names = [rule.name for rule in ALL_RULES]
    assert len(set(codes)) == len(codes) and len(set(names)) == len(names)
    for rule in ALL_RULES:
        assert re.fullmatch(r"TL[1-4]\d\d", rule.code), rule.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", rule.name), rule.name


def test_every_rule_module_is_registered():
    registered = {rule.__module__ for rule in ALL_RULES}
    found = set()
    for band in BANDS:
        package = importlib.import_module(f"{rules_package.__name__}.{band}")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            concrete = [
                v
                for v in vars(module).values()
                if isinstance(v, type) and issubclass(v, Rule) and v.__module__ == module.__name__ and "code" in vars(v)
            ]
            if concrete:
                found.add(module.__name__)
    assert found == registered


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_rule_is_in_its_band_and_documented(rule):
    band = rule.__module__.split(".")[-2]
    assert rule.code.startswith(BANDS[band]), f"{rule.code} lives in {band}/"
    doc = rule.__doc__ or ""
    for section in ("**为什么是问题**", "**示例**", "**改正**", "**自动修复**"):
        assert section in doc, f"{rule.code} docstring lacks {section}"
    assert rule.summary() and "\n" not in rule.summary()
    assert rule.node_types, "a rule must ask for at least one node type"
    assert ("安全" in doc.split("**自动修复**")[1]) == rule.fixable or not rule.fixable


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_rule_links_a_knowledge_card_that_exists(rule):
    kb = KnowledgeBase.load(use_cache=False)
    assert rule.kb_entry and kb.get(rule.kb_entry) is not None, f"{rule.code} links {rule.kb_entry!r}"
