// Drives the real VS Code workbench (code-server) in headless Chromium the way a user does: open the file, hover a
// symbol with the mouse, read the Problems panel, apply a quick fix from the light-bulb menu, run a command from
// the command palette and read the output channel. Run by tests/editors/test_vscode.py with one argument, a JSON
// file: {url, chromium, shots, result, file, hover, problemCode, fixTitle, brokenText, fixedNeedle, command,
// examplePicker, outputMarker, timeoutMs}. Every step's outcome goes to the result file, which the test reads; a
// screenshot of each step goes to `shots`.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const timeout = config.timeoutMs ?? 120000;
const out = { ok: false, steps: [], console: [] };

const EDITOR_LINES = ".part.editor .monaco-editor .view-lines";
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

async function main(page) {
  await step("open", async () => {
    await page.goto(config.url);
    await page.locator(".monaco-workbench").waitFor({ timeout });
    // Quick Open (Ctrl+P) searches the folder with ripgrep on the server side.
    await (await quickInput(page, "Control+P")).fill(config.file);
    const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: config.file }).first();
    await row.waitFor({ state: "visible", timeout });
    await row.click();
    await until("the file in the editor", async () =>
      (await editorLines(page)).some((line) => line.includes(config.hover.needle)),
    );
  });

  out.hover = await step("hover", async () => {
    // Hover the mouse over the symbol, after Chinese text and an emoji on the same line. The server may still be
    // starting: move away and back until the card shows.
    const card = page.locator(".monaco-hover:visible", { hasText: config.hover.expect });
    const target = await characterPoint(page, config.hover.needle, config.hover.offset);
    await until(
      "the hover card",
      async () => {
        await page.mouse.move(target.x + 200, target.y + 200);
        await page.mouse.move(target.x, target.y, { steps: 5 });
        return card
          .first()
          .waitFor({ state: "visible", timeout: 6000 })
          .then(() => true)
          .catch(() => false);
      },
      timeout,
      0,
    );
    await page.waitForTimeout(300); // let the card finish laying out before the picture
    await shot(page, "1-hover");
    return card.first().innerText();
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
    await shot(page, "3-quick-fix-menu");
    await page.keyboard.press("Enter");
    out.fixedLine = await until("the fixed line", async () => {
      const lines = await editorLines(page);
      if (lines.some((line) => line.includes(config.brokenText))) {
        return null;
      }
      return lines.find((line) => line.includes(config.fixedNeedle)) ?? null;
    });
    out.problemsAfterFix = await until("the problem to go away", async () => {
      const label = await page.locator("#status\\.problems").getAttribute("aria-label");
      return label && !/Errors?: [1-9]/.test(label) ? label : null;
    });
    await shot(page, "4-fixed");
  });

  await step("run example", async () => {
    // The cursor on the symbol (a click), then the extension's command from the palette.
    const target = await characterPoint(page, config.hover.needle, config.hover.offset);
    await page.mouse.click(target.x, target.y);
    await page.keyboard.press("Escape");
    await runFromPalette(page, config.command);
    const outputLines = () =>
      page.evaluate((selector) => {
        const lines = [...document.querySelectorAll(`${selector} .monaco-editor .view-line`)];
        lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
        return lines.map((line) => line.textContent.replace(/\u00a0/g, " "));
      }, PANEL);
    // More than one example: the extension asks which one; take the first, as pressing Enter does.
    const picker = page.locator(`.quick-input-widget:has(input[placeholder="${config.examplePicker}"])`);
    await until("the example output in the output panel", async () => {
      if (await picker.isVisible()) {
        out.examples = await picker.locator(".monaco-list-row").allInnerTexts();
        await page.keyboard.press("Enter");
        await picker.waitFor({ state: "hidden" });
      }
      return (await outputLines()).some((line) => line.includes(config.outputMarker));
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
    out.output = (await outputLines()).join("\n");
    const select = page.locator(`${PANEL} select.monaco-select-box`).first();
    out.channel = await select.evaluate((element) => element.options[element.selectedIndex]?.text);
    await page.waitForTimeout(500);
    await shot(page, "5-run-example");
  });
}

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
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("console", (message) => {
    if (["error", "warning"].includes(message.type()) && out.console.length < 200) {
      out.console.push(`${message.type()}: ${message.text().slice(0, 500)}`);
    }
  });
  try {
    await main(page);
    out.ok = true;
  } catch (error) {
    out.error = String(error?.message ?? error);
    await shot(page, "failure").catch(() => {});
  }
} finally {
  writeFileSync(config.result, JSON.stringify(out, null, 2));
  await browser.close();
}
process.exit(out.ok ? 0 : 1);
