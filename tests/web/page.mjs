// The page of `hiera serve` in a real browser: Debian's chromium, headless, driven by
// playwright-core. Run by tests/web/run.sh, which starts the server on a test tree and passes
// its address. Every step is checked against what the server's API (and so hiera lookup) says;
// screenshots go to the artifacts folder. Prints "web: N passed, N failed".
//
// usage: node page.mjs URL ARTIFACTS_DIR
import { checker, launch } from "./browser.mjs";
import fs from "node:fs";
import path from "node:path";

const [url, artifacts] = process.argv.slice(2);
fs.mkdirSync(artifacts, { recursive: true });
const t = checker();
const check = t.check;

const browser = await launch();
const origin = new URL(url).origin;
const foreign = [];
const errors = [];
const failures = []; // responses of 400 and more, but the unknown node's 404 asked for on purpose

async function newPage(viewport) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.on("request", (r) => { if (!r.url().startsWith(origin)) foreign.push(r.url()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text()); });
  page.on("response", (r) => { if (r.status() >= 400 && !r.url().includes("node=nobody.example.com")) failures.push(r.status() + " " + r.url()); });
  return page;
}

async function api(p) { return (await fetch(origin + p)).json(); }

try {
  const page = await newPage({ width: 1280, height: 900 });
  const t0 = Date.now();
  await page.goto(url + "/#node=node1.example.com");
  await page.waitForSelector("#keys tbody tr.row");
  check(Date.now() - t0 < 5000, "the node's data took more than 5 s to show");
  const node = await api("/v1/node?node=node1.example.com");
  const rows = await page.$$eval("#keys tbody tr.row", (trs) => trs.map((tr) => tr.dataset.key));
  check(JSON.stringify(rows) === JSON.stringify(Object.keys(node.keys)), `rows ${rows} != keys of /v1/node`);
  const port = await page.$eval('tr.row[data-key="profile::port"] .value', (e) => e.textContent);
  check(port === "8080", `profile::port shows ${port}`);
  const users = await page.$eval('tr.row[data-key="profile::users"] .value', (e) => JSON.parse(e.textContent));
  check(JSON.stringify(users) === JSON.stringify(node.keys["profile::users"].value), "merged value differs from the API's");
  const secret = await page.$eval('tr.row[data-key="profile::db::password"] .value', (e) => e.textContent);
  check(secret.includes("Sensitive [value redacted]") && !(await page.content()).includes("the db password"),
    "an eyaml secret is shown to an anonymous caller");
  const from = await page.$eval('tr.row[data-key="profile::list"] .from', (e) => e.textContent);
  check(from.includes("Nodes") && from.includes("node1.example.com.yaml") && from.includes("(+2)"), `source column: ${from}`);
  await page.screenshot({ path: path.join(artifacts, "data.png"), fullPage: true });

  // the filter (keyboard: "/"), then j/Enter for details with provenance per entry, "e" to explain
  await page.keyboard.press("/");
  await page.keyboard.type("users");
  const filtered = await page.$$eval("#keys tbody tr.row", (trs) => trs.map((tr) => tr.dataset.key));
  check(filtered.length === 1 && filtered[0] === "profile::users", `filter: ${filtered}`);
  await page.keyboard.press("Enter"); // leaves the filter, selects the first row
  await page.keyboard.press("Enter"); // opens its details
  await page.waitForSelector("tr.details .prov");
  const prov = await page.$eval("tr.details .prov", (e) => e.textContent);
  check(/"shell": "\/bin\/zsh"\s*# Environment · Nodes · .*node1\.example\.com\.yaml:2/.test(prov) &&
        /"uid": 1002\s*# Environment · Common · .*common\.yaml:6/.test(prov), "provenance per entry:\n" + prov);
  await page.keyboard.press("e");
  await page.waitForSelector("tr.details pre");
  const expl = await page.$eval("tr.details pre", (e) => e.textContent);
  check(expl.includes('Searching for "profile::users"') && expl.includes("Merge strategy deep"), "explanation:\n" + expl);
  await page.screenshot({ path: path.join(artifacts, "details.png"), fullPage: true });
  await page.keyboard.press("Escape");
  check((await page.$("tr.details")) === null, "Escape does not close the details");

  // the hierarchy (keyboard: "2"): every level, files that exist marked
  await page.keyboard.press("2");
  await page.waitForSelector("#hierarchy .layer");
  const levels = await page.$$eval("#hierarchy .level b", (bs) => bs.map((b) => b.textContent));
  check(["Secrets", "Nodes", "Roles", "Common"].every((l) => levels.includes(l)), `levels: ${levels}`);
  const exists = await page.$$eval("#hierarchy .loc.yes", (ls) => ls.map((l) => l.textContent));
  const missing = await page.$$eval("#hierarchy .loc.no", (ls) => ls.map((l) => l.textContent));
  check(exists.some((p) => p.endsWith("role/web.yaml")) && exists.some((p) => p.endsWith("nodes/node1.example.com.yaml")),
    `existing files: ${exists}`);
  check(missing.every((p) => !fs.existsSync(p)) && exists.every((p) => fs.existsSync(p)), "exists marks do not match the disk");
  await page.screenshot({ path: path.join(artifacts, "hierarchy.png"), fullPage: true });

  // two nodes side by side (keyboard: "c" then a name)
  await page.keyboard.press("c");
  await page.keyboard.type("node2.example.com");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#compare tbody tr.row");
  const diffs = await page.$$eval("#compare tbody tr.row.differs td.key", (tds) => tds.map((td) => td.textContent));
  const n2 = await api("/v1/node?node=node2.example.com");
  const want = Object.keys(Object.assign({}, node.keys, n2.keys)).filter((k) =>
    JSON.stringify(node.keys[k] && node.keys[k].value) !== JSON.stringify(n2.keys[k] && n2.keys[k].value)).sort();
  check(JSON.stringify(diffs) === JSON.stringify(want), `differences marked ${diffs}, expected ${want}`);
  const countText = await page.textContent("#compare-count");
  check(countText.startsWith(`${want.length} of `), `compare count: ${countText}`);
  await page.click("#only-diff");
  const all = await page.$$eval("#compare tbody tr.row", (trs) => trs.length);
  check(all > diffs.length, "unticking 'only differences' shows every key");
  await page.screenshot({ path: path.join(artifacts, "compare.png"), fullPage: true });

  // the address holds the view: reload it, and the back button
  check(page.url().includes("node=node1.example.com") && page.url().includes("other=node2.example.com") &&
        page.url().includes("tab=compare"), `address: ${page.url()}`);
  await page.reload();
  await page.waitForSelector("#compare tbody tr.row");
  check(await page.isVisible("#tab-compare"), "reloading the address does not come back to the comparison");

  // search over the nodes
  await page.fill("#node", "node3");
  await page.waitForFunction(() => document.querySelectorAll("#node-list option").length === 1);
  check((await page.$eval("#node-list option", (o) => o.value)) === "node3.example.com", "node search");

  // an unknown node says so
  await page.goto(url + "/#node=nobody.example.com");
  await page.waitForFunction(() => document.querySelector("#status").textContent.includes("unknown node"));
  check(await page.$eval("#status", (e) => e.classList.contains("error")), "unknown node not shown as an error");

  // a phone: nothing wider than the screen
  const phone = await newPage({ width: 375, height: 740 });
  await phone.goto(url + "/#node=node1.example.com");
  await phone.waitForSelector("#keys tbody tr.row");
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `the page is ${overflow}px wider than a phone's screen`);
  await phone.screenshot({ path: path.join(artifacts, "phone.png"), fullPage: true });

  check(foreign.length === 0, "requests outside the server: " + foreign.join(", "));
  check(errors.length === 0, "errors in the page: " + errors.join("; "));
  check(failures.length === 0, "failed requests: " + failures.join(", "));
} catch (e) {
  check(false, String(e && e.stack || e));
} finally {
  await browser.close();
}
t.done("web");
