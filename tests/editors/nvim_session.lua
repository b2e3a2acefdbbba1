-- Drives torchls from Neovim's built-in LSP client (0.7+: vim.lsp.start_client), the way a user's config does.
-- Run headless by tests/editors/test_neovim.py; every step's outcome goes to a JSON file the test reads.
-- Everything runs inside pcall and the script always quits: an error at the top level would hang Neovim.
local out = { steps = {} }

local function write_result()
  local file = io.open(os.getenv("TORCHLS_NVIM_RESULT"), "w")
  file:write(vim.fn.json_encode(out))
  file:close()
end

local function step(name, fn)
  local ok, value = pcall(fn)
  out.steps[#out.steps + 1] = { name = name, ok = ok, error = ok and vim.NIL or tostring(value) }
  if not ok then
    error("step failed: " .. name .. ": " .. tostring(value))
  end
  return value
end

local function find_line(bufnr, needle)
  for index, text in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    local column = text:find(needle, 1, true)
    if column then
      return index, column - 1, text -- 1-based line, 0-based byte column
    end
  end
  error("not in the buffer: " .. needle)
end

local function request(bufnr, method, params)
  local responses, err = vim.lsp.buf_request_sync(bufnr, method, params, 60000)
  if not responses then
    error(method .. " failed: " .. tostring(err))
  end
  for _, response in pairs(responses) do
    if response.error then
      error(method .. " error: " .. vim.inspect(response.error))
    end
    return response.result
  end
end

-- The first code action that `wanted` accepts, or nil.
local function first_action(actions, wanted)
  for _, action in ipairs(actions or {}) do
    if wanted(action) then
      return action
    end
  end
end

local ok, err = pcall(function()
  local sample = os.getenv("TORCHLS_NVIM_SAMPLE")
  vim.cmd("edit " .. vim.fn.fnameescape(sample))
  local bufnr = vim.api.nvim_get_current_buf()

  local client_id = step("start", function()
    local id = vim.lsp.start_client({
      name = "torchls",
      cmd = { os.getenv("TORCHLS_PYTHON"), "-m", "torchls", "serve" },
      root_dir = vim.fn.fnamemodify(sample, ":p:h"),
      init_options = { runExample = { device = "cpu" } },
    })
    assert(id, "start_client returned nil")
    vim.lsp.buf_attach_client(bufnr, id)
    return id
  end)

  step("attach", function()
    local ready = vim.wait(60000, function()
      local client = vim.lsp.get_client_by_id(client_id)
      return client ~= nil and client.initialized == true
    end, 50)
    assert(ready, "the client did not finish initialize within 60 s")
  end)

  step("hover", function()
    local line, column = find_line(bufnr, "nn.CrossEntropyLoss")
    vim.api.nvim_win_set_cursor(0, { line, column + #"nn.Cross" })
    local params = vim.lsp.util.make_position_params()
    out.hover_position = params.position
    local result = request(bufnr, "textDocument/hover", params)
    out.hover = result and result.contents and (result.contents.value or result.contents) or vim.NIL
  end)

  step("diagnostics", function()
    local published = vim.wait(60000, function()
      return #vim.diagnostic.get(bufnr) > 0
    end, 50)
    assert(published, "no diagnostics within 60 s")
    out.diagnostics = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      out.diagnostics[#out.diagnostics + 1] = {
        lnum = d.lnum, col = d.col, end_col = d.end_col, code = d.code, source = d.source, message = d.message,
      }
    end
  end)

  step("quickfix", function()
    local diagnostic = vim.diagnostic.get(bufnr)[1]
    -- Back to LSP form (UTF-16 range, data with the fix), as vim.lsp.buf.code_action() sends them.
    local line_diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr, diagnostic.lnum)
    local actions = request(bufnr, "textDocument/codeAction", {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) },
      range = line_diagnostics[1].range,
      context = { diagnostics = line_diagnostics },
    })
    local fix = first_action(actions, function(action) return action.kind == "quickfix" and action.edit end)
    assert(fix, "no quick fix offered: " .. vim.inspect(actions))
    out.fix_title = fix.title
    vim.lsp.util.apply_workspace_edit(fix.edit, "utf-16")
    out.fixed_line = vim.api.nvim_buf_get_lines(bufnr, diagnostic.lnum, diagnostic.lnum + 1, false)[1]
  end)

  step("run example", function()
    local line, column, text = find_line(bufnr, "nn.CrossEntropyLoss")
    local _, utf16 = vim.str_utfindex(text, column + #"nn.Cross")
    local position = { line = line - 1, character = utf16 }
    local actions = request(bufnr, "textDocument/codeAction", {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) },
      range = { start = position, ["end"] = position },
      context = { diagnostics = {} },
    })
    local run = first_action(actions, function(action) return action.kind == "torchls.runExample" end)
    assert(run, "no run-example action: " .. vim.inspect(actions))
    out.run_title = run.title
    local result = request(bufnr, "workspace/executeCommand", run.command)
    out.run_status, out.run_summary, out.run_stdout = result.status, result.summary, result.stdout
  end)

  step("full card", function()
    -- The code action "查看完整卡片" runs torchls.showCard; without window/showDocument (Neovim 0.7 and 0.8) the
    -- card comes back as Markdown, and this puts it in a new buffer as the README's keymap does.
    local line, column, text = find_line(bufnr, "nn.CrossEntropyLoss")
    local _, utf16 = vim.str_utfindex(text, column + #"nn.Cross")
    local position = { line = line - 1, character = utf16 }
    local actions = request(bufnr, "textDocument/codeAction", {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) },
      range = { start = position, ["end"] = position },
      context = { diagnostics = {}, only = { "torchls.showCard" } },
    })
    local card = first_action(actions, function(action) return action.kind == "torchls.showCard" end)
    assert(card, "no full-card action: " .. vim.inspect(actions))
    out.card_title = card.title
    local result = request(bufnr, "workspace/executeCommand", card.command)
    out.card_shown, out.card_uri = result.shown, result.uri
    vim.cmd("new")
    vim.bo.buftype, vim.bo.filetype = "nofile", "markdown"
    vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(result.markdown, "\n"))
    out.card_lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    vim.cmd("close")
  end)

  vim.lsp.stop_client(client_id)
  vim.wait(5000, function()
    return vim.lsp.get_client_by_id(client_id) == nil
  end, 50)
end)

out.ok = ok
out.error = ok and vim.NIL or tostring(err)
pcall(write_result)
vim.cmd("qa!")
