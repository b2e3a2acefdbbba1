// The project's interpreter, the one jedi reads torch from: the `torchls.interpreter` setting, else the Python
// extension's selected interpreter when that extension is installed, else `python3` from PATH (preflight.ts says
// so when that one has no torch). The server itself may run on another Python (preflight.ts).
import * as os from "os";
import * as vscode from "vscode";

export interface Interpreter {
  path: string;
  source: string; // where the choice came from, for messages
}

// The parts of the Python extension's API this extension uses (ms-python.python, `environments`).
interface PythonEnvironments {
  getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
  resolveEnvironment(path: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}

async function pythonEnvironments(): Promise<PythonEnvironments | undefined> {
  const extension = vscode.extensions.getExtension("ms-python.python");
  if (!extension) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    return api?.environments as PythonEnvironments | undefined;
  } catch {
    return undefined; // a broken Python extension must not stop torchls
  }
}

function expandHome(path: string): string {
  return path === "~" || path.startsWith("~/") ? os.homedir() + path.slice(1) : path;
}

export async function resolveInterpreter(configured: string | undefined): Promise<Interpreter> {
  if (configured) {
    return { path: expandHome(configured), source: "设置 torchls.interpreter 指定的解释器" };
  }
  const environments = await pythonEnvironments();
  if (environments) {
    try {
      const active = environments.getActiveEnvironmentPath(vscode.window.activeTextEditor?.document.uri);
      const resolved = await environments.resolveEnvironment(active);
      const path = resolved?.executable.uri?.fsPath ?? active.path;
      if (path) {
        return { path, source: "Python 扩展选中的解释器" };
      }
    } catch {
      // fall through to python3
    }
  }
  return { path: "python3", source: "默认的 python3（没有设置 torchls.interpreter，也没有 Python 扩展选中的解释器）" };
}

export async function onPythonInterpreterChange(listener: () => void): Promise<vscode.Disposable[]> {
  const environments = await pythonEnvironments();
  return environments ? [environments.onDidChangeActiveEnvironmentPath(listener)] : [];
}
