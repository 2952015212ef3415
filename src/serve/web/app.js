// The page of `hiera serve`: pick an environment and a node, see every key it can see with its
// value and where it came from, its hierarchy, an explanation on demand, and a second node side by
// side. Plain JavaScript, no library, no network resource but the server's own API (/v1, see the
// README). The state lives in the address (#env=...&node=...&tab=...&other=...) so a view can be
// shared and the back button works. Admins of a server started with --allow-edits get an Edit
// button in a key's details: the levels the node reads, a YAML value, a preview (the diff, the nodes
// whose answers change, hiera check's new findings) and Save (POST /v1/edit, from the version of
// the file the editor was opened on: another editor's save in between is a conflict, never lost).
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = { env: "", node: "", other: "", tab: "data", rows: [], selected: -1, data: null, otherData: null, canEdit: false };

function setStatus(text, isError) {
  const s = $("#status");
  s.textContent = text || "";
  s.className = isError ? "error" : "";
}

async function api(path, params) {
  const q = new URLSearchParams(params || {}).toString();
  const res = await fetch(path + (q ? "?" + q : ""), { headers: { Accept: "application/json" } });
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok && res.status !== 404 && res.status !== 422) {
    throw new Error((body && body.error && (body.error.message || body.error)) || res.status + " " + res.statusText);
  }
  return { status: res.status, body };
}

async function post(path, body) {
  const res = await fetch(path, { method: "POST", headers: { Accept: "application/json", "Content-Type": "application/json" },
                                  body: JSON.stringify(body) });
  let answer = null;
  try { answer = await res.json(); } catch (e) { answer = null; }
  return { status: res.status, body: answer };
}

// A value as `hiera lookup --render-as json` prints it, indented.
function show(value) { return JSON.stringify(value, null, 2); }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function where(def) {
  if (!def) return "";
  const file = def.file.split("/").slice(-3).join("/");
  return `${def.layer}${def.module ? " " + def.module : ""} · ${def.level} · ${file}:${def.line}`;
}

// ---------------------------------------------------------------- the address

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  state.env = p.get("env") || state.env;
  state.node = p.get("node") || "";
  state.other = p.get("other") || "";
  state.tab = p.get("tab") || "data";
}

function writeHash() {
  const p = new URLSearchParams();
  if (state.env) p.set("env", state.env);
  if (state.node) p.set("node", state.node);
  if (state.other) p.set("other", state.other);
  if (state.tab !== "data") p.set("tab", state.tab);
  const h = "#" + p.toString();
  if (location.hash !== h) history.pushState(null, "", h);
}

// ---------------------------------------------------------------- environments and nodes

async function loadEnvironments() {
  const { body } = await api("/v1/environments");
  const sel = $("#env");
  sel.textContent = "";
  for (const e of body.environments) sel.append(el("option", { value: e, text: e }));
  if (!state.env) state.env = body.default;
  sel.value = state.env;
}

let searchTimer = null;
function searchNodes(text) {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(async () => {
    try {
      const { body } = await api("/v1/nodes", { q: text, limit: 50 });
      const list = $("#node-list");
      list.textContent = "";
      for (const n of body.nodes) list.append(el("option", { value: n }));
      if (!text) setStatus(`${body.total} nodes`);
    } catch (e) { setStatus(e.message, true); }
  }, 120);
}

// ---------------------------------------------------------------- the data tab

async function loadNode() {
  state.data = null;
  state.rows = [];
  state.selected = -1;
  renderData();
  if (!state.node) return;
  setStatus(`loading ${state.node}…`);
  try {
    const t0 = performance.now();
    const { status, body } = await api("/v1/node", { node: state.node, environment: state.env });
    if (status !== 200) { setStatus(body && body.error ? body.error.message || body.error : "not found", true); return; }
    state.data = body;
    setStatus(`${Object.keys(body.keys).length} keys · ${Math.round(performance.now() - t0)} ms`);
  } catch (e) { setStatus(e.message, true); }
  renderData();
  if (state.tab === "compare") loadCompare();
}

function valueCell(answer) {
  if (!answer) return el("span", { class: "missing", text: "not visible" });
  if (answer.error) return el("span", { class: "value error-text", text: answer.error.message });
  if (!answer.found) return el("span", { class: "missing", text: "not found" });
  return el("span", { class: "value", text: show(answer.value) });
}

function renderData() {
  const tbody = $("#keys tbody");
  tbody.textContent = "";
  $("#data-empty").hidden = !!state.data;
  if (!state.data) { $("#count").textContent = ""; return; }
  const f = $("#filter").value.trim().toLowerCase();
  state.rows = Object.keys(state.data.keys).filter((k) => !f || k.toLowerCase().includes(f));
  state.rows.forEach((k, i) => {
    const a = state.data.keys[k];
    const tr = el("tr", { class: "row", tabindex: "0", "data-key": k, onclick: () => select(i, true) },
      el("td", { class: "key", text: k }),
      el("td", {}, valueCell(a)),
      el("td", { class: "from", text: where(a.definitions[0]) + (a.definitions.length > 1 ? ` (+${a.definitions.length - 1})` : "") }));
    tbody.append(tr);
  });
  $("#count").textContent = `${state.rows.length} of ${Object.keys(state.data.keys).length} keys`;
}

function rowOf(i) { return $("#keys tbody").querySelectorAll("tr.row")[i]; }

function select(i, toggle) {
  if (i < 0 || i >= state.rows.length) return;
  const prev = rowOf(state.selected);
  if (prev) prev.classList.remove("selected");
  const open = document.querySelector("#keys tr.details");
  const wasOpen = open && open.dataset.key === state.rows[i];
  if (open) open.remove();
  state.selected = i;
  const tr = rowOf(i);
  tr.classList.add("selected");
  tr.focus();
  if (toggle && !wasOpen) details(state.rows[i], tr, false);
}

// Provenance as lines: each piece of the value with the file and line it came from.
function provLines(node, indent, label, out) {
  const pad = "  ".repeat(indent);
  const p = node || {};
  const src = p.merged ? "merged" : p.file ? `${p.layer} · ${p.level} · ${p.file}:${p.line}` : "";
  if (p.entries) {
    out.push([pad + label + (label ? ":" : "{"), src]);
    for (const [k, v] of Object.entries(p.entries)) provLines(v, indent + 1, JSON.stringify(k), out);
  } else if (p.elements) {
    out.push([pad + label + (label ? ":" : "["), src]);
    p.elements.forEach((v, i) => provLines(v, indent + 1, "- " + i, out));
  } else {
    out.push([pad + (label ? label + ": " : "") + JSON.stringify(p.value), src]);
  }
}

async function details(key, tr, explain) {
  const cell = el("td", { colspan: "3" });
  const row = el("tr", { class: "details", "data-key": key }, cell);
  tr.after(row);
  const a = state.data.keys[key];
  cell.append(el("h3", { text: "Defined in (lookup order)" }),
    el("ul", {}, ...a.definitions.map((d) => el("li", { text: where(d) }))));
  try {
    const { body } = await api("/v1/lookup", { node: state.node, environment: state.env, key, provenance: 1, explain: explain ? 1 : 0 });
    if (body.provenance) {
      const lines = [];
      provLines(body.provenance, 0, "", lines);
      const pre = el("div", { class: "prov" });
      for (const [text, src] of lines) pre.append(el("div", {}, text, " ", el("span", { class: "src", text: src ? "# " + src : "" })));
      cell.append(el("h3", { text: "Where each part came from" }), pre);
    }
    if (explain) cell.append(el("h3", { text: "Explanation" }), el("pre", { text: body.explanation || "" }));
    else cell.append(el("button", { type: "button", text: "Explain (e)", onclick: () => { row.remove(); details(key, tr, true); } }));
    if (state.canEdit) {
      const edit = el("button", { type: "button", class: "edit", text: "Edit",
                                  onclick: (ev) => { ev.target.remove(); editor(key, cell); } });
      cell.append(" ", edit);
      // just saved: the editor again, with what was saved
      if (state.saved && state.saved.key === key) { const s = state.saved; state.saved = null; edit.remove(); editor(key, cell, s.res); }
    }
  } catch (e) { cell.append(el("p", { class: "error-text", text: e.message })); }
}

// ---------------------------------------------------------------- editing (admins, --allow-edits)

// The editor of a key: the levels the node reads (the file each resolves to, existing or not, and
// the value it holds there), a YAML value, Preview and Save.
async function editor(key, cell, saved) {
  const box = el("div", { class: "editor", "data-key": key });
  cell.append(box);
  const { status, body } = await api("/v1/edit", { node: state.node, environment: state.env, key });
  if (status !== 200) { box.append(el("p", { class: "error-text", text: (body && body.error) || "cannot edit" })); return; }
  const levels = body.levels;
  const answer = state.data.keys[key];
  const from = answer && answer.definitions[0];
  let pick = levels.findIndex((l) => l.editable && from && l.level === from.level && l.layer === from.layer);
  if (pick < 0) pick = levels.findIndex((l) => l.editable);
  const list = el("fieldset", { class: "levels" }, el("legend", { text: `Edit ${key}: the level to change` }));
  const value = el("textarea", { id: "edit-value", rows: "4", spellcheck: "false", "aria-label": "Value (YAML)" });
  const unset = el("input", { type: "checkbox", id: "edit-unset" });
  const encrypt = el("input", { type: "checkbox", id: "edit-encrypt" });
  const encryptLabel = el("label", { class: "check" }, encrypt, " encrypt (eyaml: the value is plain text)");
  const out = el("div", { class: "edit-result", role: "status" });
  let typed = false;
  value.addEventListener("input", () => { typed = true; });
  const shown = (v) => (typeof v === "string" && !/[\n:#'"{}\[\],&*!|>%@`]/.test(v) && v.trim() === v && v !== "" ? v : JSON.stringify(v));
  const choose = (i) => {
    pick = i;
    const l = levels[i];
    encryptLabel.hidden = !l.eyaml;
    if (!l.eyaml) encrypt.checked = false;
    if (!typed) value.value = l.found && "value" in l ? shown(l.value) : answer && answer.found ? shown(answer.value) : "";
  };
  levels.forEach((l, i) => {
    const where = l.editable ? `${l.path.split("/").slice(-3).join("/")}${l.exists ? "" : " (new file)"}` : l.why;
    const held = !l.editable ? "" : l.encrypted ? "encrypted" : l.found ? JSON.stringify(l.value) : "not set";
    const radio = el("input", { type: "radio", name: "edit-level", value: String(i), disabled: !l.editable, checked: i === pick,
                                onchange: () => choose(i) });
    list.append(el("label", { class: "level-choice" + (l.editable ? "" : " disabled") }, radio,
      el("b", { text: ` ${l.level}` }), ` · ${l.layer}${l.module ? " " + l.module : ""} · `,
      el("span", { class: "path", text: where }), l.editable ? el("span", { class: "held", text: ` = ${held}` }) : null));
  });
  const request = (dry) => {
    const l = levels[pick];
    const r = { environment: state.env, node: state.node, level: l.level, key, dry_run: dry };
    if (l.module) r.module = l.module;
    if (unset.checked) r.unset = true;
    else r.yaml = value.value;
    if (encrypt.checked) r.encrypt = true;
    if (!dry) r.base = l.digest;
    return r;
  };
  const show = (status, res, saved) => {
    out.textContent = "";
    if (status === 409) {
      out.append(el("p", { class: "error-text conflict", text: "Conflict: " + res.error }),
        el("button", { type: "button", text: "Reload the file", onclick: () => { box.remove(); editor(key, cell); } }));
      return;
    }
    if (status === 422 || status === 400 || status === 403 || !res) {
      const e = res && res.error;
      const msg = !e ? `error ${status}` : typeof e === "string" ? e : `${e.file ? e.file + (e.line ? ":" + e.line : "") + ": " : ""}${e.message}`;
      out.append(el("p", { class: "error-text refused", text: (status === 422 ? "Refused: " : "") + msg }));
      return;
    }
    if (saved) out.append(el("p", { class: "saved", text: `Saved ${res.file} (generation ${res.generation}).` }));
    if (!res.changed) out.append(el("p", { text: "The level already holds this value: nothing to write." }));
    if (res.diff) {
      const pre = el("pre", { class: "diff" });
      for (const line of res.diff.split("\n")) {
        const c = line.startsWith("+++") || line.startsWith("---") ? "hdr" : line[0] === "+" ? "add" : line[0] === "-" ? "del" : line[0] === "@" ? "hunk" : "";
        pre.append(el("span", { class: c, text: line + "\n" }));
      }
      out.append(el("h3", { text: "The change" }), pre);
    }
    if (res.impact) {
      const s = res.impact.summary;
      const ul = el("ul", { class: "impact" });
      for (const k of res.impact.keys || [])
        for (const c of k.changes)
          ul.append(el("li", {}, el("code", { text: k.key }), ` ${c.kind.replace("_", " ")} on ${c.count} node${c.count === 1 ? "" : "s"}: `,
            el("span", { class: "nodes", text: c.nodes.slice(0, 5).join(", ") + (c.nodes.length > 5 ? `, … +${c.nodes.length - 5}` : "") })));
      out.append(el("h3", { text: `The nodes: ${s.nodes_changed} of ${s.nodes} change` }), ul);
    } else if (res.impact_note) {
      out.append(el("p", { class: "muted", text: res.impact_note }));
    }
    if (res.findings && res.findings.length) {
      out.append(el("h3", { text: "New findings of hiera check" }),
        el("ul", { class: "findings" }, ...res.findings.map((f) => el("li", { class: f.severity },
          `${f.severity} line ${f.line}: ${f.message} [${f.rule}]`))));
    } else if (res.findings) {
      out.append(el("p", { class: "muted", text: "hiera check finds nothing new in the file." }));
    }
  };
  const go = async (dry, button) => {
    button.disabled = true;
    out.textContent = dry ? "previewing…" : "saving…";
    try {
      const { status, body: res } = await post("/v1/edit", request(dry));
      show(status, res, !dry && status === 200 && res.written);
      if (!dry && status === 200 && res.written) {
        // the node's data again (the server serves the change at once), the editor open on it
        setStatus(`saved ${key} in ${res.file}`);
        state.saved = { key, res };
        await loadNode();
        const i = state.rows.indexOf(key);
        if (i >= 0) select(i, true);
        return;
      }
    } catch (e) { out.textContent = ""; out.append(el("p", { class: "error-text", text: e.message })); }
    button.disabled = false;
  };
  const preview = el("button", { type: "button", class: "preview", text: "Preview", onclick: (e) => go(true, e.target) });
  const save = el("button", { type: "button", class: "save", text: "Save", onclick: (e) => go(false, e.target) });
  box.append(list, el("label", { class: "value-label" }, "Value (YAML)", value),
    el("label", { class: "check" }, unset, " remove the key from this level"), encryptLabel,
    el("div", { class: "actions" }, preview, " ", save, " ",
      el("button", { type: "button", text: "Cancel", onclick: () => box.remove() })), out);
  if (pick >= 0) choose(pick);
  else box.append(el("p", { class: "error-text", text: "No level of this node can be edited here." }));
  if (saved) show(200, saved, true);
  value.focus();
}

// ---------------------------------------------------------------- the hierarchy tab

async function loadHierarchy() {
  const box = $("#hierarchy");
  box.textContent = "";
  $("#hierarchy-empty").hidden = !!state.node;
  if (!state.node) return;
  try {
    const { status, body } = await api("/v1/hierarchy", { node: state.node, environment: state.env });
    if (status !== 200) { setStatus(body.error, true); return; }
    for (const l of body.layers) {
      const div = el("div", { class: "layer" },
        el("h2", { text: l.name || `${l.layer}${l.module ? " " + l.module : ""}` }),
        el("div", { class: "cfg", text: l.config || "(built-in default)" }));
      if (l.error) div.append(el("p", { class: "error-text", text: l.error.message }));
      const levels = (l.levels || []).concat((l.default_levels || []).map((x) => Object.assign({ dflt: true }, x)));
      for (const lv of levels) {
        const d = el("div", { class: "level" }, el("b", { text: lv.name }), ` ${lv.function}${lv.dflt ? " (default_hierarchy)" : ""}`);
        for (const loc of lv.locations) d.append(el("div", { class: "loc " + (loc.exists ? "yes" : "no"), title: loc.original, text: loc.path || loc.uri }));
        div.append(d);
      }
      box.append(div);
    }
  } catch (e) { setStatus(e.message, true); }
}

// ---------------------------------------------------------------- the compare tab

async function loadCompare() {
  const tbody = $("#compare tbody");
  tbody.textContent = "";
  $("#compare-a").textContent = state.node || "Node";
  $("#compare-b").textContent = state.other || "Other node";
  const ready = state.node && state.other;
  $("#compare-empty").hidden = !!ready;
  if (!ready) return;
  try {
    if (!state.data) return;
    if (!state.otherData || state.otherData.node !== state.other || state.otherData.environment !== state.env) {
      const { status, body } = await api("/v1/node", { node: state.other, environment: state.env });
      if (status !== 200) { setStatus(body.error, true); return; }
      state.otherData = body;
    }
    renderCompare();
  } catch (e) { setStatus(e.message, true); }
}

function same(a, b) {
  if (!a || !b) return !a && !b;
  if (!!a.found !== !!b.found || !!a.error !== !!b.error) return false;
  return JSON.stringify(a.value) === JSON.stringify(b.value) && JSON.stringify(a.error) === JSON.stringify(b.error);
}

function renderCompare() {
  const tbody = $("#compare tbody");
  tbody.textContent = "";
  const A = state.data.keys, B = state.otherData.keys;
  const keys = Array.from(new Set(Object.keys(A).concat(Object.keys(B)))).sort();
  const only = $("#only-diff").checked;
  let differing = 0;
  for (const k of keys) {
    const d = !same(A[k], B[k]);
    if (d) differing++;
    if (only && !d) continue;
    tbody.append(el("tr", { class: "row" + (d ? " differs" : "") },
      el("td", { class: "key", text: k }), el("td", {}, valueCell(A[k])), el("td", {}, valueCell(B[k]))));
  }
  $("#compare-count").textContent = `${differing} of ${keys.length} keys differ`;
}

// ---------------------------------------------------------------- tabs, keys, start

function showTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll("#tabs button")) b.setAttribute("aria-selected", b.dataset.tab === tab ? "true" : "false");
  for (const t of ["data", "hierarchy", "compare"]) $("#tab-" + t).hidden = t !== tab;
  writeHash();
  if (tab === "hierarchy") loadHierarchy();
  if (tab === "compare") loadCompare();
}

function apply() {
  $("#env").value = state.env;
  $("#node").value = state.node;
  $("#other").value = state.other;
  showTab(state.tab);
  loadNode();
}

function typing(e) { return e.target.matches("input, select, textarea"); }

document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") {
    const open = document.querySelector("#keys tr.details");
    if (open) open.remove();
    if (typing(e)) e.target.blur();
    return;
  }
  if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) return;
  const k = e.key;
  if (k === "/") { e.preventDefault(); showTab("data"); $("#filter").focus(); }
  else if (k === "n") { e.preventDefault(); $("#node").focus(); }
  else if (k === "c") { e.preventDefault(); $("#other").focus(); }
  else if (k === "1") showTab("data");
  else if (k === "2") showTab("hierarchy");
  else if (k === "3") showTab("compare");
  else if (state.tab === "data" && (k === "j" || k === "ArrowDown")) { e.preventDefault(); select(Math.min(state.selected + 1, state.rows.length - 1)); }
  else if (state.tab === "data" && (k === "k" || k === "ArrowUp")) { e.preventDefault(); select(Math.max(state.selected - 1, 0)); }
  else if (state.tab === "data" && k === "Enter" && state.selected >= 0) { e.preventDefault(); select(state.selected, true); }
  else if (state.tab === "data" && k === "e" && state.selected >= 0) {
    const open = document.querySelector("#keys tr.details");
    if (open) open.remove();
    details(state.rows[state.selected], rowOf(state.selected), true);
  }
});

$("#tabs").addEventListener("click", (e) => { const b = e.target.closest("button"); if (b) showTab(b.dataset.tab); });
$("#env").addEventListener("change", () => { state.env = $("#env").value; writeHash(); apply(); });
$("#node").addEventListener("input", (e) => searchNodes(e.target.value));
$("#other").addEventListener("input", (e) => searchNodes(e.target.value));
$("#node").addEventListener("change", (e) => { state.node = e.target.value.trim(); writeHash(); loadNode(); });
$("#other").addEventListener("change", (e) => { state.other = e.target.value.trim(); state.otherData = null; showTab("compare"); });
$("#node").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.target.blur(); e.target.dispatchEvent(new Event("change")); } });
$("#other").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.target.blur(); e.target.dispatchEvent(new Event("change")); } });
$("#filter").addEventListener("input", renderData);
$("#filter").addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === "ArrowDown") { e.preventDefault(); e.target.blur(); select(0); } });
$("#only-diff").addEventListener("change", () => state.otherData && renderCompare());
$("#home").addEventListener("click", (e) => { e.preventDefault(); state.node = state.other = ""; state.tab = "data"; writeHash(); apply(); });
window.addEventListener("popstate", () => { readHash(); apply(); });

(async function start() {
  readHash();
  try {
    // an admin of a server that allows edits gets the Edit buttons (anybody else none: the API
    // answers them 403)
    const probe = await api("/v1/edit");
    state.canEdit = probe.status === 200 && probe.body && probe.body.edits === true;
    await loadEnvironments();
    searchNodes("");
  } catch (e) { setStatus(e.message, true); }
  apply();
})();
