-- Drives torchls from Neovim's built-in LSP client through the README's config, the way a user's init.lua does.
-- Run headless by tests/editors/test_neovim.py after it sourced the README snippet for this Neovim version (the
-- snippet, not this script, starts and attaches the server); every step's outcome goes to a JSON file the test reads.
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

-- The ids of the LSP clients attached to a buffer (vim.lsp.get_clients is 0.10+, buf_get_clients 0.7-0.9).
local function client_ids(bufnr)
  local ids = {}
  if vim.lsp.get_clients then
    for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
      ids[#ids + 1] = client.id
    end
  else
    for id in pairs(vim.lsp.buf_get_clients(bufnr)) do
      ids[#ids + 1] = id
    end
  end
  table.sort(ids)
  return ids
end

-- Every running client named torchls: the README's config must start one per project, not one per file.
local function torchls_clients()
  local all = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  local ids = {}
  for _, client in ipairs(all) do
    if client.name == "torchls" then
      ids[#ids + 1] = client.id
    end
  end
  return ids
end

-- What `K` and `omnifunc` are in a buffer, as the user would see them.
local function buffer_settings(bufnr)
  local map = vim.api.nvim_buf_call(bufnr, function()
    return vim.fn.maparg("K", "n", false, true)
  end)
  return {
    k_buffer = map.buffer or 0,
    k_callback = map.callback ~= nil,
    k_desc = map.desc or vim.NIL,
    omnifunc = vim.bo[bufnr].omnifunc,
  }
end

-- The text of the first floating window (the hover `K` opens), or nil.
local function floating_text()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
      return table.concat(lines, "\n"), win
    end
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

  local client_id = step("attach", function()
    local id
    local ready = vim.wait(60000, function()
      id = client_ids(bufnr)[1]
      local client = id and vim.lsp.get_client_by_id(id)
      return client ~= nil and client.initialized == true
    end, 50)
    assert(ready, "the README config attached no initialized client within 60 s")
    return id
  end)
  -- Press `keys` (the README's keymaps, leader "\\") on nn.CrossEntropyLoss and return the lines of the window they
  -- open, or of the current one once `shown_here` says it switched to the result; back to the sample afterwards.
  local function press_on_symbol(keys, shown_here)
    vim.cmd("buffer " .. bufnr)
    local line, column = find_line(bufnr, "nn.CrossEntropyLoss")
    vim.api.nvim_win_set_cursor(0, { line, column + #"nn.Cross" })
    local before = {}
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      before[win] = true
    end
    vim.cmd("normal " .. keys)
    local lines, opened
    local done = vim.wait(60000, function()
      for _, win in ipairs(vim.api.nvim_list_wins()) do
        if not before[win] then
          opened = win
          lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
          return true
        end
      end
      if shown_here and shown_here() then
        lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
        return true
      end
      return false
    end, 50)
    assert(done, keys .. " opened nothing within 60 s")
    if opened then
      vim.api.nvim_win_close(opened, true)
    end
    vim.cmd("buffer " .. bufnr)
    return lines
  end

  -- UTF-16 on 0.7-0.10; 0.11+ offers UTF-8 first and torchls takes it.
  local encoding = vim.lsp.get_client_by_id(client_id).offset_encoding
  out.offset_encoding = encoding

  -- The LSP position of a byte column on a 1-based line, in the negotiated encoding.
  local function lsp_position(line, column)
    return { line = line - 1, character = vim.lsp.util.character_offset(bufnr, line - 1, column, encoding) }
  end

  step("second file", function()
    -- Another file of the same project, in a subfolder: the config must reuse the client, not start a second one.
    vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("TORCHLS_NVIM_SECOND")))
    local second = vim.api.nvim_get_current_buf()
    vim.wait(10000, function()
      return #client_ids(second) > 0
    end, 50)
    out.second_clients = client_ids(second)
    out.second_settings = buffer_settings(second)
    vim.cmd("buffer " .. bufnr)
    out.first_clients = client_ids(bufnr)
    out.first_settings = buffer_settings(bufnr)
    out.torchls_clients = torchls_clients()
    out.root_dir = vim.lsp.get_client_by_id(client_id).config.root_dir
  end)

  step("K", function()
    -- `K` as a user presses it: the float must hold the Chinese card, not pydoc's output.
    local line, column = find_line(bufnr, "nn.CrossEntropyLoss")
    vim.api.nvim_win_set_cursor(0, { line, column + #"nn.Cross" })
    vim.cmd("normal K")
    local text, win
    vim.wait(60000, function()
      text, win = floating_text()
      return text ~= nil
    end, 50)
    out.k_hover = text or vim.NIL
    if win then
      vim.api.nvim_win_close(win, true)
    end
  end)

  step("hover", function()
    local line, column = find_line(bufnr, "nn.CrossEntropyLoss")
    vim.api.nvim_win_set_cursor(0, { line, column + #"nn.Cross" })
    local params = vim.lsp.util.make_position_params(0, encoding)
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
    -- Back to LSP form (range in the negotiated encoding, data with the fix), as vim.lsp.buf.code_action() sends
    -- them: 0.10+ keeps the server's diagnostic in user_data.lsp (get_line_diagnostics is deprecated there).
    local line_diagnostics = {}
    if vim.fn.has("nvim-0.10") == 1 then
      for _, d in ipairs(vim.diagnostic.get(bufnr, { lnum = diagnostic.lnum })) do
        line_diagnostics[#line_diagnostics + 1] = d.user_data.lsp
      end
    else
      line_diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr, diagnostic.lnum)
    end
    local actions = request(bufnr, "textDocument/codeAction", {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) },
      range = line_diagnostics[1].range,
      context = { diagnostics = line_diagnostics },
    })
    local fix = first_action(actions, function(action) return action.kind == "quickfix" and action.edit end)
    assert(fix, "no quick fix offered: " .. vim.inspect(actions))
    out.fix_title = fix.title
    vim.lsp.util.apply_workspace_edit(fix.edit, encoding)
    out.fixed_line = vim.api.nvim_buf_get_lines(bufnr, diagnostic.lnum, diagnostic.lnum + 1, false)[1]
  end)

  step("run example", function()
    local line, column = find_line(bufnr, "nn.CrossEntropyLoss")
    local position = lsp_position(line, column + #"nn.Cross")
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
    -- The code action "查看完整卡片" runs torchls.showCard; the card also comes back as Markdown (the only way on
    -- Neovim 0.7 and 0.8, which have no window/showDocument), and this puts it in a new buffer as the README's
    -- keymap does.
    local line, column = find_line(bufnr, "nn.CrossEntropyLoss")
    local position = lsp_position(line, column + #"nn.Cross")
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

  step("<leader>tc", function()
    -- The README's keymap, pressed: a new buffer with the Markdown card, or (0.9+, window/showDocument) the card's
    -- file opened in the current window.
    out.keymap_card = press_on_symbol("\\tc", function()
      return vim.api.nvim_buf_get_name(0):match("%.md$") ~= nil
    end)[1]
  end)

  step("<leader>te", function()
    out.keymap_run = table.concat(press_on_symbol("\\te"), "\n")
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
