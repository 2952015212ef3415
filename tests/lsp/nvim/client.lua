-- Neovim's own LSP client (0.7) driving hiera lsp, headless: reads the plan tests/lsp/nvim/run.py
-- wrote ($HIERA_LSP_PLAN), opens the data file, waits for the diagnostics, asks hover, definition
-- and completion where the plan says, and writes what Neovim received ($HIERA_LSP_OUT) as JSON.
local plan = vim.fn.json_decode(table.concat(vim.fn.readfile(os.getenv("HIERA_LSP_PLAN")), "\n"))
local out = { diagnostics = nil, errors = {} }

local function finish()
  vim.fn.writefile({ vim.fn.json_encode(out) }, os.getenv("HIERA_LSP_OUT"))
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  local published = false
  local published_version = nil
  local client_id = vim.lsp.start_client({
    name = "hiera",
    cmd = { plan.hiera, "lsp" },
    root_dir = plan.root,
    init_options = plan.settings,
    handlers = {
      ["textDocument/publishDiagnostics"] = function(e, result, ctx, config)
        vim.lsp.diagnostic.on_publish_diagnostics(e, result, ctx, config)
        published = true
        published_version = result.version
      end,
    },
  })
  vim.cmd("edit " .. vim.fn.fnameescape(plan.file))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(bufnr, client_id)
  if not vim.wait(60000, function() return published end, 50) then
    table.insert(out.errors, "no diagnostics within 60 s")
  end
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(out.diagnostics, { line = d.lnum, col = d.col, code = d.code, message = d.message, severity = d.severity })
  end
  local client = vim.lsp.get_client_by_id(client_id)
  local function ask(method, line, character, extra)
    local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = line, character = character } }
    for k, v in pairs(extra or {}) do params[k] = v end
    local r, e = client.request_sync(method, params, 30000, bufnr)
    if not r then
      table.insert(out.errors, method .. ": " .. tostring(e))
      return nil
    end
    if r.err then
      table.insert(out.errors, method .. ": " .. vim.inspect(r.err))
    end
    return r.result
  end
  out.hover = ask("textDocument/hover", plan.key_line, plan.key_col)
  out.definition = ask("textDocument/definition", plan.key_line, plan.key_col)
  out.lookup_definition = plan.lookup_line and ask("textDocument/definition", plan.lookup_line, plan.lookup_col) or vim.NIL
  -- completion: a new line typed at the end of the buffer
  local last = vim.api.nvim_buf_line_count(bufnr)
  vim.api.nvim_buf_set_lines(bufnr, last, last, false, { plan.complete_prefix })
  out.completion = ask("textDocument/completion", last, #plan.complete_prefix)
  -- the edit is unsaved: the diagnostics of the changed text come back for the new version
  vim.api.nvim_buf_set_lines(bufnr, last, last + 1, false, { plan.trap_line })
  -- (the diagnostics of this version of the buffer, not of an earlier one)
  if vim.wait(60000, function() return published_version == vim.lsp.util.buf_versions[bufnr] end, 50) then
    out.diagnostics_after_edit = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      table.insert(out.diagnostics_after_edit, { line = d.lnum, code = d.code })
    end
  else
    table.insert(out.errors, "no diagnostics after the edit")
  end
  vim.lsp.stop_client(client_id)
  vim.wait(5000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 50)
end)
if not ok then
  table.insert(out.errors, tostring(err))
end
finish()
