from __future__ import annotations

from torchls.settings import HoverSettings, Settings, describe_settings, parse_settings


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
    described = describe_settings()
    assert set(described) == {
        "interpreter",
        "knowledgePaths",
        "diagnostics.enable",
        "diagnostics.select",
        "diagnostics.ignore",
        "diagnostics.severity",
        "diagnostics.debounceMs",
        "completion.mode",
        "hover.card",
        "runExample.enable",
        "runExample.device",
        "runExample.interpreter",
        "runExample.timeoutSeconds",
        "runExample.memoryLimitMb",
    }
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in text) for text in described.values())


def test_nested_section_keeps_good_values_and_reports_bad_ones():
    settings, problems = parse_settings(
        {"diagnostics": {"select": ["TL1"], "severity": {"TL4": "hint"}, "debounceMs": 99999, "colour": 1}}
    )
    assert settings.diagnostics.select == ("TL1",)
    assert settings.diagnostics.severity == (("TL4", "hint"),)
    assert settings.diagnostics.debounce_ms == 10
    assert any("`diagnostics.debounceMs` 的值无效" in p for p in problems)
    assert any("`diagnostics.colour`" in p for p in problems)


def test_completion_mode_must_be_one_of_the_modes():
    settings, problems = parse_settings({"completion": {"mode": "some"}})
    assert settings.completion.mode == "all"
    assert "all / enriched" in problems[0]
    assert parse_settings({"completion": {"mode": "enriched"}})[0].completion.mode == "enriched"


def test_hover_card_is_compact_unless_asked_for_full():
    assert Settings().hover.card == "compact"
    assert parse_settings({"hover": {"card": "full"}}) == (Settings(hover=HoverSettings(card="full")), [])
    settings, problems = parse_settings({"hover": {"card": "long"}})
    assert settings.hover.card == "compact"
    assert problems == [
        "torchls 设置项 `hover.card` 的值无效（应为 compact / full 之一，实际是 'long'），已改用默认值 'compact'"
    ]


def test_bad_severity_level_is_reported():
    settings, problems = parse_settings({"diagnostics": {"severity": {"TL4": "loud"}}})
    assert settings.diagnostics.severity == ()
    assert "loud" in problems[0]


def test_run_example_settings_are_checked_and_bad_ones_fall_back():
    settings, problems = parse_settings(
        {"runExample": {"device": "cuda:1", "timeoutSeconds": 5, "memoryLimitMb": 0, "enable": False}}
    )
    assert not problems
    assert (settings.run_example.device, settings.run_example.timeout_seconds) == ("cuda:1", 5)
    assert settings.run_example.memory_limit_mb == 0 and settings.run_example.enable is False
    settings, problems = parse_settings({"runExample": {"device": "gpu", "timeoutSeconds": 0}})
    assert settings.run_example.device == "auto" and settings.run_example.timeout_seconds == 30
    assert len(problems) == 2
    assert "runExample.device" in problems[0] and "cuda:N" in problems[0]
    assert "1 到 600" in problems[1]


def test_the_clients_own_settings_are_not_reported_as_unknown():
    settings, problems = parse_settings(
        {"torchls": {"trace": {"server": "verbose"}, "completion": {"mode": "enriched"}}}
    )
    assert problems == []
    assert settings.completion.mode == "enriched"


def test_json_schema_matches_defaults_and_bounds():
    from torchls.settings import default_values, json_schema

    schema = json_schema()
    assert set(schema) == set(default_values())
    assert {k: v["default"] for k, v in schema.items()} == default_values()
    assert schema["diagnostics.debounceMs"]["minimum"] == 0 and schema["diagnostics.debounceMs"]["maximum"] == 5000
    assert schema["completion.mode"]["enum"] == ["all", "enriched"]
    # The bounds the schema declares are the ones parsing enforces.
    _, problems = parse_settings({"runExample": {"timeoutSeconds": schema["runExample.timeoutSeconds"]["maximum"] + 1}})
    assert problems and "1 到 600" in problems[0]
