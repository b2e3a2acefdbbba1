"""``torchls kb new NAME``: a knowledge entry skeleton written from the installed torch.

The facts (kind, signature, parameters and defaults, the English docstring) are read by a short script run in the
chosen interpreter, so the server's own process never imports torch and a team can write entries against the
torch version they actually use. The skeleton marks every place a person must write with ``TODO``, which
``torchls kb check`` reports until it is gone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from torchls.kb.schema import DEVICE_LINE

_TIMEOUT_SECONDS = 120

# Runs in the target interpreter with ``-I`` (a user's ``torch.py`` in the current folder cannot shadow torch).
# Prints one JSON object; errors are reported as {"error": kind, "detail": text}.
_INTROSPECT = r"""
import importlib, inspect, json, re, sys

def out(**data):
    sys.stdout.write(json.dumps(data))
    sys.exit(0)

name = sys.argv[1]
try:
    import torch
except Exception as error:
    out(error="no-torch", detail=f"{type(error).__name__}: {error}")
parts = name.split(".")
obj = owner = None
for cut in range(len(parts), 0, -1):
    try:
        obj = importlib.import_module(".".join(parts[:cut]))
    except ImportError:
        continue
    try:
        for attr in parts[cut:]:
            owner, obj = obj, getattr(obj, attr)
    except AttributeError as error:
        out(error="no-attribute", detail=str(error))
    break
else:
    out(error="no-module", detail=name)

raw = inspect.getattr_static(owner, parts[-1], None) if inspect.isclass(owner) else None
if inspect.ismodule(obj):
    kind = "module"
elif inspect.isclass(obj):
    kind = "class"
elif isinstance(raw, property) or type(raw).__name__ == "getset_descriptor":
    kind = "property"
elif inspect.isclass(owner) and callable(obj):
    kind = "method"
elif callable(obj):
    kind = "function"
else:
    kind = "attribute"

params, signature = [], None
if kind in ("function", "method", "class"):
    try:
        sig = inspect.signature(obj)
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            star = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
            default = None if p.default is p.empty else repr(p.default)
            params.append({"name": star + p.name, "default": default})
        bare = [p.replace(annotation=p.empty) for p in sig.parameters.values() if p.name != "self"]
        signature = name + str(sig.replace(parameters=bare, return_annotation=sig.empty))
    except (TypeError, ValueError):
        first = (inspect.getdoc(obj) or "").splitlines()[:1]
        match = re.match(r"^\s*[\w.]*\((.*)\)", first[0]) if first else None
        if match:
            signature = f"{name}({match.group(1)})"
            for piece in re.split(r",\s*(?![^\[\(]*[\]\)])", match.group(1)):
                piece = piece.strip()
                if piece and piece not in ("*", "/", "self"):
                    key, _, default = piece.partition("=")
                    params.append({"name": key.split(":")[0].strip(), "default": default.strip() or None})
out(kind=kind, signature=signature, params=params, doc=inspect.getdoc(obj) or "", version=torch.__version__)
"""


class SkeletonError(Exception):
    """Why no skeleton could be written, in Chinese, for the user."""


@dataclass(frozen=True, slots=True)
class ApiFacts:
    name: str
    kind: str
    signature: str | None
    params: tuple[tuple[str, str | None], ...]  # (name with * or ** for catch-alls, default as source or None)
    doc: str
    torch_version: str


def introspect(name: str, python: str | None = None) -> ApiFacts:
    """What the torch installed in ``python`` (default: this interpreter) says about ``name``."""
    interpreter = python or sys.executable
    try:
        completed = subprocess.run(
            [interpreter, "-I", "-X", "utf8", "-c", _INTROSPECT, name],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=_TIMEOUT_SECONDS,
        )
    except FileNotFoundError:
        raise SkeletonError(f"找不到 Python 解释器：{interpreter}") from None
    except PermissionError:
        raise SkeletonError(f"无法运行 Python 解释器（没有执行权限）：{interpreter}") from None
    except subprocess.TimeoutExpired:
        raise SkeletonError(f"{interpreter} 导入 torch 超过 {_TIMEOUT_SECONDS} 秒，已放弃") from None
    try:
        data = json.loads(completed.stdout)
    except json.JSONDecodeError:
        tail = completed.stderr.strip().splitlines()[-1:] or ["没有输出"]
        raise SkeletonError(f"{interpreter} 读取 torch 信息失败：{tail[0]}") from None
    problem = data.get("error")
    if problem == "no-torch":
        raise SkeletonError(f"{interpreter} 里导入不了 torch（{data['detail']}）；用 --python 指定装有 torch 的解释器")
    if problem:
        raise SkeletonError(f"已安装的 torch 里没有 {name}（{data['detail']}）")
    params = tuple((p["name"], p["default"]) for p in data["params"])
    return ApiFacts(name, data["kind"], data["signature"], params, data["doc"], data["version"])


def entry_path(folder: Path, name: str) -> Path:
    """Where the entry for ``name`` lives in a knowledge folder: the dotted name as a path."""
    return folder.joinpath(*name.split(".")).with_suffix(".yaml")


def _quoted(value: str) -> str:
    """A scalar as YAML writes it (quoted when it must be)."""
    return yaml.safe_dump(value, allow_unicode=True, default_style=None, width=10_000).strip().removesuffix("\n...")


def _docs_url(facts: ApiFacts) -> str:
    if facts.kind == "module":
        return f"https://pytorch.org/docs/stable/{facts.name.removeprefix('torch.')}.html"
    return f"https://pytorch.org/docs/stable/generated/{facts.name}.html"


def skeleton_yaml(facts: ApiFacts) -> str:
    """The entry text: facts filled in, ``TODO`` where a person writes, the English docstring as comments."""
    lines = [f"name: {facts.name}", f"kind: {facts.kind}", "summary: TODO：一句话说明它做什么、解决什么问题。"]
    if facts.signature:
        lines.append(f"signature: {_quoted(facts.signature)}")
    lines += ["description: |", "  TODO：什么时候用、什么时候不用、和相近 API 的区别。"]
    documented = [(n, d) for n, d in facts.params if not n.startswith("*") and n != "out"]
    catch_alls = [n.lstrip("*") for n, _ in facts.params if n.startswith("*")]
    if documented:
        lines.append("params:")
        for param, default in documented:
            lines.append(f"  - name: {param}")
            if default is not None:
                lines.append(f"    default: {_quoted(default)}")
            lines.append("    desc: TODO：含义；张量写形状和 dtype，dim 写按哪一维计数。")
    omitted = [n for n, _ in facts.params if n == "out"]
    if catch_alls or omitted:
        lines.append(f"omitted_params: [{', '.join(catch_alls + omitted)}]  # TODO：确认这些确实不必说明")
    if facts.kind not in ("class", "module"):
        lines.append("returns: TODO：返回值的类型和形状。")
    lines += [
        "examples:",
        "  - title: TODO：示例标题",
        "    code: |",
        "      import torch",
        "",
        f"      {DEVICE_LINE}",
        "",
        "      x = torch.randn(2, 3, device=device)",
        "      print(x)  # TODO：换成展示这个 API 的代码，并注释预期输出",
        "pitfalls:",
        "  - text: TODO：一条真实的避坑经验。",
        "see_also: [TODO]  # 相关 API 的公开名",
        f"url: {_docs_url(facts)}",
        "",
        f"# torch {facts.torch_version} 的英文文档，供翻译参考（写完后删除）：",
    ]
    lines += [f"# {line}".rstrip() for line in facts.doc.splitlines()]
    return "\n".join(lines) + "\n"
