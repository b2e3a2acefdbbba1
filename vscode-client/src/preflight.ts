// Before starting the server: can this interpreter run torchls at all? A precise first-run message beats the
// language client's generic "server crashed 5 times".
import { execFile } from "child_process";

import { Interpreter } from "./interpreter";

export interface Problem {
  kind: "missing-python" | "missing-torchls" | "broken";
  message: string;
}

const CHECK = "import sys, torchls; sys.stdout.write(torchls.__version__)";

export function checkServer(interpreter: Interpreter): Promise<Problem | undefined> {
  return new Promise((resolve) => {
    execFile(interpreter.path, ["-c", CHECK], { timeout: 30000 }, (error, _stdout, stderr) => {
      if (!error) {
        resolve(undefined);
      } else if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        resolve({
          kind: "missing-python",
          message: `找不到 Python 解释器“${interpreter.path}”（${interpreter.source}）。请在设置 torchls.interpreter 中填写装有 torchls 的解释器的路径。`,
        });
      } else if (/No module named '?torchls/.test(stderr)) {
        resolve({
          kind: "missing-torchls",
          message: `${interpreter.source}（${interpreter.path}）里没有安装 torchls。请在 torchls 源码目录运行：${interpreter.path} -m pip install .（或用 torchls.interpreter 指定已安装 torchls 的解释器），然后执行“torchls: 重启语言服务器”。`,
        });
      } else {
        const last = stderr.trim().split("\n").pop() ?? String(error);
        resolve({ kind: "broken", message: `用 ${interpreter.path} 导入 torchls 失败：${last}` });
      }
    });
  });
}

/** The line for the output channel: the message already names the interpreter and where it came from. */
export function describeProblem(problem: Problem): string {
  return `无法启动 torchls：${problem.message}`;
}
