// The torchls extension: starts `python -m torchls serve` over stdio from the torchls the .vsix carries
// (bundle.ts), with the project's interpreter as the server's `interpreter` setting (jedi reads torch there),
// forwards the `torchls.*` settings, and adds the commands a user needs around the server (restart, output, run an
// example, open the full card).
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
} from "vscode-languageclient/node";

import { CARD_LINK_TRUST, CardLinksFeature, SHOW_CARD } from "./cards";
import { ServerLibraries, serverLibraries } from "./bundle";
import { Notice, notice, plan, projectUsable } from "./preflight";
import { onPythonInterpreterChange, resolveInterpreter } from "./interpreter";
import { ExampleResult, showExampleResult } from "./examples";
import { HandledByClientFeature } from "./capabilities";

const SECTION = "torchls";
const RUN_EXAMPLE = "torchls.runExample";

let client: LanguageClient | undefined;
let serverChannel: vscode.LogOutputChannel;
let exampleChannel: vscode.OutputChannel;
let starting: Promise<void> = Promise.resolve();
let libraries: ServerLibraries;
// The project's interpreter given to the running server (null: none usable, jedi reads the server's own Python).
let projectInterpreter: string | null = null;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  serverChannel = vscode.window.createOutputChannel("torchls", { log: true });
  exampleChannel = vscode.window.createOutputChannel("torchls 示例");
  libraries = serverLibraries(context.extensionPath);
  context.subscriptions.push(
    serverChannel,
    exampleChannel,
    vscode.commands.registerCommand("torchls.restartServer", () => restart("用户要求重启")),
    vscode.commands.registerCommand("torchls.showOutput", () => serverChannel.show(true)),
    vscode.commands.registerCommand("torchls.runExampleAtCursor", runExampleAtCursor),
    vscode.commands.registerCommand("torchls.showCardAtCursor", showCardAtCursor),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // Other torchls settings reach the running server as didChangeConfiguration; the interpreter restarts it
      // (it may change which Python runs the server, and what the user must be told).
      if (event.affectsConfiguration(`${SECTION}.interpreter`)) {
        void restart("torchls.interpreter 已更改");
      } else if (event.affectsConfiguration(SECTION) && client) {
        void client
          .sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: serverSettings() } })
          .catch((error) => serverChannel.warn(`发送设置时出错：${String(error)}`));
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
  const project = await resolveInterpreter(configuredInterpreter());
  const chosen = await plan(project, libraries);
  const problem = notice(chosen, project);
  if (problem) {
    serverChannel[problem.level === "error" ? "error" : "warn"](problem.message);
    // Not awaited: the notification stays open until the user answers it, and activation (so every torchls
    // command) and the next restart would wait for it.
    void tell(problem);
  }
  if (!chosen.server) {
    return;
  }
  projectInterpreter = projectUsable(chosen.project) ? project.path : null;
  const from = libraries.libs ? `扩展自带的 torchls（${libraries.libs}）` : "该解释器里安装的 torchls";
  serverChannel.info(`用 ${chosen.server} 运行${from}；jedi 读取${project.source}：${projectInterpreter ?? "（无）"}`);
  // No `transport`: with TransportKind.stdio the client appends `--stdio`, which `torchls serve` rejects; an
  // executable without a transport already talks over its stdin/stdout.
  const serverOptions: ServerOptions = {
    command: chosen.server,
    args: ["-m", "torchls", "serve"],
    options: { env: libraries.env },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { language: "python", scheme: "file" },
      { language: "python", scheme: "untitled" },
      // The Python cells of Jupyter notebooks: the server reads a notebook's cells as one program.
      { language: "python", notebook: "jupyter-notebook" },
    ],
    // No `synchronize.configurationSection`: the settings the server gets (here, pulled with
    // workspace/configuration, and sent on change in activate) carry the project's interpreter, whichever way it
    // was chosen, in place of the raw `torchls.interpreter`.
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
      workspace: {
        configuration: async (params, token, next) => {
          const answers = await next(params, token);
          if (!Array.isArray(answers)) {
            return answers;
          }
          return params.items.map((item, index) =>
            item.section === SECTION ? serverSettings() : (answers as unknown[])[index],
          );
        },
      },
    },
  };
  const created = new LanguageClient("torchls", "torchls", serverOptions, clientOptions);
  created.registerFeature(new CardLinksFeature());
  created.registerFeature(new HandledByClientFeature());
  try {
    await created.start();
    client = created;
  } catch (error) {
    serverChannel.error(`torchls 启动失败：${String(error)}`);
    void tell({ level: "error", message: `torchls 启动失败（${chosen.server}）：${String(error)}` });
  }
}

/** The `torchls` section as plain JSON, with the project's interpreter: what the server reads as its settings. */
function serverSettings(): Record<string, unknown> {
  const settings = JSON.parse(JSON.stringify(vscode.workspace.getConfiguration(SECTION))) as Record<string, unknown>;
  return { ...settings, interpreter: projectInterpreter };
}

const CHOOSE_INTERPRETER = "选择解释器";
const SHOW_OUTPUT = "显示输出";

async function tell(problem: Notice): Promise<void> {
  const show = problem.level === "error" ? vscode.window.showErrorMessage : vscode.window.showWarningMessage;
  const picked = await show(problem.message, CHOOSE_INTERPRETER, SHOW_OUTPUT);
  if (picked === CHOOSE_INTERPRETER) {
    await vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.interpreter`);
  } else if (picked === SHOW_OUTPUT) {
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
