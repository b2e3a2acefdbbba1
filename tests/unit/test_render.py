"""Cards sized for a hover: the compact card's line bound over every shipped entry, pitfalls never dropped, the
full card and its document, private parameters hidden, plain text for completion, an English card never empty.

jedi's view of a symbol comes from the real jedi (a :class:`Resolver` on the installed torch) where a test is
about what jedi says; the bound over every entry uses each entry's own signature as the worst case jedi could
give (two overloads: the compact card shows one and counts the rest).
"""

from __future__ import annotations

import re

import pytest

from torchls.docinfo import SymbolDoc
from torchls.kb.base import KnowledgeBase
from torchls.kb.render import (
    MAX_HOVER_LINES,
    SHOW_CARD_COMMAND,
    card_document,
    plain_text,
    public_parameters,
    render_card,
    render_fallback,
    short_pitfall,
    show_card_link,
)
from torchls.kb.schema import DEVICE_LINE
from torchls.resolve import Resolver

KB = KnowledgeBase.load()
ENTRIES = [KB.entries[name] for name in sorted(KB.entries)]
INSTANCE_HEADING = "*这是 `torch.nn.Linear` 的实例，以下是该类的说明。*"
OLD_TORCH = "1.0.0"  # older than every `since`: each card shows all its version warnings


@pytest.fixture(scope="module")
def resolver():
    resolver = Resolver()
    yield resolver
    resolver.close()


def _describe(resolver: Resolver, name: str) -> SymbolDoc:
    doc = resolver.submit(resolver.describe, name).result(180)
    assert doc is not None, f"jedi does not know {name}"
    return doc


def _worst_case_live(entry) -> SymbolDoc | None:
    signature = entry.signature or f"{entry.name.rsplit('.', 1)[-1]}(*args, **kwargs)"
    return SymbolDoc(entry.name, "function", (signature, signature), ("args", "kwargs"))


def test_the_knowledge_base_is_the_shipped_one():
    assert len(ENTRIES) > 800


@pytest.mark.parametrize("heading", [None, INSTANCE_HEADING], ids=["name", "instance"])
def test_every_shipped_compact_card_fits_the_hover_bound(heading):
    too_long = {}
    for entry in ENTRIES:
        card = render_card(entry, _worst_case_live(entry), heading=heading, torch_version=OLD_TORCH, pointer="link")
        if len(card.splitlines()) > MAX_HOVER_LINES:
            too_long[entry.name] = len(card.splitlines())
    assert not too_long, f"compact cards over {MAX_HOVER_LINES} lines: {too_long}"


def test_the_compact_card_keeps_every_pitfall_of_every_shipped_entry():
    for entry in ENTRIES:
        card = render_card(entry, _worst_case_live(entry), heading=INSTANCE_HEADING, torch_version=OLD_TORCH)
        assert "**⚠️ 避坑**" in card, entry.name
        for pitfall in entry.pitfalls:
            short = short_pitfall(pitfall.text)
            assert pitfall.text.startswith(short.removesuffix("…")), (entry.name, short)
            assert f"- {short}" in card, (entry.name, short)
            if pitfall.rule:
                assert f"- {short}（`{pitfall.rule}`）" in card, (entry.name, pitfall.rule)


def test_cross_entropy_compact_card_is_a_fifth_of_the_full_one(resolver):
    entry = KB.get("torch.nn.CrossEntropyLoss")
    live = _describe(resolver, entry.name)
    compact = render_card(entry, live, torch_version="2.13.0", pointer="link")
    full = render_card(entry, live, compact=False, torch_version="2.13.0")
    assert len(compact.splitlines()) <= MAX_HOVER_LINES
    assert len(compact) < 1100 < 2000 < len(full)
    lines = compact.splitlines()
    # The installed torch's signature, then the summary, then the pitfalls.
    assert lines[:2] == ["```python", "torch.nn.CrossEntropyLoss(" + live.signatures[0].split("(", 1)[1]]
    assert lines[3].startswith("**torch.nn.CrossEntropyLoss** · 类：")
    # Every pitfall, each on one line; an example only where the budget leaves room for one, after them.
    first_pitfall = lines.index("**⚠️ 避坑**") + 1
    assert all(line.startswith("- ") for line in lines[first_pitfall : first_pitfall + len(entry.pitfalls)])
    examples = [i for i, line in enumerate(lines) if line.startswith("**示例")]
    assert all(i > first_pitfall + len(entry.pitfalls) for i in examples)
    # No parameter list, description or shapes: hovering a keyword argument shows its parameter.
    for absent in ("**参数**", "**形状**", "**返回**", "标签平滑系数", "内部等价于"):
        assert absent not in compact
    assert f"[完整卡片](command:{SHOW_CARD_COMMAND}?" in lines[-1]
    assert "[官方文档](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)" in lines[-1]


def test_the_example_is_short_and_whole_when_one_fits():
    entry = KB.get("torch.nn.Linear")
    card = render_card(entry)
    code = card.split("```python\n")[2].split("\n```")[0].splitlines()
    assert "import torch" not in card and DEVICE_LINE not in card  # left to the full card's runnable script
    assert "完整示例见完整卡片" not in card
    wanted = [line for line in next(e for e in entry.examples if e.title in card).code.splitlines() if line.strip()]
    assert code == [line for line in wanted if not line.startswith("import") and line != DEVICE_LINE]


def test_a_long_example_is_cut_with_a_note():
    entry = KB.get("torch.Tensor.view")
    card = render_card(entry, heading=INSTANCE_HEADING, torch_version=OLD_TORCH)
    assert card.count("```") == 4
    assert "# ……（完整示例见完整卡片）" in card
    assert len(card.splitlines()) == MAX_HOVER_LINES


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        ("link", "[完整卡片](command:torchls.showCard?%5B%7B%22name%22%3A%22torch.nn.CrossEntropyLoss%22%7D%5D)"),
        ("action", "：代码操作“查看完整卡片”"),
        ("command-line", "：`torchls explain torch.nn.CrossEntropyLoss`"),
    ],
)
def test_the_last_line_says_where_the_full_card_is(pointer, expected):
    card = render_card(KB.get("torch.nn.CrossEntropyLoss"), pointer=pointer)
    assert expected in card.splitlines()[-1]
    assert "参数、形状、返回值和全部示例" in card.splitlines()[-1]


def test_the_link_carries_the_name_as_json_arguments():
    import json
    import urllib.parse

    link = show_card_link("torch.nn.functional.cross_entropy")
    scheme, query = link.split("?", 1)
    assert scheme == f"command:{SHOW_CARD_COMMAND}"
    assert json.loads(urllib.parse.unquote(query)) == [{"name": "torch.nn.functional.cross_entropy"}]
    assert not re.search(r"[\s()\[\]]", link)  # nothing that ends a Markdown link early


def test_full_card_has_everything_with_pitfalls_before_parameters(resolver):
    entry = KB.get("torch.nn.CrossEntropyLoss")
    full = render_card(entry, _describe(resolver, entry.name), compact=False)
    for pitfall in entry.pitfalls:
        assert pitfall.text in full
    for example in entry.examples:
        assert example.code.rstrip() in full
    for present in ("**参数**", "**形状**", "**返回**", "**相关**", "**版本**", "标签平滑系数"):
        assert present in full
    assert full.index("**⚠️ 避坑**") < full.index("**参数**")
    assert "command:" not in full


def test_card_document_is_the_full_card_under_a_title():
    entry = KB.get("torch.nn.CrossEntropyLoss")
    document = card_document(entry, torch_version="2.13.0")
    assert document.startswith("# torch.nn.CrossEntropyLoss\n\n")
    assert render_card(entry, compact=False, torch_version="2.13.0") in document


def test_compact_card_names_parameters_newer_than_the_installed_torch():
    sdpa = KB.get("torch.nn.functional.scaled_dot_product_attention")
    card = render_card(sdpa, torch_version="2.4.1")
    assert "⚠️ 当前环境的 torch 2.4 还没有这些参数：`enable_gqa`（≥ 2.5）。" in card
    assert "还没有这些参数" not in render_card(sdpa, torch_version="2.13.0")


# ---------------------------------------------------------------------------------------- pitfalls


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("负数输入静默得到 `nan`，不会报错。", "负数输入静默得到 `nan`，不会报错。"),  # short: as written
        (
            "类别索引形式的目标必须是整数（`torch.long`），不能是 one-hot；"
            "把 one-hot 的整数张量传进去会报形状或类型错误。",
            "类别索引形式的目标必须是整数（`torch.long`），不能是 one-hot…",
        ),
        (  # a `；` inside inline code or brackets does not end the sentence
            "写成 `a；b` 或（先这样；再那样）都不会在这里断开，这一句足够长，长到超过六十个字符，所以找下一个句号。"
            "然后才是第二句。",
            "写成 `a；b` 或（先这样；再那样）都不会在这里断开，这一句足够长，长到超过六十个字符，所以找下一个句号…",
        ),
        (  # a first sentence that is still long: its claim before the first `：`
            "类别维是第 1 维而不是最后一维：序列模型输出 `(N, L, C)` 时要先 `permute(0, 2, 1)` 成 `(N, C, L)`，"
            "或者都展平成 `(N*L, C)`，再把目标也展平成 `(N*L)`，否则会报维度不匹配。",
            "类别维是第 1 维而不是最后一维…",
        ),
    ],
)
def test_short_pitfall(text, expected):
    assert short_pitfall(text) == expected


# ---------------------------------------------------------------------------------------- plain text


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("按 `dim` 求和，返回 `Tensor`。", "按 dim 求和，返回 Tensor。"),
        ("从 `base**start` 到 `base**end`", "从 base**start 到 base**end"),  # stars inside code stay
        ("每个元素被**置零**的概率", "每个元素被置零的概率"),
        ("`` a`b ``：带反引号的代码", "a`b：带反引号的代码"),
        ("孤零零的 ` 反引号不动", "孤零零的 ` 反引号不动"),
        ("没有任何标记", "没有任何标记"),
    ],
)
def test_plain_text(markdown, expected):
    assert plain_text(markdown) == expected


def test_every_shipped_summary_is_plain_without_back_quotes():
    for entry in ENTRIES:
        assert "`" not in plain_text(entry.summary), entry.name


# ---------------------------------------------------------------------------------------- private parameters


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        ("f(a, b=1)", "f(a, b=1)"),
        ("f(a, _b: bool=True, c=2) -> None", "f(a, c=2) -> None"),
        ("f(a, *, _b=1)", "f(a)"),  # a bare `*` with nothing after it is a syntax error
        ("f(a, *, _b=1, **kwargs)", "f(a, **kwargs)"),
        ("f(_a, /, b)", "f(b)"),
        ('f(a, sep=", ", _b=(1, 2), c="_x")', 'f(a, sep=", ", c="_x")'),  # commas in strings and brackets
        ("f(a, *_args, **_kwargs)", "f(a)"),
        ("f(a, _b=g(1, 2)", "f(a, _b=g(1, 2)"),  # unbalanced: left as it is
    ],
)
def test_public_parameters(signature, expected):
    assert public_parameters(signature) == expected


def test_torch_save_card_hides_private_parameters(resolver):
    entry = KB.get("torch.save")
    live = _describe(resolver, "torch.save")
    assert any(name.startswith("_") for name in live.param_names), "pick an API whose signature has private names"
    for card in (render_card(entry, live), render_card(entry, live, compact=False), card_document(entry, live)):
        assert "_disable_byteorder_record" not in card and "_use_new_zipfile_serialization" not in card
        signature = card.split("```python\n", 1)[1].split("\n", 1)[0]
        assert signature.startswith("torch.save(obj: object, f: FileLike") and signature.endswith(") -> None")
        compile(f"def {signature.removeprefix('torch.')}: pass", "<signature>", "exec")  # still valid Python


# ---------------------------------------------------------------------------------------- English cards


def test_english_card_without_a_docstring_says_so_and_shows_the_kind(resolver):
    live = _describe(resolver, "torch.nn.Module.dump_patches")
    assert not live.docstring and not live.signatures
    card = render_fallback("torch.nn.Module.dump_patches", live)
    assert "torch 也没有为它写文档" in card
    assert "**torch.nn.Module.dump_patches** · 变量" in card
    assert "jedi 只知道它是变量" in card
    assert "English original" not in card  # there is no English text to show


def test_english_card_without_a_docstring_shows_the_signature(resolver):
    live = _describe(resolver, "torch.utils.data.Dataset.__add__")
    assert not live.docstring and live.signatures
    card = render_fallback("torch.utils.data.Dataset.__add__", live)
    assert "torch 也没有为它写文档" in card
    assert "```python\ntorch.utils.data.Dataset.__add__(self, other" in card


def test_english_card_with_a_docstring_is_marked_as_the_original(resolver):
    live = _describe(resolver, "torch.nn.ChannelShuffle")
    card = render_fallback("torch.nn.ChannelShuffle", live)
    assert "English original" in card and "```text\n" in card


def test_chosen_signatures_come_first_and_the_others_follow_within_the_hover_bound():
    entry = KB.entries["torch.max"]
    chosen = ["torch.max(input: Tensor, dim: int, keepdim: bool=False) -> Tensor", "torch.max(input: Tensor) -> Tensor"]
    card = render_card(entry, None, compact=True, signatures=chosen)
    block = re.search(r"```python\n(.*?)\n```", card, re.S)
    assert block is not None and block.group(1).splitlines() == chosen
    assert len(card.splitlines()) <= MAX_HOVER_LINES
    full = render_card(entry, None, compact=False, signatures=chosen)
    assert full.index(chosen[0]) < full.index(chosen[1])


def test_live_signatures_spell_out_torch_private_aliases():
    live = SymbolDoc("torch.nn.functional.softmax", "function", ("softmax(input: Tensor, dtype: _dtype | None=None)",))
    card = render_card(KB.entries["torch.nn.functional.softmax"], live, compact=True)
    assert "torch.nn.functional.softmax(input: Tensor, dtype: torch.dtype | None=None)" in card
