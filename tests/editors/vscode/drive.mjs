// Drives the real VS Code workbench (code-server) in headless Chromium the way a user does. Run by
// tests/editors/test_vscode.py with one argument, a JSON file: {scenario, url, chromium, shots, result, file,
// failureShot, timeoutMs} and the scenario's own fields. Two scenarios:
// - "features" (the default; hover, fullCard, problemCode, fixTitle, brokenText, fixedNeedle, command,
//   examplePicker, outputMarker): open the file, hover a symbol with the mouse, click the card's link to the full
//   card and read the Markdown document it opens, read the Problems panel, apply a quick fix from the light-bulb
//   menu, run a command from the command palette and read the output channel;
// - "first-run" (fileNeedle, fileLastLine, notification {needle, icon}, showOutputCommand, channel, typed, settleMs,
//   shot, settingButton, settingNeedle): a first run where the extension has something to say (the project's
//   interpreter has no torch): open the file, read the notification (an error or warning toast), show the
//   extension's output channel from the command palette, type in the editor, wait and count the messages (a server
//   restarting in a loop would repeat them), then press the notification's button that opens a setting, and read
//   the Settings editor's search.
// - "notebook" (file, hover, problemCode, fixTitle, brokenText, fixedNeedle): open a Jupyter notebook with Quick
//   Open, read the Problems panel (the finding of one cell), hover a name in one cell that another cell defined, and
//   apply the quick fix in the cell from the light-bulb menu.
// Every step's outcome goes to the result file, which the test reads; screenshots go to `shots`.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const timeout = config.timeoutMs ?? 120000;
const out = { ok: false, steps: [], console: [] };

let EDITOR_LINES = ".part.editor .monaco-editor .view-lines"; // the notebook scenario reads its cells' editors
const PANEL = ".part.panel";

async function step(name, fn) {
  const started = Date.now();
  try {
    const value = await fn();
    out.steps.push({ name, ok: true, seconds: (Date.now() - started) / 1000 });
    return value;
  } catch (error) {
    out.steps.push({ name, ok: false, seconds: (Date.now() - started) / 1000, error: String(error?.stack ?? error) });
    throw new Error(`step failed: ${name}: ${error?.message ?? error}`);
  }
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(config.shots, `vscode-${name}.png`) });
}

/** Poll `fn` (a page function or a Node function) until it returns a truthy value; that value. */
async function until(what, fn, ms = timeout, every = 250) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

/** The text of the editor's rendered lines, top to bottom (Monaco draws spaces as no-break spaces). */
function editorLines(page) {
  return page.evaluate((selector) => {
    const lines = [...document.querySelectorAll(`${selector} .view-line`)];
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return lines.map((line) => line.textContent.replace(/\u00a0/g, " "));
  }, EDITOR_LINES);
}

/** Where the character at `needle`'s index + `offset` is drawn in the editor: the middle of its box. */
async function characterPoint(page, needle, offset) {
  const box = await page.evaluate(
    ({ selector, needle, offset }) => {
      for (const line of document.querySelectorAll(`${selector} .view-line`)) {
        const text = line.textContent.replace(/\u00a0/g, " ");
        const index = text.indexOf(needle);
        if (index < 0) {
          continue;
        }
        let wanted = index + offset; // in UTF-16 units, as the DOM counts
        const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          if (wanted < node.length) {
            const range = document.createRange();
            range.setStart(node, wanted);
            range.setEnd(node, wanted + 1);
            const rect = range.getBoundingClientRect();
            return { x: rect.x + rect.width / 2, y: rect.y + rect.height / 2 };
          }
          wanted -= node.length;
        }
      }
      return null;
    },
    { selector: EDITOR_LINES, needle, offset },
  );
  if (!box) {
    throw new Error(`not on screen: ${needle}`);
  }
  return box;
}

/** Press `key` until the quick input box (Quick Open, the command palette) shows; its text field. */
async function quickInput(page, key) {
  const input = page.locator(".quick-input-widget input");
  await until(`the quick input box (${key})`, async () => {
    await page.keyboard.press(key);
    return input
      .waitFor({ state: "visible", timeout: 2000 })
      .then(() => true)
      .catch(() => false);
  });
  return input;
}

/** Run a command from the command palette by its title, as a user types it. */
async function runFromPalette(page, title) {
  const input = await quickInput(page, "F1");
  await input.fill(`>${title}`);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ state: "visible", timeout });
  await row.click();
}

/** The text of the Output panel's editor, one string per rendered line. */
function outputLines(page) {
  return page.evaluate((selector) => {
    const lines = [...document.querySelectorAll(`${selector} .monaco-editor .view-line`)];
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return lines.map((line) => line.textContent.replace(/\u00a0/g, " "));
  }, PANEL);
}

/** The name of the channel the Output panel shows. */
function outputChannel(page) {
  return page
    .locator(`${PANEL} select.monaco-select-box`)
    .first()
    .evaluate((element) => element.options[element.selectedIndex]?.text);
}

/** Open the workbench, then the file with Quick Open; done once `needle` shows in the editor. */
async function openFile(page, needle) {
  await step("open", async () => {
    await page.goto(config.url);
    await page.locator(".monaco-workbench").waitFor({ timeout });
    // Quick Open (Ctrl+P) searches the folder with ripgrep on the server side.
    await (await quickInput(page, "Control+P")).fill(config.file);
    const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: config.file }).first();
    await row.waitFor({ state: "visible", timeout });
    await row.click();
    await until("the file in the editor", async () => (await editorLines(page)).some((line) => line.includes(needle)));
  });
}

/** Hover the mouse over `config.hover.needle` until the card holding `config.hover.expect` shows; its locator. */
async function hoverCard(page) {
  // After Chinese text and an emoji on the same line. The server may still be starting: move away and back
  // until the card shows.
  const card = page.locator(".monaco-hover:visible", { hasText: config.hover.expect }).first();
  const target = await characterPoint(page, config.hover.needle, config.hover.offset);
  await until(
    "the hover card",
    async () => {
      await page.mouse.move(target.x + 200, target.y + 200);
      await page.mouse.move(target.x, target.y, { steps: 5 });
      return card
        .waitFor({ state: "visible", timeout: 6000 })
        .then(() => true)
        .catch(() => false);
    },
    timeout,
    0,
  );
  await page.waitForTimeout(300); // let the card finish laying out
  return card;
}

/** From the Problems panel to the problem, the light-bulb menu, the fix `config.fixTitle`: the line is fixed. */
async function applyQuickFix(page, menuShot, fixedShot) {
  await step("quick fix", async () => {
    // From the Problems panel to the problem in the editor, then the light-bulb menu (Ctrl+.).
    const row = page.locator(`${PANEL} .markers-panel .monaco-list-row`, { hasText: config.problemCode }).first();
    await row.click();
    const point = await characterPoint(page, config.brokenText, 0);
    await page.mouse.click(point.x, point.y);
    const menu = page.locator(".action-widget");
    await until("the quick fix menu", async () => {
      await page.keyboard.press("Control+.");
      return menu
        .waitFor({ state: "visible", timeout: 3000 })
        .then(() => true)
        .catch(() => false);
    });
    await menu.locator(".monaco-list-row", { hasText: config.fixTitle }).first().waitFor({ state: "visible", timeout });
    out.actions = await menu.locator(".monaco-list-row").allInnerTexts();
    // Down to the fix with the arrow keys, then Enter (the menu blocks the mouse until it moves).
    await until("the fix to be selected in the menu", async () => {
      const focused = await menu.locator(".monaco-list-row.focused").getAttribute("aria-label");
      if (focused === config.fixTitle) {
        return true;
      }
      await page.keyboard.press("ArrowDown");
      return false;
    }, 10000);
    await shot(page, menuShot);
    await page.keyboard.press("Enter");
    out.fixedLine = await until("the fixed line", async () => {
      const lines = await editorLines(page);
      if (lines.some((line) => line.includes(config.brokenText))) {
        return null;
      }
      return lines.find((line) => line.includes(config.fixedNeedle)) ?? null;
    });
    // The problem goes away (`config.errorsAfterFix` others may stay).
    const left = config.errorsAfterFix ?? 0;
    out.problemsAfterFix = await until("the problem to go away", async () => {
      const label = await page.locator("#status\\.problems").getAttribute("aria-label");
      const errors = Number(/Errors?: (\d+)/.exec(label ?? "")?.[1] ?? 0);
      return label && errors === left ? label : null;
    });
    await shot(page, fixedShot);
  });
}

async function features(page) {
  await openFile(page, config.hover.needle);

  out.hover = await step("hover", async () => {
    const card = await hoverCard(page);
    await shot(page, "1-hover");
    const box = await card.boundingBox();
    out.hoverSize = box ? { width: Math.round(box.width), height: Math.round(box.height) } : null;
    return card.innerText();
  });

  out.fullCard = await step("full card", async () => {
    // The compact card's last line links to the full card: a click runs torchls.showCard, and the server asks VS
    // Code to open the card's Markdown file.
    const card = await hoverCard(page);
    const link = card.locator("a", { hasText: config.fullCard.link }).first();
    out.fullCardLink = await link.getAttribute("data-href");
    await link.click();
    const tab = page.locator(".tabs-container .tab", { hasText: config.fullCard.tab }).first();
    await tab.waitFor({ state: "visible", timeout });
    const lines = await until("the full card in the editor", async () => {
      const shown = await editorLines(page);
      return shown.some((line) => line.includes(config.fullCard.expect)) ? shown : null;
    });
    await page.mouse.move(5, 400);
    await page.waitForTimeout(300);
    await shot(page, "1b-full-card");
    const label = await tab.getAttribute("aria-label");
    // Close it (the tab's own close button) and come back to the Python file for the next steps.
    await tab.hover();
    await tab.locator(".codicon-close").first().click();
    await tab.waitFor({ state: "hidden", timeout });
    await until("the Python file in the editor again", async () =>
      (await editorLines(page)).some((line) => line.includes(config.hover.needle)),
    );
    return { tab: label, lines };
  });

  out.problems = await step("problems", async () => {
    await page.mouse.move(5, 400);
    await page.keyboard.press("Escape");
    // Ctrl+Shift+M opens the Problems panel (and closes it when it has the focus: press it only while hidden).
    const markers = page.locator(`${PANEL} .markers-panel`);
    const row = page.locator(`${PANEL} .markers-panel .monaco-list-row`, { hasText: config.problemCode });
    await until("the problem in the Problems panel", async () => {
      if (!(await markers.isVisible())) {
        await page.keyboard.press("Control+Shift+M");
      }
      return row.first().isVisible();
    });
    await shot(page, "2-problems");
    const rows = page.locator(`${PANEL} .markers-panel .monaco-list-row`);
    const texts = [];
    for (let index = 0; index < (await rows.count()); index++) {
      const item = rows.nth(index);
      texts.push({ text: await item.innerText(), label: await item.getAttribute("aria-label") });
    }
    return texts;
  });

  await applyQuickFix(page, "3-quick-fix-menu", "4-fixed");

  await step("run example", async () => {
    // The cursor on the symbol (a click), then the extension's command from the palette.
    const target = await characterPoint(page, config.hover.needle, config.hover.offset);
    await page.mouse.click(target.x, target.y);
    await page.keyboard.press("Escape");
    await runFromPalette(page, config.command);
    // More than one example: the extension asks which one; take the first, as pressing Enter does.
    const picker = page.locator(`.quick-input-widget:has(input[placeholder="${config.examplePicker}"])`);
    await until("the example output in the output panel", async () => {
      if (await picker.isVisible()) {
        out.examples = await picker.locator(".monaco-list-row").allInnerTexts();
        await page.keyboard.press("Enter");
        await picker.waitFor({ state: "hidden" });
      }
      return (await outputLines(page)).some((line) => line.includes(config.outputMarker));
    });
    // A taller panel (drag its top edge up to just below the code) shows the whole run, from its first line.
    const panel = await page.locator(PANEL).boundingBox();
    const code = await page.evaluate((selector) => {
      const lines = [...document.querySelectorAll(`${selector} .view-line`)];
      return Math.max(...lines.map((line) => line.getBoundingClientRect().bottom));
    }, EDITOR_LINES);
    await page.mouse.move(panel.x + panel.width / 2, panel.y + 1);
    await page.mouse.down();
    await page.mouse.move(panel.x + panel.width / 2, code + 20, { steps: 10 });
    await page.mouse.up();
    await page.mouse.move(panel.x + panel.width / 2, code + 4); // off the edge, which stays highlighted under it
    await page.waitForTimeout(500);
    out.output = (await outputLines(page)).join("\n");
    out.channel = await outputChannel(page);
    await page.waitForTimeout(500);
    await shot(page, "5-run-example");
  });
}

async function firstRun(page) {
  await openFile(page, config.fileNeedle);
  const errors = () =>
    page.locator(".notifications-toasts .notification-list-item", {
      has: page.locator(`.codicon-${config.notification.icon ?? "error"}`),
      hasText: config.notification.needle,
    });

  out.notification = await step("notification", async () => {
    const toast = errors().first();
    await toast.waitFor({ state: "visible", timeout });
    // A toast shows its whole message when it is the only one; otherwise it can be folded to one line, with a
    // chevron among its actions (shown while the mouse is over it) that unfolds it, as a user does to read it all.
    await until(
      "the whole notification",
      async () => {
        await toast.hover();
        const expand = toast.locator(".codicon-notifications-expand");
        if (!(await expand.isVisible())) {
          return true;
        }
        await expand.click();
        return false;
      },
      30000,
      500,
    );
    await page.mouse.move(5, 400);
    return {
      message: await toast.locator(".notification-list-item-message").innerText(),
      buttons: await toast.locator(".notification-list-item-buttons-container .monaco-button").allInnerTexts(),
      source: await toast.locator(".notification-list-item-source").innerText().catch(() => null),
    };
  });

  await step("output channel", async () => {
    // The extension's own command, from the command palette (it answers while the notification is still open).
    await runFromPalette(page, config.showOutputCommand);
    await until(
      "the message in the output panel",
      async () =>
        (await outputChannel(page).catch(() => null)) === config.channel &&
        (await outputLines(page)).join("").includes(config.notification.needle),
    );
    out.channel = await outputChannel(page);
  });

  out.typedLine = await step("edit", async () => {
    // The editor still takes typing: a new line at the end of the file.
    const last = config.fileLastLine;
    const point = await characterPoint(page, last, last.length - 1);
    await page.mouse.click(point.x, point.y);
    await page.keyboard.press("End");
    await page.keyboard.press("Enter");
    await page.keyboard.type(config.typed);
    return until("the typed line", async () =>
      (await editorLines(page)).find((line) => line.includes(config.typed)) ?? null,
    );
  });

  await step("settle", async () => {
    // A crash loop would restart the server and repeat the message within seconds: wait, then count.
    await page.waitForTimeout(config.settleMs ?? 5000);
    out.toasts = await page.locator(".notifications-toasts .notification-list-item-message").allInnerTexts();
    out.noticeToasts = await errors().count();
    out.output = (await outputLines(page)).join("\n");
    out.outputJoined = (await outputLines(page)).join("");
    await page.mouse.move(5, 400);
    await page.waitForTimeout(300);
    await shot(page, config.shot);
  });

  out.setting = await step("open the setting", async () => {
    const button = errors()
      .first()
      .locator(".notification-list-item-buttons-container .monaco-button", { hasText: config.settingButton });
    await button.click();
    // The Settings editor opens with the setting's id as its search.
    const search = page.locator(".settings-editor .settings-header .suggest-input-container");
    await search.first().waitFor({ state: "visible", timeout });
    const text = await until("the setting in the search", async () => {
      const shown = await search.first().innerText();
      return shown.includes(config.settingNeedle) ? shown : null;
    });
    await shot(page, `${config.shot}-setting`);
    return text;
  });
}

async function notebook(page) {
  EDITOR_LINES = ".cell-editor-container .monaco-editor .view-lines"; // every code cell is an editor of its own
  await openFile(page, config.hover.needle);

  out.problems = await step("notebook problems", async () => {
    const markers = page.locator(`${PANEL} .markers-panel`);
    const row = page.locator(`${PANEL} .markers-panel .monaco-list-row`, { hasText: config.problemCode });
    await until("the notebook's problem in the Problems panel", async () => {
      if (!(await markers.isVisible())) {
        await page.keyboard.press("Control+Shift+M");
      }
      return row.first().isVisible();
    });
    await shot(page, "nb-1-problems");
    return page.locator(`${PANEL} .markers-panel .monaco-list-row`).allInnerTexts();
  });

  out.hover = await step("notebook hover", async () => {
    // The Problems panel covers the last cell: hide the panel (Ctrl+J toggles it) before pointing at the cell.
    await until("the panel hidden", async () => {
      if (await page.locator(PANEL).isVisible()) {
        await page.keyboard.press("Control+J");
        await page.waitForTimeout(300);
      }
      return !(await page.locator(PANEL).isVisible());
    }, 10000);
    // The last cell is below the fold: scroll the notebook down (the wheel over its list of cells).
    await page.mouse.move(800, 400);
    await page.mouse.wheel(0, 600);
    await page.waitForTimeout(500);
    // The name is defined in another cell: only the notebook's program knows what it is.
    const card = await hoverCard(page);
    await shot(page, "nb-2-hover");
    return card.innerText();
  });

  // The fix edits the cell: the Problems panel again, then the light-bulb menu on the problem.
  await page.mouse.move(5, 400);
  await page.keyboard.press("Escape");
  await until("the Problems panel", async () => {
    if (!(await page.locator(`${PANEL} .markers-panel`).isVisible())) {
      await page.keyboard.press("Control+Shift+M");
    }
    return page.locator(`${PANEL} .markers-panel`).isVisible();
  });
  await applyQuickFix(page, "nb-3-quick-fix-menu", "nb-4-fixed");
}

const SCENARIOS = { features, "first-run": firstRun, notebook };

const browser = await chromium.launch({
  executablePath: config.chromium,
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(config.url).origin });
  const page = await context.newPage();
  page.on("console", (message) => {
    if (["error", "warning"].includes(message.type()) && out.console.length < 200) {
      out.console.push(`${message.type()}: ${message.text().slice(0, 500)}`);
    }
  });
  try {
    const scenario = SCENARIOS[config.scenario ?? "features"];
    if (!scenario) {
      throw new Error(`no such scenario: ${config.scenario}`);
    }
    await scenario(page);
    out.ok = true;
  } catch (error) {
    out.error = String(error?.message ?? error);
    await shot(page, config.failureShot ?? "failure").catch(() => {});
  }
} finally {
  writeFileSync(config.result, JSON.stringify(out, null, 2));
  await browser.close();
}
process.exit(out.ok ? 0 : 1);
