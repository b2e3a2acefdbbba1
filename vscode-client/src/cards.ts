// The full card: the compact hover ends with a `command:torchls.showCard?...` link, which VS Code runs only in
// trusted Markdown. The extension trusts exactly that one command in the server's Markdown (hovers, completion
// documentation) and tells the server it runs it from links, so the server adds the link; other clients get the
// code action "查看完整卡片" instead. The server writes the card to a .md file and opens it (window/showDocument).
import type { ClientCapabilities, FeatureState, LanguageClientOptions, StaticFeature } from "vscode-languageclient/node";

export const SHOW_CARD = "torchls.showCard";

/** Trust for the server's Markdown: command links run, but only `torchls.showCard`. */
export const CARD_LINK_TRUST: LanguageClientOptions["markdown"] = {
  isTrusted: { enabledCommands: [SHOW_CARD] },
};

/** Announces `experimental.commandLinks` in the client capabilities: the command links this client runs. */
export class CardLinksFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, commandLinks: [SHOW_CARD] };
  }

  initialize(): void {}

  getState(): FeatureState {
    return { kind: "static" };
  }

  clear(): void {}
}
