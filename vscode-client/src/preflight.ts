// Before starting the server: which Python runs it, and can jedi read torch from the project's interpreter? A
// precise first-run message beats the language client's generic "server crashed 5 times".
//
// The server needs any Python >= 3.10 that imports torchls (from the bundle): the project's interpreter when it
// is new enough, else `python3` or `python` from PATH. The project's interpreter is only read by jedi, so it may
// be older or lack torch; then torchls still runs and the user is told what the hovers will miss.
import { execFile } from "child_process";

import { Interpreter } from "./interpreter";
import { ServerLibraries } from "./bundle";

const MINIMUM: [number, number] = [3, 10];
const FALLBACKS = ["python3", "python"];

// One run per candidate: its version, whether torch is importable (found, not imported: importing torch takes
// seconds), and, on a new enough Python, whether torchls imports.
const PROBE = `
import importlib.util, json, sys
info = {"version": list(sys.version_info[:2]), "torch": importlib.util.find_spec("torch") is not None}
if sys.version_info[:2] >= (${MINIMUM.join(", ")}):
    try:
        import torchls
        info["torchls"] = torchls.__file__
    except Exception as error:
        info["error"] = f"{type(error).__name__}: {error}"
sys.stdout.write(json.dumps(info))
`;

export interface Probe {
  path: string;
  missing?: boolean; // no such executable
  version?: [number, number];
  torch?: boolean;
  torchls?: string; // where torchls was imported from
  error?: string; // why torchls (or the interpreter itself) failed
}

export interface Plan {
  server?: string; // the Python that runs torchls; undefined when none can
  project: Probe; // the project's interpreter, as jedi will read it
  tried: Probe[]; // every candidate for the server, in order
}

function probe(path: string, libraries: ServerLibraries): Promise<Probe> {
  return new Promise((resolve) => {
    execFile(path, ["-c", PROBE], { timeout: 30000, env: libraries.env }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === "ENOENT") {
        resolve({ path, missing: true });
        return;
      }
      try {
        resolve({ path, ...JSON.parse(stdout) });
      } catch {
        const last = stderr.trim().split("\n").pop() || String(error);
        resolve({ path, error: last });
      }
    });
  });
}

function runsServer(found: Probe): boolean {
  return found.torchls !== undefined;
}

export async function plan(project: Interpreter, libraries: ServerLibraries): Promise<Plan> {
  const projectProbe = await probe(project.path, libraries);
  const tried = [projectProbe];
  if (runsServer(projectProbe)) {
    return { server: project.path, project: projectProbe, tried };
  }
  for (const candidate of FALLBACKS.filter((name) => name !== project.path)) {
    const found = await probe(candidate, libraries);
    tried.push(found);
    if (runsServer(found)) {
      return { server: candidate, project: projectProbe, tried };
    }
  }
  return { project: projectProbe, tried };
}

/** Whether jedi can read the project's interpreter at all (it exists and runs). */
export function projectUsable(found: Probe): boolean {
  return !found.missing && found.version !== undefined;
}

function describe(found: Probe): string {
  if (found.missing) {
    return `${found.path}（找不到）`;
  }
  if (!found.version) {
    return `${found.path}（无法运行：${found.error ?? "未知错误"}）`;
  }
  const version = `Python ${found.version.join(".")}`;
  const old = found.version[0] < MINIMUM[0] || (found.version[0] === MINIMUM[0] && found.version[1] < MINIMUM[1]);
  if (old) {
    return `${found.path}（${version}，太旧）`;
  }
  return `${found.path}（${version}，无法导入扩展自带的 torchls：${found.error ?? "未知错误"}）`;
}

export interface Notice {
  level: "error" | "warning";
  message: string;
}

const CHOOSE = "请在设置 torchls.interpreter 中选择项目虚拟环境里装有 torch 的 Python（填写它的完整路径）";

/** What to tell the user before (or instead of) starting the server; undefined when all is well. */
export function notice(result: Plan, project: Interpreter): Notice | undefined {
  if (!result.server) {
    return {
      level: "error",
      message:
        `找不到能运行 torchls 的 Python ${MINIMUM.join(".")} 或更新版本（试过：${result.tried.map(describe).join("；")}）。` +
        `${CHOOSE}，torchls 会自动重启。`,
    };
  }
  if (!projectUsable(result.project)) {
    return {
      level: "warning",
      message: `无法使用${project.source}：${describe(result.project)}。torchls 照常运行，但悬停卡片缺少 torch 的签名。${CHOOSE}。`,
    };
  }
  if (!result.project.torch) {
    return {
      level: "warning",
      message: `${project.source}（${project.path}）里没有 torch：torchls 照常运行，但悬停卡片缺少 torch 的签名和版本提示。${CHOOSE}。`,
    };
  }
  return undefined;
}
