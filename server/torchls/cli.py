"""The ``torchls`` command line.

``torchls`` or ``torchls serve``     the language server over stdio (``--tcp HOST:PORT`` for debugging)
``torchls explain NAME``             the Chinese card of an API, in the terminal
``torchls kb check [FOLDER ...]``    validate the shipped and the given knowledge folders
``torchls kb new NAME``              an entry skeleton from the installed torch
``torchls kb coverage PATH ...``     torch APIs a project calls that lack entries, most used first
``torchls check PATH ...``           the editor's diagnostics for files and folders (CI); exit 0/1/2
``torchls rules [CODE]``             the rules, or one rule's documentation
``torchls demo``                     a scripted LSP session: hover cards for a bundled sample file
``torchls run-example NAME``         run an API's knowledge-base example on a device; exit status follows it
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import logging
import os
import sys
from pathlib import Path

from torchls import __version__

# Short spellings people type, expanded in this order when NAME is not a full public name.
_SHORTHANDS = (
    ("F.", "torch.nn.functional."),
    ("nn.", "torch.nn."),
    ("optim.", "torch.optim."),
    ("Tensor.", "torch.Tensor."),
    ("", "torch."),
    ("", "torch.nn."),
    ("", "torch.nn.functional."),
    ("", "torch.Tensor."),
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="torchls", description="PyTorch 中文 API 手册与避坑指南的语言服务器。")
    parser.add_argument("--version", action="version", version=f"torchls {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="更详细的日志（写到 stderr）")
    parser.add_argument("--log-file", help="把日志写到这个文件而不是 stderr")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser("serve", help="启动语言服务器（默认通过 stdio）")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="改为监听 TCP 端口（调试用）")
    # Many clients (vscode-languageclient's TransportKind.stdio among them) append --stdio: it is the default.
    serve.add_argument("--stdio", action="store_true", help="通过 stdin/stdout 通信（默认就是这样）")

    explain = commands.add_parser("explain", help="在终端里显示一个 API 的中文卡片")
    explain.add_argument("name", help="API 名，如 torch.nn.CrossEntropyLoss、nn.Linear、F.relu、Tensor.view")
    explain.add_argument("--short", action="store_true", help="只显示悬停时的精简卡片")

    kb = commands.add_parser("kb", help="知识库工具")
    kb_commands = kb.add_subparsers(dest="kb_command", metavar="KB_COMMAND", required=True)
    check = kb_commands.add_parser("check", help="校验内置知识库和给定目录，有错误时返回非零")
    check.add_argument("folders", nargs="*", type=Path, help="额外的知识库目录")
    new = kb_commands.add_parser("new", help="按已安装 torch 的签名和文档为一个 API 生成条目骨架")
    new.add_argument("name", help="API 的公开名，如 torch.nn.Conv3d、torch.Tensor.add_")
    new.add_argument(
        "--folder", type=Path, help="写到这个知识库目录（默认：源码仓库里的 knowledge/；安装好的 torchls 必须指定）"
    )
    new.add_argument("--python", metavar="PATH", help="读取这个解释器里的 torch（默认：torchls 自己的）")
    new.add_argument("--stdout", action="store_true", help="只打印骨架，不写文件")
    new.add_argument("--force", action="store_true", help="条目文件已存在时也覆盖")
    coverage = kb_commands.add_parser(
        "coverage", help="项目里调用了哪些还没有条目的 torch API（按次数排序），以及条目覆盖了多少次调用"
    )
    coverage.add_argument("paths", nargs="*", help="要统计的文件或目录")
    coverage.add_argument("--usage", type=Path, metavar="CSV", help="改为读取用量表（api、count 两列）")
    coverage.add_argument(
        "--knowledge", action="append", type=Path, default=[], metavar="FOLDER", help="额外的知识库目录"
    )
    coverage.add_argument(
        "--top", type=int, default=30, metavar="N", help="列出前 N 个缺少条目的 API（默认 30，0 表示全部）"
    )
    coverage.add_argument("--fail-under", type=float, metavar="PCT", help="覆盖率低于这个百分比时返回 1（用于 CI）")

    check = commands.add_parser("check", help="检查文件和目录中的 PyTorch 避坑问题（与编辑器中的诊断相同）")
    check.add_argument("paths", nargs="+", help="要检查的文件或目录")
    check.add_argument("--select", action="append", metavar="CODES", help="只启用这些规则代码或前缀，逗号分隔")
    check.add_argument("--ignore", action="append", metavar="CODES", help="不启用这些规则代码或前缀，逗号分隔")
    check.add_argument("--format", choices=("text", "json", "sarif"), default="text", help="输出格式")
    check.add_argument("--fix", action="store_true", help="应用安全的自动修复并写回文件")
    check.add_argument("--jobs", "-j", type=int, default=0, help="并行进程数（默认每个 CPU 核一个）")
    check.add_argument("--output", "-o", help="把报告写到这个文件而不是标准输出")
    check.add_argument(
        "--explain-unknown",
        action="store_true",
        help="不报告问题，改为列出分析放弃的地方：torch 代码用到的值在哪里变成未知、为什么（找分析的盲区用）",
    )

    rules = commands.add_parser("rules", help="列出所有规则，或显示一条规则的说明")
    rules.add_argument("code", nargs="?", help="规则代码，如 TL301")
    rules.add_argument("--format", choices=("text", "json", "markdown"), default="text")

    run = commands.add_parser("run-example", help="运行一个 API 的知识库示例（在所选设备上），退出码跟随示例")
    run.add_argument("name", help="API 名，如 torch.nn.CrossEntropyLoss、nn.Linear、F.relu")
    run.add_argument("--index", type=int, default=1, help="运行第几个示例（从 1 开始，默认 1）")
    run.add_argument("--device", default="auto", help="auto（默认，依次尝试 cuda、mps、cpu）、cpu、cuda、cuda:N 或 mps")
    run.add_argument("--python", help="运行示例的 Python 解释器（默认是 torchls 自己的）")
    run.add_argument("--timeout", type=float, default=30.0, help="最多运行多少秒（默认 30）")

    demo = commands.add_parser("demo", help="启动服务器，对示例文件做一组悬停并打印结果")
    demo.add_argument("--lines", type=int, default=8, help="每张卡片最多显示多少行")
    return parser


# What pygls reports as a warning but is part of a normal session: a ``$/cancelRequest`` for a request already
# answered (editors cancel hovers and completions all the time), a client's answer after the request was cancelled.
# And a message whose params do not fit: the server answers it with -32602 (lsp/server.py), so pygls's traceback
# of the failed conversion says nothing more.
_EXPECTED_EVENTS = (
    "Cancel notification for unknown message id",
    "Received response to unknown message id",
    "Ignoring notification for unknown method '$/",
    "Unable to deserialize message",
)


class _ExpectedEventsAtDebug(logging.Filter):
    """Logs the expected events above at debug level (shown with ``-vv``), not as warnings in the editor."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG and record.getMessage().startswith(_EXPECTED_EVENTS):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return record.levelno >= self.level


def _configure_logging(verbose: int, log_file: str | None) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.addFilter(_ExpectedEventsAtDebug(level))  # pygls's expected warnings are judged at debug level
    logging.basicConfig(level=level, handlers=[handler], format="%(asctime)s %(name)s %(levelname)s: %(message)s")


def _serve(tcp: str | None) -> int:
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit():
            print(f"torchls: --tcp 需要 HOST:PORT 格式，例如 127.0.0.1:2087，实际是 {tcp!r}", file=sys.stderr)
            return 2
        from torchls.lsp.server import create_server

        create_server().start_tcp(host, int(port))
        return 0
    from torchls.lsp.early_initialize import answer_early

    # before pygls is imported: a repeated ``initialize`` is answered from the last start's answer
    stdin, stdout = answer_early(sys.stdin.buffer, sys.stdout.buffer)
    from torchls.lsp.server import create_server

    create_server().start_io(stdin, stdout)
    return 0


def _explain_unknown(args: argparse.Namespace) -> int:
    """``torchls check --explain-unknown``: the give-ups of each Python file, then a summary by reason."""
    import json

    from torchls.batch import PYTHON_SUFFIXES, discover, explain_file
    from torchls.core.unknowns import summary

    if args.format == "sarif" or args.fix:
        print("torchls: --explain-unknown 只能和 --format text 或 json 一起用，不能和 --fix 一起用", file=sys.stderr)
        return 2
    files, missing = discover(args.paths, PYTHON_SUFFIXES)
    for path in missing:
        print(f"torchls: 找不到 {path}", file=sys.stderr)
    everything, rows, trouble = [], [], bool(missing)
    for path in files:
        give_ups, problem = explain_file(path)
        if problem:
            print(f"{path}: {problem}", file=sys.stderr)
            trouble = True
        everything.extend(give_ups)
        rows.extend({"path": str(path), **dataclasses.asdict(g)} for g in give_ups)
        if args.format == "text":
            lines = [g.text(str(path)) for g in give_ups]
            if lines:
                print("\n".join(lines))
    if args.format == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    print(summary(everything), file=sys.stdout if args.format == "text" else sys.stderr)
    return 2 if trouble else 0


def _find_entry(name: str):
    """The entry a user means by ``name`` (``nn.Linear``, ``F.relu``...); None after saying what is close."""
    from torchls.kb.base import KnowledgeBase

    kb = KnowledgeBase.load()
    entry = kb.lookup(name)
    if entry is None and name.startswith("torch."):
        # where torch defines it (``torch.nn.modules.linear.Linear``): a public name of the same object, found in
        # this interpreter's identity table (cached; built in seconds the first time)
        kb.read_identity()
        entry = kb.lookup(name)
    for short_prefix, full_prefix in _SHORTHANDS:
        if entry is not None:
            break
        if name.startswith(short_prefix):
            entry = kb.get(full_prefix + name[len(short_prefix) :])
    if entry is None:
        print(f"torchls: 知识库里没有 {name!r} 的条目。", file=sys.stderr)
        close = difflib.get_close_matches(name, list(kb.entries), n=5, cutoff=0.6)
        if close:
            print("你要找的可能是：" + "、".join(close), file=sys.stderr)
    return entry


def _explain(name: str, short: bool) -> int:
    from torchls.kb.render import render_card

    entry = _find_entry(name)
    if entry is None:
        return 1
    print(render_card(entry, compact=short, pointer="command-line"))
    return 0


def _run_example(args: argparse.Namespace) -> int:
    """Exit status: the example's own (0 when it ran fine), 124 on timeout, 2 when it could not start at all,
    3 when the device is missing, 130 when interrupted."""
    import asyncio

    from torchls.runner import Runner, is_valid_device

    entry = _find_entry(args.name)
    if entry is None:
        return 2
    if not entry.examples:
        print(f"torchls: {entry.name} 的条目没有示例。", file=sys.stderr)
        return 2
    if not 1 <= args.index <= len(entry.examples):
        print(
            f"torchls: {entry.name} 有 {len(entry.examples)} 个示例，--index 应在 1 到 {len(entry.examples)} 之间。",
            file=sys.stderr,
        )
        return 2
    if not is_valid_device(args.device):
        print(f"torchls: 设备 {args.device!r} 无效：应为 auto、cpu、cuda、cuda:N 或 mps。", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print("torchls: --timeout 应为正数（秒）。", file=sys.stderr)
        return 2
    example = entry.examples[args.index - 1]
    print(f"# {entry.name} 示例 {args.index}/{len(entry.examples)}：{example.title}")
    print(example.code.rstrip())
    print("# ---- 输出 ----", flush=True)
    try:
        result = asyncio.run(
            Runner().run(example.code, device=args.device, interpreter=args.python, timeout=args.timeout)
        )
    except KeyboardInterrupt:
        print("torchls: 已中断，示例进程已终止。", file=sys.stderr)
        return 130
    if result.stdout:
        print(result.stdout, end="" if result.stdout.endswith("\n") else "\n")
    if result.stderr:
        print(result.stderr, end="" if result.stderr.endswith("\n") else "\n", file=sys.stderr)
    print(f"# {result.summary}")
    if result.status == "unavailable":
        print(f"# 可以加上 --device cpu 重新运行：torchls run-example {args.name} --device cpu")
        return 3
    if result.status == "timeout":
        return 124
    if result.status == "error":
        return 2
    return result.exit_code or 0


def _kb_check(folders: list[Path]) -> int:
    from torchls.kb.base import KnowledgeBase, shipped_folder
    from torchls.kb.style import style_problems

    kb = KnowledgeBase.from_folders([shipped_folder(), *folders], use_cache=False)
    style = [problem for entry in kb.entries.values() for problem in style_problems(entry)]
    for error in [*kb.errors, *style]:
        print(error)
    where = "、".join(str(f) for f in kb.folders)
    print(f"{len(kb)} 个有效条目，{len(kb.errors)} 处问题，{len(style)} 处写作规范问题（{where}）", file=sys.stderr)
    return 1 if kb.errors or style else 0


def _kb_new(args: argparse.Namespace) -> int:
    from torchls.kb.base import writable_shipped_folder
    from torchls.kb.skeleton import SkeletonError, entry_path, introspect, skeleton_yaml

    folder = args.folder or writable_shipped_folder()
    if folder is None and not args.stdout:
        print(
            "torchls: 这是安装好的 torchls，条目不能写进包里的知识库（升级时会丢失）；"
            "请用 --folder 指定团队知识库目录，或者用 --stdout 只打印骨架",
            file=sys.stderr,
        )
        return 2
    try:
        facts = introspect(args.name, args.python)
    except SkeletonError as error:
        print(f"torchls: {error}", file=sys.stderr)
        return 2
    text = skeleton_yaml(facts)
    if args.stdout:
        print(text, end="")
        return 0
    assert folder is not None  # checked above, before introspecting torch
    path = entry_path(folder, facts.name)
    if path.exists() and not args.force:
        print(f"torchls: {path} 已存在；要覆盖请加 --force", file=sys.stderr)
        return 1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        print(f"torchls: 无法写入 {path}：{error.strerror or error}", file=sys.stderr)
        return 2
    print(f"已写入 {path}（{facts.kind}，torch {facts.torch_version}）。把 TODO 都写完后运行 torchls kb check。")
    return 0


def _kb_coverage(args: argparse.Namespace) -> int:
    from torchls.batch import PYTHON_SUFFIXES, discover
    from torchls.kb.base import KnowledgeBase
    from torchls.kb.coverage import project_coverage, usage_table_coverage

    if bool(args.paths) == bool(args.usage):
        print("torchls: 请给出要统计的文件或目录，或者用 --usage 指定用量表（二者选一）", file=sys.stderr)
        return 2
    if args.top < 0:
        print("torchls: --top 不能是负数", file=sys.stderr)
        return 2
    kb = KnowledgeBase.load(args.knowledge)
    if args.usage:
        try:
            result = usage_table_coverage(args.usage, kb)
        except (OSError, ValueError) as error:
            print(f"torchls: 无法读取用量表：{getattr(error, 'strerror', None) or error}", file=sys.stderr)
            return 2
        scope = f"{args.usage} "
    else:
        kb.read_identity()  # folding implementation names onto public ones needs the same-object table
        files, missing = discover(args.paths, PYTHON_SUFFIXES)
        for path in missing:
            print(f"torchls: 找不到 {path}", file=sys.stderr)
        if missing:
            return 2
        result = project_coverage(files, kb)
        for path in result.unreadable:
            print(f"torchls: 无法读取 {path}，已跳过", file=sys.stderr)
        scope = f"{len(files)} 个文件"
    absent = result.missing()
    shown = absent if args.top == 0 else absent[: args.top]
    if shown:
        print(f"缺少条目的 API（共 {len(absent)} 个，按调用次数排序）：")
        width = len(str(shown[0][1]))
        for name, count in shown:
            print(f"  {count:>{width}}  {name}")
        if len(shown) < len(absent):
            print(f"  ……另有 {len(absent) - len(shown)} 个（--top 0 显示全部）")
    apis = len(result.counts)
    print(
        f"覆盖率 {result.share:.2%}：{scope}中 {result.total} 次 torch API 调用有 {result.covered_uses} 次有中文条目"
        f"（{apis} 个 API 中 {apis - len(absent)} 个有条目；知识库共 {len(kb)} 个条目）"
    )
    if args.fail_under is not None and result.share * 100 < args.fail_under:
        print(f"torchls: 覆盖率低于 {args.fail_under}%", file=sys.stderr)
        return 1
    return 0


def _check(args: argparse.Namespace) -> int:
    from torchls.batch import discover, run, split_codes
    from torchls.core.rules import RULES_BY_CODE
    from torchls.report_formats import as_json, as_sarif, as_text, file_problems, summary

    select, ignore = split_codes(args.select), split_codes(args.ignore)
    unknown = [c for c in select + ignore if not any(code.startswith(c) for code in RULES_BY_CODE)]
    if unknown:
        print(
            f"torchls: 没有这样的规则代码或前缀：{'、'.join(unknown)}（运行 torchls rules 查看全部）", file=sys.stderr
        )
        return 2
    if args.explain_unknown:
        return _explain_unknown(args)
    files, missing = discover(args.paths)
    for path in missing:
        print(f"torchls: 找不到 {path}", file=sys.stderr)
    if args.jobs < 0:
        print("torchls: --jobs 不能是负数", file=sys.stderr)
        return 2
    reports = list(run(files, select, ignore, fix=args.fix, jobs=args.jobs))
    for line in file_problems(reports):
        print(line, file=sys.stderr)
    if args.format == "json":
        output = as_json(reports)
    elif args.format == "sarif":
        output = as_sarif(reports, Path.cwd())
    else:
        output = as_text(reports)
    if args.output:
        try:
            Path(args.output).write_text(output + "\n", encoding="utf-8")
        except OSError as error:
            print(f"torchls: 无法写入 {args.output}：{error.strerror or error}", file=sys.stderr)
            return 2
    elif output:
        print(output)
    if args.format == "text" or args.output:
        print(summary(reports), file=sys.stderr if args.format != "text" or args.output else sys.stdout)
    if missing or any(r.read_error for r in reports):
        return 2
    return 1 if any(r.findings or r.syntax_error for r in reports) else 0


def _rules(code: str | None, fmt: str) -> int:
    import json

    from torchls.core.rules import ALL_RULES, RULES_BY_CODE
    from torchls.ruledocs import SEVERITY_LABELS, rule_page, rules_table

    if code is not None:
        rule = RULES_BY_CODE.get(code.upper())
        if rule is None:
            print(f"torchls: 没有规则 {code}（运行 torchls rules 查看全部）", file=sys.stderr)
            return 2
        print(rule_page(rule))
        return 0
    if fmt == "markdown":
        print(rules_table())
    elif fmt == "json":
        rows = [
            {
                "code": r.code,
                "name": r.name,
                "severity": r.severity.name.lower(),
                "fixable": r.fixable,
                "summary": r.summary(),
                "knowledge_entry": r.kb_entry,
            }
            for r in ALL_RULES
        ]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        for r in ALL_RULES:
            fix = "[*]" if r.fixable else "   "
            print(f"{r.code} {fix} {SEVERITY_LABELS[r.severity]}  {r.name:<40} {r.summary()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `torchls rules | head`: the reader left; that is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(args.verbose, args.log_file)
    if args.command in (None, "serve"):
        return _serve(getattr(args, "tcp", None))
    if args.command == "explain":
        return _explain(args.name, args.short)
    if args.command == "kb":
        if args.kb_command == "check":
            return _kb_check(args.folders)
        return _kb_new(args) if args.kb_command == "new" else _kb_coverage(args)
    if args.command == "check":
        return _check(args)
    if args.command == "rules":
        return _rules(args.code, args.format)
    if args.command == "run-example":
        return _run_example(args)
    if args.command == "demo":
        from torchls.lsp.demo import main as demo_main

        return demo_main(args.lines)
    return 2
