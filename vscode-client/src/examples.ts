// The result of `torchls.runExample` (the server's RunResult as JSON) written to the "torchls 示例" channel. The
// extension tells the server so (capabilities.ts), and the server then leaves the output out of its log messages:
// it appears once, in this channel, as plain text (no timestamps or log levels on its headers).
import * as vscode from "vscode";

export interface ExampleResult {
  status: string; // ok / failed / timeout / cancelled / unavailable / error
  summary: string;
  stdout?: string;
  stderr?: string;
  code?: string | null;
  name?: string;
  device?: string | null;
  wall_seconds?: number | null;
}

export function showExampleResult(channel: vscode.OutputChannel, result: ExampleResult): void {
  const title = result.name ? `${result.name}（设备：${result.device ?? "无"}）` : "示例";
  channel.appendLine(`=== ${title}：${result.summary} ===`);
  if (result.code) {
    channel.appendLine(`--- 示例代码 ---\n${result.code.trimEnd()}`);
  }
  if (result.stdout) {
    channel.appendLine(`--- 输出 ---\n${result.stdout.trimEnd()}`);
  }
  if (result.stderr) {
    channel.appendLine(`--- 错误输出 ---\n${result.stderr.trimEnd()}`);
  }
  channel.appendLine("");
  channel.show(true);
}
