// What the page's browser tests share (page.mjs, edit.mjs): Debian's chromium, headless, driven by
// playwright-core, and the count of checks passed and failed.
import { chromium } from "playwright-core";

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
}

// check(ok, what) counts; done(name) prints "NAME: N passed, N failed" and exits 1 on a failure.
export function checker() {
  const t = { passed: 0, failed: 0 };
  t.check = (ok, what) => {
    if (ok) t.passed++;
    else { t.failed++; console.log("FAIL: " + what); }
  };
  t.done = (name) => {
    console.log(`${name}: ${t.passed} passed, ${t.failed} failed`);
    process.exit(t.failed ? 1 : 0);
  };
  return t;
}
