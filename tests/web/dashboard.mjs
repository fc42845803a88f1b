// dashboard.mjs - drives `jobq web` in Debian's Chromium through
// playwright-core (no browser of its own), for tests/cli_web.sh.
//
//   node dashboard.mjs MODE BASE_URL SHOTS_DIR
//
// MODE "full": loads every page with the jobs tests/cli_web.sh put
// (payloads, keys and errors with <script>), checks that none of them ran
// and that they show as text, clicks pause, resume, retry and cancel and
// checks the database changed (through `jobq`, with the test's JOBQ and
// JOBQ_DB), and saves a screenshot of each page in SHOTS_DIR.
// MODE "reader": the database role may only read: the pages load, and a
// click on pause says why it cannot.
// MODE "readonly": jobq web --read-only: no action button at all.
// MODE "parts-lost": queue orphan's parts are held by a foreman that died
// (cli_web.sh's t_parts): the queue page marks each part and says whose
// lease expired; the sessions page shows the dead session's parts.
// MODE "parts": then queue split's parts are held by a live foreman and
// orphan's by no one: the overview, the queue pages (each part's owner
// and ready jobs as `jobq parts` has them; none for queue whole, in one
// part), the sessions page and a job's page show them.
// Prints "ok NAME" per check; exits 1 on the first failure.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [mode, base, shots] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "jobq-chromium-"));
const jobq = (...args) => JSON.parse(execFileSync(process.env.JOBQ, ["--json", ...args], { encoding: "utf8" }));
const stats = (queue) => jobq("stats").queues.find((q) => q.name === queue);
const session = (name) => jobq("sessions").sessions.find((x) => x.name === name);
const texts = (sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent));

// A queue page's parts against `jobq parts QUEUE`: one row per part, with
// its ready jobs.
async function partsRows(queue) {
  await visit("#/queue/" + queue, "queue-parts-" + queue, "#parts tr[data-part]");
  const owners = jobq("parts", queue).owners;
  const ready = await texts("#parts tr[data-part] td.ready");
  check(`${queue}: a row per part with its ready jobs`, ready.join() === owners.map((o) => String(o.ready)).join(),
    `${ready.join()} vs ${owners.map((o) => o.ready).join()}`);
  return owners;
}

function check(name, ok, detail) {
  if (!ok) throw new Error(`${name}${detail ? ": " + detail : ""}`);
  console.log("ok " + name);
}

async function until(name, fn, ms = 10000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return check(name, true); } catch (e) { last = e.message; }
    await new Promise((r) => setTimeout(r, 150));
  }
  check(name, false, String(last));
}

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1360, height: 900 },
  deviceScaleFactor: 1,
});
const page = context.pages()[0] || (await context.newPage());
const problems = [];
page.on("pageerror", (e) => problems.push("page error: " + e.message));
// A refused action's answer (403) is logged by the browser: expected where
// the test makes one.
let refusals = 0;
page.on("console", (m) => {
  if (m.type() !== "error") return;
  if (refusals > 0 && m.text().includes("status of 403")) return void refusals--;
  problems.push("console: " + m.text());
});
page.on("dialog", (d) => { problems.push("dialog: " + d.message()); d.dismiss(); });

// Loads the page at hash afresh: going from one hash to another keeps the
// document, and `ready` would find the last page's elements before the
// new one replaced them.
async function visit(hash, shot, ready) {
  await page.goto("about:blank");
  await page.goto(base + "/" + hash);
  await page.waitForSelector(ready, { timeout: 15000 });
  await page.waitForTimeout(300);
  if (shot) await page.screenshot({ path: join(shots, shot + ".png"), fullPage: true });
}

async function bannerText() {
  await page.waitForSelector("#banner:not([hidden])", { timeout: 10000 });
  return page.textContent("#banner");
}

const pwned = () => page.evaluate(() => window.__pwned === undefined ? null : String(window.__pwned));

try {
  if (mode === "full") {
    await visit("#/", "overview", "table tr[data-queue]");
    check("overview lists the queues", (await page.$$("tr[data-queue]")).length >= 3);
    const held = await page.textContent('tr[data-queue="slow"] .badge.held').catch(() => "");
    check("overview says the limit holds a queue back", held === "held by limit", held);
    check("a queue without a limit has no badge for it", (await page.$$('tr[data-queue="mail"] .badge.limited, tr[data-queue="mail"] .badge.held')).length === 0);
    check("overview draws the charts", (await page.$$(".chart svg rect")).length > 0);
    check("overview's throughput counts the finished jobs",
      Number((await page.textContent(".card:nth-child(5) .value")).replace(/\D/g, "")) >= 0);

    await visit("#/queue/slow", "queue-limited", "#limits");
    const limits = await page.textContent("#limits");
    check("a queue's page says its limits", limits.includes("at most 1 running") && limits.includes("held back now"), limits);

    // A queue: filter by key, then pause and resume.
    await visit("#/queue/mail", "queue", "tr[data-job]");
    await page.fill("input[name=key]", "<b>key</b>");
    await page.click("form button[type=submit]");
    await page.waitForFunction(() => location.hash.includes("key="));
    // The unfiltered rows stay until the filtered page replaces them.
    await until("the key filter keeps that key's jobs only", async () => {
      const keyed = await page.$$eval("tr[data-job] td:nth-child(3)", (tds) => tds.map((t) => t.textContent));
      if (keyed.length > 0 && keyed.every((k) => k === "<b>key</b>")) return true;
      throw new Error(keyed.join(","));
    });
    await visit("#/queue/mail", null, "tr[data-job]");
    await page.click("button[data-action=pause]");
    check("pause says so", (await bannerText()).includes("Paused mail"));
    await until("the database has the queue paused", () => stats("mail").paused === true);
    await page.waitForSelector("button[data-action=resume]");
    await page.screenshot({ path: join(shots, "queue-paused.png"), fullPage: true });
    await page.click("button[data-action=resume]");
    await until("resume: the database has it running again", () => stats("mail").paused === false);

    // Dead jobs: the <script> payloads and errors show as text.
    await visit("#/dead", "dead", "tr[data-job]");
    check("no payload, key or error ran as script", (await pwned()) === null);
    const errs = await page.$$eval("td.err", (tds) => tds.map((t) => t.textContent).join("\n"));
    check("an error with markup shows as text", errs.includes("<script>"), errs.slice(0, 200));
    check("no element came from job data", (await page.$$("main script, main img, main b")).length === 0);
    const deadBefore = stats("images").dead;
    const first = await page.getAttribute("tr[data-job]", "data-job");
    await page.click(`tr[data-job="${first}"] button[data-action=retry]`);
    check("retry says so", (await bannerText()).includes(`Job #${first} will run again`));
    await until("retry: the job is back to run", () => jobq("show", first).state !== "dead");
    check("retry: one dead job fewer", stats("images").dead === deadBefore - 1);
    await visit("#/dead", null, "tr[data-job]");
    const second = await page.getAttribute("tr[data-job]", "data-job");
    await page.click(`tr[data-job="${second}"] button[data-action=cancel]`);
    await bannerText();
    await until("cancel of a dead job: the database has it cancelled", () => jobq("show", second).state === "cancelled");

    // One job: its attempts, its payload as text; cancel a waiting one.
    const dead = jobq("ls", "--state", "dead", "-q", "images").jobs[0];
    await visit("#/job/" + dead.id, "job", "pre.data");
    const payload = await page.textContent("pre.data");
    check("the payload shows as text", payload.includes("<script>window.__pwned=1</script>"), payload);
    const attempts = await page.$$("main .panel:last-child tbody tr");
    check("every attempt is listed", attempts.length === dead.attempts, `${attempts.length} rows, ${dead.attempts} attempts`);
    check("still nothing ran", (await pwned()) === null);
    const waiting = jobq("ls", "--state", "ready", "-q", "mail").jobs[0];
    await visit("#/job/" + waiting.id, null, "dl.facts");
    await page.click("button[data-action=cancel]");
    await bannerText();
    await until("cancel: the database has the job cancelled", () => jobq("show", waiting.id).state === "cancelled");

    await visit("#/sessions", "sessions", ".host table");
    check("sessions show the running job", (await page.$$(".jobs-inline a")).length >= 1);
  } else if (mode === "reader") {
    await visit("#/", "reader-overview", "table tr[data-queue]");
    await visit("#/queue/mail", null, "tr[data-job]");
    refusals = 1;
    await page.click("button[data-action=pause]");
    const text = await bannerText();
    check("the reader's pause says why it cannot", /permission denied/i.test(text), text);
    await page.screenshot({ path: join(shots, "reader-refused.png"), fullPage: true });
    check("the queue is not paused", stats("mail").paused === false);
  } else if (mode === "readonly") {
    await visit("#/queue/mail", "readonly", "tr[data-job]");
    check("read-only shows no action", (await page.$$("button[data-action]")).length === 0);
    check("read-only says so", (await page.textContent("#mode")) === "read-only");
  } else if (mode === "parts-lost") {
    await partsRows("orphan");
    const doomed = session("doomed");
    const owner = await texts("#parts tr[data-part] td.owner");
    check("each part names its dead owner", owner.length === 3 && owner.every((t) => t.includes("doomed") && t.includes(doomed.id.slice(0, 8))), owner.join(" | "));
    check("each part says its owner's lease expired", (await page.$$("#parts tr.unowned .badge.unowned")).length === 3);
    check("the queue says its parts have no live owner", (await page.textContent("h1 .badge.unowned")) === "3 unowned");
    await visit("#/sessions", "sessions-parts-lost", `tr[data-session="${doomed.id}"]`);
    const held = await page.textContent(`tr[data-session="${doomed.id}"] td.parts`);
    check("the dead session's parts", held === "orphan: 0–2", held);
  } else if (mode === "parts") {
    await visit("#/", "overview-parts", 'tr[data-queue="split"]');
    const badges = async (q) => (await texts(`tr[data-queue="${q}"] :is(.badge.parts, .badge.unowned)`)).join(" | ");
    check("overview: a queue in parts, each with a live owner", (await badges("split")) === "4 parts", await badges("split"));
    check("overview: the parts without an owner draw the eye", (await badges("orphan")) === "3 parts | 3 unowned" &&
      (await texts('tr[data-queue="orphan"] .badge.unowned')).length === 1, await badges("orphan"));
    check("overview: nothing for a queue in one part", (await badges("whole")) === "", await badges("whole"));

    const owners = await partsRows("split");
    const splitter = session("splitter");
    const owner = await texts("#parts tr[data-part] td.owner");
    check("each part names its live owner", owner.length === 4 && owner.every((t) => t === `splitter on ${splitter.host} ${splitter.id.slice(0, 8)}`), owner.join(" | "));
    check("no part of a live owner is marked", (await page.$$("#parts tr.unowned, #parts .badge.unowned")).length === 0);
    const widths = await page.$$eval("#parts .bar i", (is) => is.map((i) => parseFloat(i.style.width)));
    const most = Math.max(...owners.map((o) => o.ready));
    check("each part's ready jobs as a bar to scale", widths.length === 4 &&
      widths.every((w, k) => Math.abs(w - (100 * owners[k].ready) / most) < 0.1), widths.join());

    await partsRows("orphan");
    check("each part without an owner is marked", (await page.$$("#parts tr.unowned")).length === 3 &&
      (await texts("#parts td.owner")).every((t) => t === "no owner"), (await texts("#parts td.owner")).join(" | "));

    await visit("#/queue/whole", "queue-whole", "tr[data-job]");
    check("a queue in one part has no parts section", (await page.$$("#parts, h1 .badge.parts")).length === 0);

    await visit("#/sessions", "sessions-parts", `tr[data-session="${splitter.id}"]`);
    const held = await page.textContent(`tr[data-session="${splitter.id}"] td.parts`);
    check("the sessions page shows a session's parts", held === "split: 0–3", held);

    const job = jobq("ls", "-q", "split").jobs[0];
    await visit("#/job/" + job.id, null, "dl.facts");
    const facts = await page.$$eval("dl.facts dt", (dts) => Object.fromEntries(dts.map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
    check("a job's page says its part", facts.Part === String(job.part), JSON.stringify(facts));
    await visit("#/job/" + jobq("ls", "-q", "whole").jobs[0].id, null, "dl.facts");
    check("a job of a queue in one part has none", !(await texts("dl.facts dt")).includes("Part"));
  } else {
    throw new Error("unknown mode " + mode);
  }
  check("no error on the pages", problems.length === 0, problems.join("; "));
} catch (e) {
  console.log("FAIL " + e.message);
  await page.screenshot({ path: join(shots, `failure-${mode}.png`), fullPage: true }).catch(() => {});
  process.exitCode = 1;
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
