from __future__ import annotations

from torchls.settings import Settings, describe_settings, parse_settings


def test_defaults():
    assert parse_settings(None) == (Settings(), [])
    assert parse_settings({}) == (Settings(), [])


def test_values_and_section_wrapper():
    settings, problems = parse_settings({"torchls": {"interpreter": "/usr/bin/python3", "knowledgePaths": ["a"]}})
    assert problems == []
    assert settings == Settings(interpreter="/usr/bin/python3", knowledge_paths=("a",))


def test_bad_value_falls_back_to_default_and_keeps_the_rest():
    settings, problems = parse_settings({"interpreter": 3, "knowledgePaths": ["team"]})
    assert settings == Settings(interpreter=None, knowledge_paths=("team",))
    assert len(problems) == 1 and "interpreter" in problems[0] and "默认值" in problems[0]


def test_unknown_key_is_reported():
    settings, problems = parse_settings({"knowledgepath": ["x"]})
    assert settings == Settings()
    assert "未知的 torchls 设置项 `knowledgepath`" in problems[0]


def test_not_an_object():
    settings, problems = parse_settings(["a"])
    assert settings == Settings() and "对象" in problems[0]


def test_missing_keys_keep_the_previous_value():
    base = Settings(interpreter="/x/python")
    assert parse_settings({"knowledgePaths": []}, base)[0].interpreter == "/x/python"


def test_every_setting_is_described_in_chinese():
    assert set(describe_settings()) == {"interpreter", "knowledgePaths"}
