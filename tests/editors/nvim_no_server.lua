-- The README's config when `torchls` is not on PATH: opening two Python files must give one clear message, no Lua
-- error and no client. Run headless by tests/editors/test_neovim.py after it sourced the snippet; writes JSON.
local out = {}
local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("TORCHLS_NVIM_SAMPLE")))
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("TORCHLS_NVIM_SECOND")))
  vim.wait(1000) -- a spawn error would arrive asynchronously
  local all = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  out.clients = #all
  out.messages = vim.fn.execute("messages")
  out.errmsg = vim.v.errmsg
end)
out.ok = ok
out.error = ok and vim.NIL or tostring(err)
local file = io.open(os.getenv("TORCHLS_NVIM_RESULT"), "w")
file:write(vim.fn.json_encode(out))
file:close()
vim.cmd("qa!")
