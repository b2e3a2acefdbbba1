// What this client does itself, announced in `experimental` so that the server does not do it a second time:
// - `exampleOutput: "client"`: the result of torchls.runExample goes to the "torchls 示例" channel (examples.ts), so
//   the server does not also log the whole output to the "torchls" channel;
// - `missingTorch: "client"`: preflight.ts checks the project's interpreter for torch and warns with a button that
//   opens the setting, so the server only logs its own message about it.
import type { ClientCapabilities, FeatureState, StaticFeature } from "vscode-languageclient/node";

const HANDLED_BY_CLIENT = { exampleOutput: "client", missingTorch: "client" };

export class HandledByClientFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, ...HANDLED_BY_CLIENT };
  }

  initialize(): void {}

  getState(): FeatureState {
    return { kind: "static" };
  }

  clear(): void {}
}
