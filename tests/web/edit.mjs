// The page's edit flow in a real browser (Debian's chromium, headless, driven by playwright-core),
// against a `hiera serve --allow-edits` over HTTPS with client certificates (tests/serve/certs):
// an admin previews an edit (the diff, the nodes that change, hiera check's new findings: none, then
// an interpolation error) and saves it
// (the served data shows it at once, only that line of the file changed, the audit log has it);
// two admins editing the same file, the second gets a conflict and can reload; an edit the editor
// refuses says why; a node's certificate sees no Edit control and gets 403 from the API.
// Screenshots go to the artifacts folder. Run by tests/web/run.sh. Prints "web edit: N passed, N failed".
//
// usage: node edit.mjs URL ARTIFACTS_DIR CERTS_DIR TREE AUDIT_LOG
import { checker, launch } from "./browser.mjs";
import fs from "node:fs";
import path from "node:path";

const [url, artifacts, certs, tree, auditLog] = process.argv.slice(2);
fs.mkdirSync(artifacts, { recursive: true });
const t = checker();
const check = t.check;

const browser = await launch();
const origin = new URL(url).origin;
const errors = [];

async function as(who, viewport) {
  const context = await browser.newContext({
    viewport: viewport || { width: 1280, height: 1000 },
    ignoreHTTPSErrors: true,
    clientCertificates: [{ origin, certPath: path.join(certs, who + ".pem"), keyPath: path.join(certs, who + ".key") }],
  });
  const page = await context.newPage();
  page.on("pageerror", (e) => errors.push(who + ": " + String(e)));
  page.on("console", (m) => { if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(who + ": " + m.text()); });
  return page;
}

const env = path.join(tree, "environments", "production", "data");
const read = (rel) => fs.readFileSync(path.join(env, rel), "utf8");

// the editor of a key, open: the node's data, the key's details, Edit
async function openEditor(page, key) {
  await page.goto(url + "/#node=node1.example.com");
  await page.waitForSelector(`tr.row[data-key="${key}"]`);
  await page.click(`tr.row[data-key="${key}"]`);
  await page.waitForSelector("tr.details button.edit");
  await page.click("tr.details button.edit");
  await page.waitForSelector(".editor .level-choice");
}

async function apiAs(page, method, p, body) {
  return page.evaluate(async ([m, p2, b]) => {
    const r = await fetch(p2, { method: m, headers: { "Content-Type": "application/json" }, body: b ? JSON.stringify(b) : undefined });
    let j = null;
    try { j = await r.json(); } catch (e) { j = null; }
    return { status: r.status, body: j };
  }, [method, p, body]);
}

try {
  // ---- an admin: preview, then save
  const admin = await as("admin");
  await openEditor(admin, "profile::port");
  const levels = await admin.$$eval(".editor .level-choice", (ls) => ls.map((l) => l.textContent));
  check(levels.some((l) => l.includes("Roles") && l.includes("role/web.yaml") && l.includes("= 8080")) &&
        levels.some((l) => l.includes("Common") && l.includes("common.yaml") && l.includes("= 80")) &&
        levels.some((l) => l.includes("Nodes") && l.includes("node1.example.com.yaml") && l.includes("not set")),
        "the levels of the key:\n" + levels.join("\n"));
  const chosen = await admin.$eval('.editor input[name="edit-level"]:checked', (r) => r.parentElement.textContent);
  check(chosen.includes("Roles"), "the level the answer comes from is chosen: " + chosen);
  check((await admin.inputValue("#edit-value")) === "8080", "the value field holds the level's value");
  await admin.fill("#edit-value", "8081");
  await admin.click(".editor button.preview");
  await admin.waitForSelector(".edit-result pre.diff");
  const diff = await admin.textContent(".edit-result pre.diff");
  check(diff.includes("-profile::port: 8080") && diff.includes("+profile::port: 8081"), "the preview's diff:\n" + diff);
  const impact = await admin.textContent(".edit-result");
  check(/The nodes: 3 of \d+ change/.test(impact) && impact.includes("node1.example.com") && impact.includes("node3.example.com"),
        "the preview's nodes:\n" + impact);
  check(read("role/web.yaml").includes("profile::port: 8080"), "a preview wrote the file");
  check(impact.includes("hiera check finds nothing new in the file.") && !(await admin.$(".edit-result ul.findings")),
        "a preview without new findings says so:\n" + impact);
  await admin.screenshot({ path: path.join(artifacts, "edit-preview.png"), fullPage: true });
  const before = read("role/web.yaml");
  await admin.click(".editor button.save");
  await admin.waitForSelector(".edit-result .saved");
  const after = read("role/web.yaml");
  check(after === before.replace("profile::port: 8080", "profile::port: 8081"), "the saved file:\n" + after);
  await admin.waitForFunction(() => {
    const v = document.querySelector('tr.row[data-key="profile::port"] .value');
    return v && v.textContent === "8081";
  }, null, { timeout: 10000 });
  check(true, "the page shows the saved value");
  const served = await apiAs(admin, "GET", "/v1/lookup?node=node3.example.com&key=profile::port");
  check(served.body && served.body.value === 8081, "the served snapshot has the change at once: " + JSON.stringify(served));
  await admin.screenshot({ path: path.join(artifacts, "edit-saved.png"), fullPage: true });
  const audit = fs.readFileSync(auditLog, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  check(audit.length === 1 && audit[0].who === "admin.example.com" && audit[0].key === "profile::port" && audit[0].old === 8080 &&
        audit[0].new === 8081 && audit[0].before.startsWith("sha256:") && audit[0].file.endsWith("role/web.yaml"),
        "the audit log: " + JSON.stringify(audit));

  // ---- two editors of one file: the second save is a conflict, then a reload lets it through
  const other = await as("admin");
  await openEditor(admin, "profile::motd");
  await openEditor(other, "profile::motd");
  await admin.fill("#edit-value", "first editor");
  await other.fill("#edit-value", "second editor");
  await admin.click(".editor button.save");
  await admin.waitForSelector(".edit-result .saved");
  await other.click(".editor button.save");
  await other.waitForSelector(".edit-result .conflict");
  const conflict = await other.textContent(".edit-result");
  check(conflict.includes("Conflict") && conflict.includes("changed since"), "the second editor's conflict: " + conflict);
  check(read("common.yaml").includes('profile::motd: "first editor"') && !read("common.yaml").includes("second editor"),
        "the first save kept, the second not written:\n" + read("common.yaml"));
  await other.screenshot({ path: path.join(artifacts, "edit-conflict.png"), fullPage: true });
  await other.click(".edit-result button");
  await other.waitForSelector(".editor .level-choice");
  const held = await other.$eval('.editor input[name="edit-level"]:checked', (r) => r.parentElement.textContent);
  check(held.includes("first editor"), "the reloaded editor shows the first save: " + held);
  await other.fill("#edit-value", "second editor");
  await other.click(".editor button.save");
  await other.waitForSelector(".edit-result .saved");
  check(read("common.yaml").includes('profile::motd: "second editor"'), "the second save after a reload");

  // ---- an edit the editor refuses says where and why
  await openEditor(admin, "profile::dup");
  await admin.fill("#edit-value", "3");
  const dupBefore = read("common.yaml");
  await admin.click(".editor button.save");
  await admin.waitForSelector(".edit-result .refused");
  const refusal = await admin.textContent(".edit-result .refused");
  check(refusal.includes("defined twice") && /common\.yaml:\d+/.test(refusal), "the refusal: " + refusal);
  check(read("common.yaml") === dupBefore, "a refused edit wrote the file");
  await admin.screenshot({ path: path.join(artifacts, "edit-refused.png"), fullPage: true });

  // ---- a preview whose value brings a finding (an interpolation without its closing brace):
  // "New findings of hiera check" lists it, with its rule and line; the file stays as it is
  await openEditor(admin, "profile::motd");
  await admin.fill("#edit-value", '"hello %{facts.os"');
  const motdBefore = read("common.yaml");
  await admin.click(".editor button.preview");
  await admin.waitForSelector(".edit-result pre.diff");
  const heads = await admin.$$eval(".edit-result h3", (hs) => hs.map((h) => h.textContent));
  const found = await admin.$$eval(".edit-result ul.findings li", (ls) => ls.map((l) => ({ cls: l.className, text: l.textContent })));
  const motdLine = motdBefore.split("\n").findIndex((l) => l.startsWith("profile::motd:")) + 1;
  check(heads.includes("New findings of hiera check") && found.length === 1 &&
        found[0].text.includes("[interpolation-syntax]") && found[0].text.includes("without a closing '}'") &&
        found[0].text.startsWith(found[0].cls + " line " + motdLine + ":") && ["warning", "error"].includes(found[0].cls),
        "the preview's new findings:\n" + heads.join("\n") + "\n" + JSON.stringify(found));
  check(read("common.yaml") === motdBefore, "a preview with findings wrote the file");
  await admin.screenshot({ path: path.join(artifacts, "edit-findings.png"), fullPage: true });

  // ---- a node's certificate: no Edit control, 403 from the API
  const node = await as("node1");
  await node.goto(url + "/#node=node1.example.com");
  await node.waitForSelector('tr.row[data-key="profile::port"]');
  await node.click('tr.row[data-key="profile::port"]');
  await node.waitForSelector("tr.details .prov");
  check((await node.$("button.edit")) === null, "a node's certificate sees an Edit button");
  const probe = await apiAs(node, "GET", "/v1/edit");
  check(probe.status === 200 && probe.body.edits === false, "the probe for a node: " + JSON.stringify(probe));
  const denied = await apiAs(node, "POST", "/v1/edit", { node: "node1.example.com", level: "Common", key: "profile::port",
                                                          value: 1, base: "" });
  check(denied.status === 403, "a node's edit: " + JSON.stringify(denied));
  const deniedGet = await apiAs(node, "GET", "/v1/edit?node=node1.example.com&key=profile::port");
  check(deniedGet.status === 403, "a node's look at the levels: " + JSON.stringify(deniedGet));
  await node.screenshot({ path: path.join(artifacts, "edit-nonadmin.png"), fullPage: true });

  // ---- the editor on a phone's screen
  const phone = await as("admin", { width: 375, height: 740 });
  await openEditor(phone, "profile::port");
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `the editor is ${overflow}px wider than a phone's screen`);
  await phone.screenshot({ path: path.join(artifacts, "edit-phone.png"), fullPage: true });

  check(errors.length === 0, "errors in the page: " + errors.join("; "));
} catch (e) {
  check(false, String(e && e.stack || e));
} finally {
  await browser.close();
}
t.done("web edit");
