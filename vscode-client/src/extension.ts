// The torchls extension: starts `python -m torchls serve` over stdio with the chosen interpreter, forwards the
// `torchls.*` settings, and adds the commands a user needs around the server (restart, output, run an example, open
// the full card).
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
} from "vscode-languageclient/node";

import { CARD_LINK_TRUST, CardLinksFeature, SHOW_CARD } from "./cards";
import { checkServer, describeProblem } from "./preflight";
import { Interpreter, onPythonInterpreterChange, resolveInterpreter } from "./interpreter";
import { ExampleResult, showExampleResult } from "./examples";

const SECTION = "torchls";
const RUN_EXAMPLE = "torchls.runExample";

let client: LanguageClient | undefined;
let serverChannel: vscode.LogOutputChannel;
let exampleChannel: vscode.LogOutputChannel;
let starting: Promise<void> = Promise.resolve();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  serverChannel = vscode.window.createOutputChannel("torchls", { log: true });
  exampleChannel = vscode.window.createOutputChannel("torchls 示例", { log: true });
  context.subscriptions.push(
    serverChannel,
    exampleChannel,
    vscode.commands.registerCommand("torchls.restartServer", () => restart("用户要求重启")),
    vscode.commands.registerCommand("torchls.showOutput", () => serverChannel.show(true)),
    vscode.commands.registerCommand("torchls.runExampleAtCursor", runExampleAtCursor),
    vscode.commands.registerCommand("torchls.showCardAtCursor", showCardAtCursor),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // Other torchls settings reach the running server as didChangeConfiguration; the interpreter runs it.
      if (event.affectsConfiguration(`${SECTION}.interpreter`)) {
        void restart("torchls.interpreter 已更改");
      }
    }),
  );
  context.subscriptions.push(
    ...(await onPythonInterpreterChange(() => {
      if (!configuredInterpreter()) {
        void restart("Python 扩展选中的解释器已更改");
      }
    })),
  );
  await restart("启动");
}

export async function deactivate(): Promise<void> {
  await stop();
}

function configuredInterpreter(): string | undefined {
  return vscode.workspace.getConfiguration(SECTION).get<string | null>("interpreter") || undefined;
}

/** Stop the running server (if any) and start a new one; calls are serialised so restarts never overlap. */
function restart(reason: string): Promise<void> {
  starting = starting.then(async () => {
    await stop();
    serverChannel.info(`${reason}：正在启动 torchls`);
    await start();
  });
  return starting;
}

async function stop(): Promise<void> {
  const running = client;
  client = undefined;
  if (running) {
    try {
      await running.stop(5000);
    } catch (error) {
      serverChannel.warn(`停止 torchls 时出错：${String(error)}`);
    }
  }
}

async function start(): Promise<void> {
  const interpreter = await resolveInterpreter(configuredInterpreter());
  const problem = await checkServer(interpreter);
  if (problem) {
    serverChannel.error(describeProblem(problem));
    // Not awaited: the notification stays open until the user answers it, and activation (so every torchls
    // command) and the next restart would wait for it.
    void offerFix(problem.kind === "missing-python" ? "选择解释器" : "复制安装命令", interpreter, problem.message);
    return;
  }
  serverChannel.info(`使用${interpreter.source}：${interpreter.path}`);
  // No `transport`: with TransportKind.stdio the client appends `--stdio`, which `torchls serve` rejects; an
  // executable without a transport already talks over its stdin/stdout.
  const serverOptions: ServerOptions = {
    command: interpreter.path,
    args: ["-m", "torchls", "serve"],
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { language: "python", scheme: "file" },
      { language: "python", scheme: "untitled" },
      // The Python cells of Jupyter notebooks: the server reads a notebook's cells as one program.
      { language: "python", notebook: "jupyter-notebook" },
    ],
    synchronize: { configurationSection: SECTION },
    initializationOptions: serverSettings(),
    outputChannel: serverChannel,
    traceOutputChannel: serverChannel,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    markdown: CARD_LINK_TRUST,
    middleware: {
      // Whether the example ran from the light bulb or from our command, its output goes to the examples channel.
      executeCommand: async (command, args, next) => {
        const result = await next(command, args);
        if (command === RUN_EXAMPLE && result) {
          showExampleResult(exampleChannel, result as ExampleResult);
        }
        return result;
      },
    },
  };
  const created = new LanguageClient("torchls", "torchls", serverOptions, clientOptions);
  created.registerFeature(new CardLinksFeature());
  try {
    await created.start();
    client = created;
  } catch (error) {
    serverChannel.error(`torchls 启动失败：${String(error)}`);
    void offerFix("显示输出", interpreter, `torchls 启动失败（${interpreter.path}）：${String(error)}`);
  }
}

/** The `torchls` section as plain JSON: what the server reads as initializationOptions. */
function serverSettings(): unknown {
  return JSON.parse(JSON.stringify(vscode.workspace.getConfiguration(SECTION)));
}

async function offerFix(primary: string, interpreter: Interpreter, message: string): Promise<void> {
  const install = `${interpreter.path} -m pip install .`; // run in the torchls source folder
  const picked = await vscode.window.showErrorMessage(message, primary, "打开设置", "显示输出");
  if (picked === "复制安装命令") {
    await vscode.env.clipboard.writeText(install);
    void vscode.window.showInformationMessage(
      `已复制：${install}。在 torchls 源码目录的终端里运行它，然后执行“torchls: 重启语言服务器”。`,
    );
  } else if (picked === "选择解释器") {
    await vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.interpreter`);
  } else if (picked === "打开设置") {
    await vscode.commands.executeCommand("workbench.action.openSettings", SECTION);
  } else if (picked === "显示输出") {
    serverChannel.show(true);
  }
}

/** The commands of the server's code actions of `kind` at the cursor; undefined (after saying why) when there is
 * no Python editor or no server. */
async function commandsAtCursor(kind: string): Promise<vscode.Command[] | undefined> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== "python") {
    void vscode.window.showInformationMessage("请先在 Python 文件里把光标放在一个 torch 符号上。");
    return undefined;
  }
  if (!client) {
    void vscode.window.showWarningMessage("torchls 没有在运行：请查看“torchls”输出面板，或执行“torchls: 重启语言服务器”。");
    return undefined;
  }
  const position = editor.selection.active;
  const found = await vscode.commands.executeCommand<(vscode.CodeAction | vscode.Command)[]>(
    "vscode.executeCodeActionProvider",
    editor.document.uri,
    new vscode.Range(position, position),
    kind,
  );
  return (found ?? [])
    .map((item) => ("command" in item && typeof item.command !== "string" ? item.command : (item as vscode.Command)))
    .filter((command): command is vscode.Command => command?.command === kind);
}

/** Run the example of the torch symbol under the cursor: the server's own code actions say which exist. */
async function runExampleAtCursor(): Promise<void> {
  const runs = await commandsAtCursor(RUN_EXAMPLE);
  if (!runs) {
    return;
  }
  if (runs.length === 0) {
    void vscode.window.showInformationMessage("光标处不是有示例的 torch 符号。");
    return;
  }
  let chosen = runs[0];
  if (runs.length > 1) {
    const picked = await vscode.window.showQuickPick(
      runs.map((command) => ({ label: command.title, command })),
      { placeHolder: "选择要运行的示例" },
    );
    if (!picked) {
      return;
    }
    chosen = picked.command;
  }
  await vscode.commands.executeCommand(chosen.command, ...(chosen.arguments ?? []));
}

/** Open the full card of the torch symbol under the cursor as a Markdown document (the server opens it). */
async function showCardAtCursor(): Promise<void> {
  const cards = await commandsAtCursor(SHOW_CARD);
  if (!cards) {
    return;
  }
  if (cards.length === 0) {
    void vscode.window.showInformationMessage("光标处不是有中文条目的 torch 符号。");
    return;
  }
  await vscode.commands.executeCommand(cards[0].command, ...(cards[0].arguments ?? []));
}
