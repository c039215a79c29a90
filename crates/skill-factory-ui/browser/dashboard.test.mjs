// End-to-end tests of the dashboard (`skill-factory ui`) in headless Chromium: real run folders
// made by the real binary from the offline examples, a real server, a real browser. Run as:
//   SKILL_FACTORY_BROWSER_MODULES="$(scripts/setup-browser.sh)" \
//   SKILL_FACTORY_BIN=target/debug/skill-factory SKILL_FACTORY_REPO=. \
//     node --test --test-concurrency=1 crates/skill-factory-ui/browser/
//
//   SKILL_FACTORY_BIN     the skill-factory binary (required)
//   SKILL_FACTORY_REPO    the repository root, for examples/ (required)
//   SKILL_FACTORY_UI_ASSETS  optional: a folder holding index.html, app.js and app.css that the
//                         browser is served instead of the copies embedded in the binary (the
//                         server's own headers, CSP included, are kept): to check an edit of
//                         crates/skill-factory-ui/assets/ without rebuilding.
//
// Everything else is made here, in a fresh temporary folder W (removed at the end): the two
// offline examples and a gepa variant optimized into W/runs, a run whose skill, dataset and
// model replies carry script, a slow config to cancel from the page, and `ui --runs W/runs
// --port 0` started in W (so configs launched from the page are given relative to W). The
// trigger test optimizes the offline trigger example into W/trigger-runs, and the targets test
// the ticket classifier on three targets into W/targets-runs, each with a server of its own.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { axe, formatViolations, launch, screenshot } from './harness.mjs';

const BIN = process.env.SKILL_FACTORY_BIN;
const REPO = process.env.SKILL_FACTORY_REPO;
const ASSETS = process.env.SKILL_FACTORY_UI_ASSETS;

const PAYLOAD_SCRIPT = '<script>window.__pwned=1</script>';
const PAYLOAD_IMG = '<img src=x onerror="window.__pwned=1">';
const PAYLOAD_REPLY = '<img src=x onerror=window.__pwned=1>';

let W; // the temporary folder
let server; // the `ui` child process
let serverOutput = '';
let base; // http://127.0.0.1:PORT
let browser;
const runs = {}; // fixture name -> run path relative to the runs root

// ---------- helpers ----------

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns a truthy value (which it returns) or `timeout` ms pass. */
async function until(probe, message, timeout = 15_000, every = 100) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`${message} (after ${timeout} ms; last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    }
    await sleep(every);
  }
}

async function api(url) {
  const response = await fetch(base + url, { headers: { Accept: 'application/json' } });
  const text = await response.text();
  assert.ok(response.ok, `GET ${url} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

function optimize(config, out) {
  try {
    execFileSync(BIN, ['optimize', '-c', config, '--out', out], { cwd: W, stdio: 'pipe', timeout: 60_000 });
  } catch (error) {
    throw new Error(`${BIN} optimize -c ${config} failed (${error.status ?? error.signal}):\n${error.stdout}\n${error.stderr}`);
  }
}

/**
 * A fresh page (a new browser context) that records uncaught errors, console errors, dialogs
 * (dismissed) and CSP violations; `page.assertClean()` fails on any of them.
 */
async function newPage() {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  const dialogs = [];
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console error: ${message.text()}`);
  });
  page.on('dialog', (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    dialog.dismiss().catch(() => {});
  });
  await page.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile}:${e.lineNumber})`);
    });
  });
  if (ASSETS) {
    // The page's own files from SKILL_FACTORY_UI_ASSETS, under the server's real headers.
    const files = { '/': 'index.html', '/assets/app.js': 'app.js', '/assets/app.css': 'app.css' };
    await page.route((url) => url.origin === base && url.pathname in files, async (route) => {
      const response = await route.fetch();
      const file = files[new URL(route.request().url()).pathname];
      await route.fulfill({ response, body: readFileSync(path.join(ASSETS, file), 'utf8') });
    });
  }
  page.errors = errors;
  page.dialogs = dialogs;
  /** Asserts the page had no uncaught error, console error, dialog or CSP violation. */
  page.assertClean = async () => {
    const csp = await page.evaluate(() => window.__cspViolations || []).catch(() => []);
    assert.deepEqual([...errors, ...dialogs, ...csp], [], 'the page reported problems');
  };
  return page;
}

/** Runs `body(page)` on a fresh page, closing it after; the page must stay clean. */
async function withPage(body) {
  const page = await newPage();
  try {
    await body(page);
    await page.assertClean();
  } finally {
    await page.close();
  }
}

const hashPath = (page) => decodeURIComponent(new URL(page.url()).hash);
const runUrl = (runPath) => `${base}/#/run/${encodeURIComponent(runPath)}`;
const dataRows = (page) => page.locator('#runs tbody tr[data-path]');
const statusBadge = (page) => page.locator('#tiles .tile').first().locator('.badge');

async function openRun(page, runPath) {
  await page.goto(runUrl(runPath));
  await page.locator('#tiles .badge').waitFor();
  await page.locator('#tab-overview[aria-selected="true"]').waitFor();
}

/** Waits until the tasks table shows `total` tasks and the given header. */
async function waitForTasks(page, total, { other } = {}) {
  await until(async () => {
    const info = (await page.locator('#task-count').textContent()) || '';
    const headers = await page.locator('#tasks thead th').allTextContents();
    const hasOther = headers.filter((h) => h.startsWith('Score of #')).length === 2;
    const right = total === 0 ? info === '0 tasks' : info.endsWith(` of ${total}`);
    return right && (other === undefined || hasOther === other);
  }, `the tasks table never showed ${total} tasks${other === undefined ? '' : other ? ' with a second score column' : ''}`);
}

/** The rows of the tasks table: task id, score and (when compared) the other score. */
async function taskRows(page) {
  return page.locator('#tasks tbody tr[data-task]').evaluateAll((rows) => {
    // Headed "Score of #N" (the shown candidate), then "Score of #M" when compared with M.
    const headers = [...document.querySelectorAll('#tasks thead th')].map((th) => th.textContent);
    const scores = headers.flatMap((h, i) => (h.startsWith('Score of #') ? [i] : []));
    return rows.map((tr) => ({
      task: tr.dataset.task,
      score: Number(tr.children[scores[0]].textContent),
      other: scores.length > 1 ? Number(tr.children[scores[1]].textContent) : null,
      change: tr.querySelector('.badge')?.textContent ?? null,
    }));
  });
}

async function launchFromList(page, config) {
  await page.goto(`${base}/`);
  await dataRows(page).first().waitFor();
  await page.locator('#config').fill(config);
  await page.locator('#launch-optimize').click();
  // The job page forwards to the run page by itself once the run folder exists.
  try {
    await until(() => hashPath(page).startsWith('#/run/jobs/'), 'not yet', 30_000);
  } catch (error) {
    const message = await page.locator('#launch-message').textContent().catch(() => '');
    throw new Error(`launching ${config} never reached its run page (at ${page.url()}; launch message: ${JSON.stringify(message)}; jobs: ${JSON.stringify(await api('/api/jobs'))})`);
  }
  const runPath = hashPath(page).slice('#/run/'.length);
  const jobs = await api('/api/jobs');
  const job = jobs.find((j) => j.run === runPath);
  assert.ok(job, `no job in /api/jobs owns ${runPath}: ${JSON.stringify(jobs)}`);
  assert.equal(job.config, config);
  assert.equal(job.command, 'optimize');
  return { runPath, job };
}

// ---------- setup ----------

before(async () => {
  if (!BIN) throw new Error('SKILL_FACTORY_BIN is not set: set it to the skill-factory binary (e.g. target/debug/skill-factory)');
  if (!REPO) throw new Error('SKILL_FACTORY_REPO is not set: set it to the repository root (the folder holding examples/)');
  // The binary may be being relinked: give it a minute to reappear.
  await until(() => existsSync(BIN), `SKILL_FACTORY_BIN=${BIN} does not exist`, 60_000, 500);
  for (const file of ASSETS ? ['index.html', 'app.js', 'app.css'] : []) {
    if (!existsSync(path.join(ASSETS, file))) throw new Error(`SKILL_FACTORY_UI_ASSETS=${ASSETS} has no ${file}`);
  }
  for (const name of ['ticket-classifier', 'invoice-extractor']) {
    const example = path.join(REPO, 'examples', name);
    if (!existsSync(example)) throw new Error(`SKILL_FACTORY_REPO=${REPO} has no ${example}`);
  }
  W = mkdtempSync(path.join(tmpdir(), 'skill-factory-dashboard-'));
  for (const name of ['ticket-classifier', 'invoice-extractor']) {
    cpSync(path.join(REPO, 'examples', name), path.join(W, 'examples', name), { recursive: true });
  }

  optimize('examples/ticket-classifier/config.offline.yaml', 'runs/ticket-classifier');
  optimize('examples/invoice-extractor/config.offline.yaml', 'runs/invoice-extractor');
  const offline = readFileSync(path.join(W, 'examples/ticket-classifier/config.offline.yaml'), 'utf8');
  assert.match(offline, /name: llm_loop/);
  // The gepa variant is noisy by its config: paired gates, intervals and a fresh-sample headline.
  writeFileSync(path.join(W, 'examples/ticket-classifier/config.gepa.yaml'),
    offline.replace('name: llm_loop', 'name: gepa') + '\nnoise: {regime: noisy}\n');
  optimize('examples/ticket-classifier/config.gepa.yaml', 'runs/ticket-gepa');

  // A run whose seed, tasks, model replies and proposals all carry script.
  const xss = path.join(W, 'xss');
  mkdirSync(xss);
  writeFileSync(path.join(xss, 'SKILL.md'),
    `---\nname: xss\ndescription: A planted skill whose text tries to run script in the dashboard.\n---\n\n# XSS probe\n\nAnswer with one word. ${PAYLOAD_SCRIPT}\n${PAYLOAD_IMG}\n`);
  writeFileSync(path.join(xss, 'dataset.jsonl'), [1, 2, 3, 4, 5, 6]
    .map((i) => JSON.stringify({ id: `x${i}`, input: `task ${i} ${PAYLOAD_SCRIPT}`, expected: 'word' }) + '\n').join(''));
  const yaml = (s) => JSON.stringify(s); // a JSON string is a YAML flow scalar
  writeFileSync(path.join(xss, 'config.yaml'), [
    'skill: SKILL.md',
    'dataset: dataset.jsonl',
    'val_fraction: 0.5',
    `provider: {name: fake, responses: [${yaml('word')}, ${yaml(PAYLOAD_REPLY)}]}`,
    `optimizer_provider: {name: fake, responses: [${yaml(`<RATIONALE>Try ${PAYLOAD_SCRIPT} and ${PAYLOAD_REPLY}</RATIONALE><NEW_SKILL_BODY>Answer word. ${PAYLOAD_IMG}</NEW_SKILL_BODY>`)}]}`,
    'optimizer: {rounds: 2, patience: 2, minibatch_size: 2}',
    'metric: {golden: {mode: exact}}',
    'cache: {mode: off}',
    '',
  ].join('\n'));
  optimize('xss/config.yaml', 'runs/xss');

  // A config that runs for tens of seconds (0.3 s a rollout, nothing ever improves), to cancel.
  const slow = path.join(W, 'slow');
  mkdirSync(slow);
  writeFileSync(path.join(slow, 'skill.md'), '---\nname: slow\ndescription: A slow skill, to cancel.\n---\nWait.\n');
  writeFileSync(path.join(slow, 'data.jsonl'), Array.from({ length: 30 }, (_, i) =>
    JSON.stringify({ id: `t${i}`, input: 'x', expected: 'z' }) + '\n').join(''));
  writeFileSync(path.join(slow, 'config.yaml'), [
    'skill: skill.md',
    'dataset: data.jsonl',
    'val_fraction: 0.5',
    'harness: {type: subprocess, command: [sh, -c, "sleep 0.3; echo y"], timeout: 60, max_workers: 2}',
    'provider: {name: fake, responses: ["<NEW_SKILL_BODY>x</NEW_SKILL_BODY>"]}',
    'metric: {golden: {mode: exact}}',
    'optimizer: {rounds: 100, patience: 100}',
    'cache: {mode: off}',
    '',
  ].join('\n'));

  ({ child: server, url: base } = await startUi(path.join(W, 'runs')));

  const listed = (await api('/api/runs')).runs;
  for (const name of ['ticket-classifier', 'invoice-extractor', 'ticket-gepa', 'xss']) {
    const run = listed.find((r) => r.path.startsWith(name + '/'));
    assert.ok(run, `the runs list has no run under ${name}/: ${JSON.stringify(listed.map((r) => r.path))}`);
    runs[name] = run.path;
  }
  browser = await launch();
});

after(async () => {
  await browser?.close();
  if (server && server.exitCode === null) {
    // A job still running is stopped the way the page stops it, so no run outlives the test.
    try {
      for (const job of await api('/api/jobs')) {
        if (job.state === 'running') await fetch(`${base}/api/jobs/${job.id}/cancel`, { method: 'POST' });
      }
      await until(async () => (await api('/api/jobs')).every((j) => j.state !== 'running' && j.state !== 'cancelling'), 'jobs still running', 10_000);
    } catch (error) {
      console.error(`cleaning up jobs: ${error.message}`);
    }
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await Promise.race([exited, sleep(5_000)]);
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  }
  if (W) rmSync(W, { recursive: true, force: true });
});

/** `BIN ui --runs DIR --port 0` in W, once it prints its address. */
async function startUi(dir) {
  // Named relative to W, as a user in that folder would: the page shows the root as named.
  const child = spawn(BIN, ['ui', '--runs', path.relative(W, dir), '--port', '0'], { cwd: W, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.on('data', (chunk) => { serverOutput += chunk; });
  const url = await new Promise((resolve, reject) => {
    let printed = '';
    const timer = setTimeout(() => reject(new Error(`ui printed no address in 30 s:\n${serverOutput}`)), 30_000);
    child.on('exit', (code, signal) => reject(new Error(`ui exited (${code ?? signal}) before printing its address:\n${serverOutput}`)));
    child.stdout.on('data', (chunk) => {
      printed += chunk;
      serverOutput += chunk;
      const found = /Dashboard of .* at (http:\/\/127\.0\.0\.1:\d+)/.exec(printed);
      if (found) { clearTimeout(timer); resolve(found[1]); }
    });
  });
  return { child, url };
}

// ---------- tests ----------

test('the runs list shows every run and the search filters it', async () => {
  await withPage(async (page) => {
    await page.goto(`${base}/`);
    await until(async () => (await dataRows(page).count()) === 4, 'the runs table never listed 4 runs');
    const paths = (await dataRows(page).evaluateAll((rows) => rows.map((r) => r.dataset.path))).sort();
    assert.deepEqual(paths, Object.values(runs).sort());
    assert.equal(await page.locator('#count').textContent(), '4 of 4 runs');

    const search = page.locator('#search');
    await search.fill('gepa');
    await until(async () => (await dataRows(page).count()) === 1, 'searching "gepa" did not leave one row');
    assert.equal(await dataRows(page).first().getAttribute('data-path'), runs['ticket-gepa']);
    assert.equal(await page.locator('#count').textContent(), '1 of 4 runs');

    await search.fill('invoice');
    await until(async () => (await dataRows(page).count()) === 1, 'searching "invoice" did not leave one row');
    assert.equal(await dataRows(page).first().getAttribute('data-path'), runs['invoice-extractor']);

    await search.fill('ticket');
    await until(async () => (await dataRows(page).count()) === 2, 'searching "ticket" did not leave two rows');

    await search.fill('no-such-run-anywhere');
    await until(async () => (await dataRows(page).count()) === 0, 'a search matching nothing still shows rows');
    assert.equal(await page.locator('#runs tbody td.empty').textContent(), 'No run matches.');

    await search.fill('');
    await until(async () => (await dataRows(page).count()) === 4, 'clearing the search did not bring back 4 rows');
    await screenshot(page, 'list');
  });
});

test('a list of 400 runs keeps only the rows near the view and scrolls to every one', async () => {
  // 400 copies of a real result.json, each its own run and date.
  const many = path.join(W, 'many');
  const template = JSON.parse(readFileSync(path.join(W, 'runs', runs['ticket-classifier'], 'result.json'), 'utf8'));
  for (let i = 0; i < 400; i++) {
    const id = `20261101-${String(i).padStart(6, '0')}`;
    const folder = path.join(many, `config-${i % 8}`, id);
    mkdirSync(folder, { recursive: true });
    const started = new Date(Date.UTC(2026, 10, 1, 0, i)).toISOString().replace('.000', '');
    writeFileSync(path.join(folder, 'result.json'), JSON.stringify({ ...template, run_id: id, started_at: started, best_score: (i % 100) / 100 }));
  }
  const { child, url } = await startUi(many);
  try {
    await withPage(async (page) => {
      await page.goto(`${url}/`);
      await until(async () => (await page.locator('#count').textContent()) === '400 of 400 runs', 'the list never counted 400 runs');
      const inPage = await dataRows(page).count();
      assert.ok(inPage > 10 && inPage < 200, `only the rows near the view are in the page, not ${inPage}`);
      assert.equal(await page.locator('#runs').getAttribute('aria-rowcount'), '401');
      // The oldest run is last (newest first): scrolling to the end brings its row.
      const oldest = 'config-0/20261101-000000';
      assert.equal(await page.locator(`#runs tr[data-path="${oldest}"]`).count(), 0);
      await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
      await until(async () => (await page.locator(`#runs tr[data-path="${oldest}"]`).count()) === 1, 'scrolling to the end never showed the oldest run');
      assert.equal(await page.locator(`#runs tr[data-path="${oldest}"]`).getAttribute('aria-rowindex'), '401');
      // Tab from the last row in the page's window goes on to the next run, not out of the list.
      await page.evaluate(() => window.scrollTo(0, 0));
      await until(async () => (await page.locator('#runs tr[data-path="config-7/20261101-000399"]').count()) === 1, 'back at the top, the newest run is not shown');
      const firstLink = page.locator('#runs tbody tr[data-path] a').first();
      await firstLink.focus();
      for (let i = 0; i < 200; i++) await page.keyboard.press('Tab');
      const focused = await page.evaluate(() => document.activeElement.closest('tr')?.getAttribute('aria-rowindex'));
      assert.ok(Number(focused) > 95, `after 200 Tabs (two stops a row, past the rows first drawn) the focus is on row ${focused}`);
    });
  } finally {
    child.kill('SIGTERM');
  }
});

test('a run page shows the chart, the lineage and diffs, and the hovered candidate', async () => {
  const runPath = runs['ticket-gepa'];
  const data = await api('/api/run?path=' + encodeURIComponent(runPath));
  assert.ok(data.candidates.length >= 3, `the gepa run has ${data.candidates.length} candidates`);
  await withPage(async (page) => {
    await page.goto(`${base}/`);
    await page.locator(`#runs tr[data-path="${runPath}"] a`).click();
    await until(() => hashPath(page) === `#/run/${runPath}`, `clicking the gepa run's link did not open its page (at ${page.url()})`);
    await page.locator('#chart canvas').first().waitFor();
    assert.match(await page.locator('h1').textContent(), /ticket-classifier/);
    assert.match(await page.locator('main').textContent(), /optimizer gepa/);

    const nodes = page.locator('#lineage [data-candidate]');
    assert.equal(await nodes.count(), data.candidates.length);
    assert.deepEqual(await nodes.evaluateAll((ns) => ns.map((n) => Number(n.dataset.candidate))), data.candidates.map((c) => c.id));
    // Every node is opaque (a dimmed one too), so the edges under it do not cross its label.
    const opacities = await nodes.evaluateAll((ns) => ns.map((n) => getComputedStyle(n).opacity));
    assert.deepEqual(opacities, opacities.map(() => '1'), 'a lineage node is see-through');
    assert.equal(await page.locator('#diff-title').textContent(), 'Seed → best');
    assert.ok((await page.locator('#diff .l.ins').count()) > 0, 'the seed → best diff has no inserted line');

    // Two clicks on the lineage: the diff between those two candidates.
    const [a, b] = data.candidates.filter((c) => c.id !== 0).slice(0, 2).map((c) => c.id);
    const expected = await api(`/api/run/diff?path=${encodeURIComponent(runPath)}&a=${a}&b=${b}`);
    await page.locator(`#lineage [data-candidate="${a}"]`).click();
    await page.locator('#candidate-details').waitFor();
    assert.match(await page.locator('#candidate-details').textContent(), new RegExp(`^Candidate ${a}(?!\\d)`));
    await page.locator(`#lineage [data-candidate="${b}"]`).click();
    await until(async () => (await page.locator('#diff-title').textContent()) === `Candidate ${a} → candidate ${b}`,
      `two lineage clicks did not title the diff "Candidate ${a} → candidate ${b}"`);
    await until(async () => (await page.locator('#diff .l').count()) === expected.lines.length,
      `the diff of ${a} → ${b} does not show the API's ${expected.lines.length} lines`);
    assert.equal(await page.locator('#diff .l.ins').count(), expected.inserted);
    assert.equal(await page.locator('#diff .l.del').count(), expected.deleted);
    assert.equal(await page.locator('#lineage .pick-a').getAttribute('data-candidate'), String(a));
    assert.equal(await page.locator('#lineage .pick-b').getAttribute('data-candidate'), String(b));

    // Hovering the chart names a candidate: the last scored one at the right edge.
    const hover = page.locator('#hover');
    assert.match(await hover.textContent(), /^Point at the chart/);
    const over = page.locator('#chart .u-over');
    // The lineage clicks scrolled the chart away: back into view, below the sticky header.
    await page.locator('#chart').evaluate((chart) => chart.scrollIntoView({ block: 'center' }));
    const box = await over.boundingBox();
    assert.equal(await page.evaluate(([x, y]) => document.elementFromPoint(x, y)?.className, [box.x + 5, box.y + box.height / 2]), 'u-over');
    const last = data.timeline.val[data.timeline.val.length - 1];
    await page.mouse.move(box.x + box.width - 5, box.y + box.height / 2, { steps: 5 });
    await until(async () => (await hover.textContent()).startsWith(`candidate ${last.candidate} · round ${last.round} · validation `),
      `hovering the chart's right edge did not show candidate ${last.candidate}`);
    const first = data.timeline.val[0];
    await page.mouse.move(box.x + 5, box.y + box.height / 2, { steps: 5 });
    await until(async () => (await hover.textContent()).startsWith(`candidate ${first.candidate} · round ${first.round} · validation `),
      `hovering the chart's left edge did not show candidate ${first.candidate}`);
    await page.mouse.move(box.x + box.width - 5, box.y + box.height / 2, { steps: 5 });
    await until(async () => (await hover.textContent()).startsWith(`candidate ${last.candidate}`), 'hover did not follow the mouse back');
    // A noisy run: its regime, the headline's interval, whiskers on the chart, and each gate's gain.
    assert.equal(await page.locator('#regime .v').textContent(), 'noisy');
    assert.match(await page.locator('#headline').textContent(), /^95% interval \d\.\d{3}–\d\.\d{3}, on fresh samples$/);
    assert.match(await page.locator('#chart').getAttribute('aria-label'), /with the 95% interval of \d+ of them$/);
    await page.locator('#tab-proposals').click();
    const headers = await page.locator('#proposals thead th').allTextContents();
    assert.ok(headers.includes('95% interval') && headers.includes('Gain over the best'), `proposal columns: ${headers}`);
    const gated = data.candidates.filter((c) => c.gain);
    assert.ok(gated.length > 0, 'no candidate of the noisy run has a gate');
    assert.match(await page.locator(`#proposals tr[data-candidate="${gated[0].id}"] td.gain`).textContent(), /^[+-]\d+\.\d to [+-]\d+\.\d pts$/);
    await page.locator('#tab-overview').click();
    await page.evaluate(() => window.scrollTo(0, 0)); // a full-page shot of a scrolled page draws the sticky header mid-page
    await screenshot(page, 'run');
  });
});

test('the tasks tab filters failures and changed scores', async () => {
  const runPath = runs['ticket-gepa'];
  const data = await api('/api/run?path=' + encodeURIComponent(runPath));
  const q = (extra) => api(`/api/run/tasks?path=${encodeURIComponent(runPath)}&split=val&${extra}`);
  const all = await q('candidate=0');
  const failures = await q('candidate=0&only=failures');
  const changed = await q(`candidate=0&only=changed&against=${data.best}`);
  assert.ok(failures.total > 0 && failures.total < all.total, `the seed should fail some but not all tasks: ${failures.total} of ${all.total}`);
  assert.ok(changed.total > 0, 'the best should change some of the seed\'s scores');
  await withPage(async (page) => {
    await openRun(page, runPath);
    await page.locator('#tab-tasks').click();
    assert.equal(await page.locator('#tab-tasks').getAttribute('aria-selected'), 'true');
    assert.equal(await page.locator('#task-candidate').inputValue(), String(data.best));

    await page.locator('#task-candidate').selectOption('0');
    await waitForTasks(page, all.total);
    assert.equal((await taskRows(page)).length, all.total);

    await page.locator('#task-only').selectOption('failures');
    await waitForTasks(page, failures.total);
    const failing = await taskRows(page);
    assert.equal(failing.length, failures.total);
    for (const row of failing) assert.ok(row.score < 1, `task ${row.task} is shown as a failure with score ${row.score}`);
    assert.deepEqual(failing.map((r) => r.task).sort(), failures.rows.map((r) => r.task_id).sort());

    await page.locator('#task-against').selectOption(String(data.best));
    await page.locator('#task-only').selectOption('changed');
    await waitForTasks(page, changed.total, { other: true });
    const moved = await taskRows(page);
    assert.equal(moved.length, changed.total);
    for (const row of moved) {
      assert.notEqual(row.score, row.other, `task ${row.task} is shown as changed with equal scores`);
      assert.ok(row.change, `task ${row.task} has no change badge`);
    }
    assert.deepEqual(moved.map((r) => r.task).sort(), changed.rows.map((r) => r.task_id).sort());
    await screenshot(page, 'tasks');
  });
});

test('two runs picked in the list are compared task by task', async () => {
  const [a, b] = [runs['ticket-classifier'], runs['ticket-gepa']];
  await withPage(async (page) => {
    await page.goto(`${base}/`);
    await until(async () => (await dataRows(page).count()) >= 4, 'the runs list did not load');
    const button = page.locator('#compare-picked');
    assert.equal(await button.isDisabled(), true);
    await page.locator(`#runs tr[data-path="${a}"] input[type=checkbox]`).check();
    assert.equal(await button.isDisabled(), true, 'compare is enabled with one run picked');
    await page.locator(`#runs tr[data-path="${b}"] input[type=checkbox]`).check();
    assert.equal(await button.isDisabled(), false, 'compare is disabled with two runs picked');
    await button.click();
    await page.locator('#compare-rows').waitFor();
    const expected = await api(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}&split=val`);
    assert.equal(await page.locator('#compare-a').inputValue(), a);
    assert.equal(await page.locator('#compare-b').inputValue(), b);
    const tiles = await page.locator('#comparison .tiles .tile').evaluateAll((ts) =>
      ts.map((t) => [t.querySelector('.k').textContent, Number(t.querySelector('.v').textContent)]));
    assert.deepEqual(tiles, [
      ['regressed', expected.counts.regressed], ['fixed', expected.counts.fixed],
      ['still failing', expected.counts.still_failing], ['unchanged', expected.counts.unchanged],
    ]);
    const rows = await page.locator('#compare-rows tbody tr[data-task]').count();
    assert.ok(rows > 0, 'the comparison shows no task');
    assert.equal(rows, expected.rows.length);
    assert.equal(tiles.reduce((sum, [, n]) => sum + n, 0), rows, 'the four counters do not add up to the rows');
    await screenshot(page, 'compare');
  });
});

test('an optimize launched from the list opens its run page, which ends done', async () => {
  await withPage(async (page) => {
    const { runPath, job } = await launchFromList(page, 'examples/ticket-classifier/config.offline.yaml');
    await until(async () => (await statusBadge(page).textContent()) === 'done',
      'the launched run\'s status never read done', 60_000, 200);
    const jobs = await api('/api/jobs');
    const now = jobs.find((j) => j.id === job.id);
    assert.equal(now.state, 'done', JSON.stringify(now));
    assert.equal(now.exit_code, 0);
    assert.equal(now.run, runPath);
    const run = await api('/api/run?path=' + encodeURIComponent(runPath));
    assert.equal(run.summary.status, 'done');
    assert.equal(await page.locator('#live-panel').count(), 0, 'a done run still shows the live panel');
    assert.equal(await page.locator('#tiles .tile').nth(3).locator('.v').textContent(), String(run.candidates.length));
  });
});

test('a running job shows live progress and is cancelled from its page', async () => {
  await withPage(async (page) => {
    const { runPath, job } = await launchFromList(page, 'slow/config.yaml');
    await page.locator('#live-panel').waitFor({ timeout: 30_000 });
    await page.locator('#cancel').waitFor({ timeout: 30_000 });
    // Until the seed is scored there is no chart, and no empty space or hover box for one.
    if ((await page.locator('#chart canvas').count()) === 0) {
      assert.equal(await page.locator('#chart').textContent(), 'No scores yet.');
      assert.ok((await page.locator('#chart').boundingBox()).height < 100, 'the empty chart keeps its 300 px');
      assert.equal(await page.locator('#hover').isVisible(), false, 'the hover box shows with no chart');
    }
    assert.equal(await statusBadge(page).textContent(), 'running');
    const calls = async () => Number(((await page.locator('#live-calls').textContent()) || '').replace(/,/g, ''));
    const before = await calls();
    await until(async () => (await calls()) > before, `#live-calls never grew past ${before}`, 20_000, 200);
    await until(async () => (await calls()) > before + 2, `#live-calls stopped growing`, 20_000, 200);
    // Cancelled once the loop runs (past the seed's baseline), so the stopped run has a round.
    await until(async () => Number(await page.locator('#live-round').textContent()) >= 1, '#live-round never reached 1', 30_000, 200);
    assert.match(await page.locator('#live-panel').textContent(), /round \d+ of 100/);
    // The seed's score reaches the chart while the run goes on, with no reload of the page.
    await page.locator('#chart canvas').first().waitFor({ timeout: 10_000 });
    await screenshot(page, 'live');

    await page.locator('#cancel').click();
    await until(async () => (await statusBadge(page).textContent()) === 'stopped',
      'the cancelled run\'s status never read stopped', 60_000, 200);
    await until(async () => (await page.locator('#live-panel').count()) === 0, 'the live panel stayed after the run stopped');
    await page.locator('#tab-report').click();
    const report = (await page.locator('#report').textContent()).trim();
    assert.ok(report.length > 0 && report !== 'No report yet.', `the stopped run has no report: ${JSON.stringify(report)}`);
    assert.match(report, /cancelled/, 'the report does not say the run was cancelled');
    const jobs = await api('/api/jobs');
    const now = jobs.find((j) => j.id === job.id);
    assert.equal(now.state, 'cancelled', JSON.stringify(now));
    const run = await api('/api/run?path=' + encodeURIComponent(runPath));
    assert.equal(run.summary.status, 'stopped');
    await screenshot(page, 'cancelled');
  });
});

test('ui export gives one file that shows the run page with no server and no network', async () => {
  const runDir = path.join(W, 'runs', runs['ticket-gepa']);
  const out = path.join(W, 'report.html');
  execFileSync(BIN, ['ui', 'export', runDir, '-o', out], { cwd: W, stdio: 'pipe', timeout: 60_000 });
  const data = await api('/api/run?path=' + encodeURIComponent(runs['ticket-gepa']));
  await withPage(async (page) => {
    const requests = [];
    page.on('request', (request) => requests.push(request.url()));
    await page.goto('file://' + out);
    await page.locator('#chart canvas').waitFor();
    assert.equal(await page.locator('#lineage [data-candidate]').count(), data.candidates.length);
    assert.ok((await page.locator('#diff .l.ins').count()) > 0, 'the seed-to-best diff is drawn');
    // The exported page keeps the noisy run's intervals: the headline's and the chart's whiskers.
    assert.match(await page.locator('#headline').textContent(), /^95% interval \d\.\d{3}–\d\.\d{3}, on fresh samples$/);
    assert.match(await page.locator('#chart').getAttribute('aria-label'), /with the 95% interval of \d+ of them$/);
    await page.locator('#tab-tasks').click();
    await until(async () => (await page.locator('#tasks tbody tr[data-task]').count()) > 0, 'the exported tasks table is empty');
    await page.locator('#tab-lines').click();
    await page.locator('#blame .l').first().waitFor();
    assert.deepEqual(requests.filter((url) => !url.startsWith('file://') && !url.startsWith('data:')), [], 'the export fetches nothing');
    await screenshot(page, 'export');
  });
});

test('a trigger run shows its seed\'s and best\'s loads, in the dashboard and in its export', async () => {
  // The offline trigger example, optimized into a runs root of its own (the shared one's runs
  // are counted by other tests), with a copy of its result whose seed never loaded the skill.
  cpSync(path.join(REPO, 'examples', 'receipt-trigger'), path.join(W, 'examples', 'receipt-trigger'),
    { recursive: true, filter: (source) => path.basename(source) !== 'runs' });
  const root = path.join(W, 'trigger-runs');
  optimize('examples/receipt-trigger/config.offline.yaml', 'trigger-runs/receipt-trigger');
  const { child, url } = await startUi(root);
  try {
    const listed = await (await fetch(`${url}/api/runs`)).json();
    const runPath = listed.runs.find((r) => r.path.startsWith('receipt-trigger/'))?.path;
    assert.ok(runPath, `the trigger run is not listed: ${JSON.stringify(listed)}`);
    const runDir = path.join(root, runPath);
    const result = JSON.parse(readFileSync(path.join(runDir, 'result.json'), 'utf8'));
    const trigger = result.trigger;
    assert.ok(trigger && trigger.split === 'test', `result.json has no trigger figures on test: ${JSON.stringify(trigger)}`);
    // The offline router loads it for every receipt and for too many near misses at first; the
    // best description stops the false loads.
    assert.ok(trigger.seed.false_positives > 0 && trigger.best.false_positives < trigger.seed.false_positives, JSON.stringify(trigger));

    // What the table must say, row by row, from result.json.
    const rate = (x) => (x === null ? 'n/a' : x.toFixed(3));
    const expected = (f) => [rate(f.accuracy), rate(f.precision), rate(f.recall), rate(f.false_trigger_rate),
      `${f.true_positives} / ${f.true_positives + f.false_negatives}`, `${f.false_positives} / ${f.false_positives + f.true_negatives}`];
    const requests = ['true_positives', 'false_positives', 'false_negatives', 'true_negatives', 'failed'].reduce((n, k) => n + trigger.seed[k], 0);
    const table = async (page) => ({
      headers: await page.locator('#trigger-table thead th').allTextContents(),
      seed: await page.locator('#trigger-table tr[data-skill="seed"] td').allTextContents(),
      best: await page.locator('#trigger-table tr[data-skill="best"] td').allTextContents(),
      split: await page.locator('#trigger-split').textContent(),
    });
    const wanted = {
      headers: ['Skill', 'Accuracy', 'Precision', 'Recall', 'False-trigger rate', 'Loaded / should', 'Loaded / near misses'],
      seed: expected(trigger.seed),
      best: expected(trigger.best),
      split: `Whether an agent loads the skill, on the held-out test split (${requests} requests).`,
    };
    const onTrigger = (where) => `${where} (${url}/#/run/${encodeURIComponent(runPath)})`;
    // Picks a split in the Tasks tab and waits for the table to show that split's own rows: the
    // count alone cannot tell two splits of the same size apart.
    const showSplit = async (page, split) => {
      const data = await (await fetch(`${url}/api/run/tasks?path=${encodeURIComponent(runPath)}&split=${split}`)).json();
      const ids = new Set(data.rows.map((r) => r.task_id));
      await page.locator('#task-split').selectOption(split);
      await until(async () => {
        const shown = await page.locator('#tasks tbody tr[data-task]').evaluateAll((trs) => trs.map((tr) => tr.dataset.task));
        return shown.length > 0 && shown.every((id) => ids.has(id))
          && ((await page.locator('#task-count').textContent()) || '').endsWith(` of ${data.total}`);
      }, `the ${split} split's tasks never showed`);
      return data;
    };

    await withPage(async (page) => {
      await page.goto(`${url}/#/run/${encodeURIComponent(runPath)}`);
      await page.locator('#trigger-table').waitFor();
      assert.deepEqual(await table(page), wanted, onTrigger('the Triggering table'));
      assert.match(await page.locator('#trigger').textContent(), /Precision: of the loads, the share that should have happened\. Recall: of the requests that should load the skill, the share that did\. False-trigger rate: of the near misses, the share that loaded it anyway\./);
      const violations = await axe(page);
      assert.deepEqual(violations, [], `axe on the trigger run's overview:\n${formatViolations(violations)}`);
      await page.evaluate(() => window.scrollTo(0, 0));
      await screenshot(page, 'trigger');

      // The tasks: each request with whether it should load the skill and what the agent loaded.
      await page.locator('#tab-tasks').click();
      await showSplit(page, 'test');
      const headers = await page.locator('#tasks thead th').allTextContents();
      assert.deepEqual(headers.slice(0, 4), ['Task', 'Request', 'Should load', 'Decision']);
      const rows = await page.locator('#tasks tbody tr[data-task]').evaluateAll((trs) => trs.map((tr) => ({
        should: tr.children[2].textContent, decision: tr.children[3].querySelector('pre').textContent,
        score: Number(tr.children[4].textContent),
      })));
      assert.equal(rows.length, requests);
      for (const row of rows) {
        assert.ok(row.should === 'yes' || row.should === 'no', JSON.stringify(row));
        assert.ok(row.decision === 'loaded' || row.decision === 'not loaded', JSON.stringify(row));
        // Right when the load matches what should have happened.
        assert.equal(row.score, (row.should === 'yes') === (row.decision === 'loaded') ? 1 : 0, JSON.stringify(row));
      }
      const decided = (should, loaded) => rows.filter((r) => r.should === should && r.decision === loaded).length;
      const best = trigger.best;
      assert.deepEqual([decided('yes', 'loaded'), decided('no', 'loaded'), decided('yes', 'not loaded'), decided('no', 'not loaded')],
        [best.true_positives, best.false_positives, best.false_negatives, best.true_negatives], 'the best\'s rows add up to its counts');
      // On validation the best once loaded the distractor for a near miss: that row says so.
      const val = await showSplit(page, 'val');
      const distracted = val.rows.filter((r) => r.loaded_skills.some((name) => name !== result.best_skill.name)).map((r) => r.task_id);
      assert.ok(distracted.length > 0, `no validation row of the best loaded another skill: ${JSON.stringify(val.rows)}`);
      const noted = await page.locator('#tasks tbody tr[data-task]').evaluateAll((trs) => trs
        .filter((tr) => tr.querySelector('.other-skills')).map((tr) => [tr.dataset.task, tr.querySelector('.other-skills').textContent]));
      assert.deepEqual(noted, distracted.map((id) => [id, 'loaded instead: expense-report']));
      await screenshot(page, 'trigger-tasks');
      const tasksViolations = await axe(page);
      assert.deepEqual(tasksViolations, [], `axe on the trigger run's tasks:\n${formatViolations(tasksViolations)}`);
    });

    // The export carries the same view, from the data it embeds.
    const out = path.join(W, 'trigger.html');
    execFileSync(BIN, ['ui', 'export', runDir, '-o', out], { cwd: W, stdio: 'pipe', timeout: 60_000 });
    await withPage(async (page) => {
      const requested = [];
      page.on('request', (request) => requested.push(request.url()));
      await page.goto('file://' + out);
      await page.locator('#trigger-table').waitFor();
      assert.deepEqual(await table(page), wanted, 'the exported Triggering table');
      await page.locator('#tab-tasks').click();
      await page.locator('#task-split').selectOption('test');
      await until(async () => ((await page.locator('#task-count').textContent()) || '').endsWith(` of ${requests}`), 'the export\'s test tasks never showed');
      assert.deepEqual((await page.locator('#tasks thead th').allTextContents()).slice(2, 4), ['Should load', 'Decision']);
      assert.deepEqual(requested.filter((u) => !u.startsWith('file://') && !u.startsWith('data:')), [], 'the export fetches nothing');
    });

    // A rate with nothing to divide by (a seed that never loaded the skill) shows as n/a.
    const never = { ...trigger.seed, precision: null, accuracy: 0.5, true_positives: 0, false_positives: 0, false_negatives: 8, true_negatives: 8, recall: 0, false_trigger_rate: 0 };
    const copy = path.join(root, 'never-loaded', '20261101-000000');
    mkdirSync(copy, { recursive: true });
    writeFileSync(path.join(copy, 'result.json'), JSON.stringify({ ...result, run_id: '20261101-000000', trigger: { ...trigger, seed: never } }));
    await withPage(async (page) => {
      await page.goto(`${url}/#/run/${encodeURIComponent('never-loaded/20261101-000000')}`);
      await page.locator('#trigger-table').waitFor();
      assert.deepEqual(await page.locator('#trigger-table tr[data-skill="seed"] td').allTextContents(),
        ['0.500', 'n/a', '0.000', '0.000', '0 / 8', '0 / 8']);
    });
  } finally {
    child.kill('SIGTERM');
  }

  // A run of no trigger set shows no Triggering view.
  await withPage(async (page) => {
    await openRun(page, runs['ticket-gepa']);
    await page.locator('#chart canvas').first().waitFor();
    assert.equal(await page.locator('#trigger').count(), 0);
    await page.locator('#tab-tasks').click();
    await page.locator('#tasks tbody tr[data-task]').first().waitFor();
    assert.deepEqual((await page.locator('#tasks thead th').allTextContents()).slice(0, 4), ['Task', 'Input', 'Expected', 'Output']);
  });
});

test('a run over several targets shows them as a heatmap, with each gate\'s gains, in the dashboard and in its export', async () => {
  // The offline ticket classifier on three targets: its scripted model under two names, both
  // optimized, and a model measured only that answers `billing` to every message but turns to
  // prose under the category boundaries the best skill adds. Its own runs root, as the trigger
  // test's.
  const offline = readFileSync(path.join(W, 'examples/ticket-classifier/config.offline.yaml'), 'utf8');
  writeFileSync(path.join(W, 'examples/ticket-classifier/config.targets.yaml'), offline + [
    '',
    'cache: {mode: off}',
    'targets:',
    '  - {name: scripted, provider: {model: scripted-ticket-model}}',
    '  - {name: twin, provider: {model: twin-model}}',
    '  - {name: terse, optimize: false, provider: {name: fake, model: terse, responses: [billing], rules: [{system_contains: "Category boundaries", reply: "I think it is billing."}]}}',
    '',
  ].join('\n'));
  const root = path.join(W, 'targets-runs');
  optimize('examples/ticket-classifier/config.targets.yaml', 'targets-runs/ticket-targets');
  const { child, url } = await startUi(root);
  try {
    const listed = await (await fetch(`${url}/api/runs`)).json();
    const runPath = listed.runs.find((r) => r.path.startsWith('ticket-targets/'))?.path;
    assert.ok(runPath, `the targets run is not listed: ${JSON.stringify(listed)}`);
    const runDir = path.join(root, runPath);
    const run = await (await fetch(`${url}/api/run?path=${encodeURIComponent(runPath)}`)).json();
    const targets = run.result.targets;
    assert.deepEqual(Object.keys(targets || {}), ['scripted', 'terse', 'twin'], JSON.stringify(targets));

    // What the heatmap must say, from result.json: optimized targets first, then those measured only.
    const names = ['scripted', 'twin', 'terse'];
    const fixed = (x) => x.toFixed(3);
    const signed = (x) => (x < 0 && fixed(-x) !== '0.000' ? '−' : '+') + fixed(Math.abs(x));
    const cell = (e) => `${fixed(e.mean)} ± ${fixed((e.interval[1] - e.interval[0]) / 2)}`;
    const bucket = (e) => 't' + Math.max(0, Math.min(4, Math.floor(e.mean * 4.999)));
    const verdict = (e) => (e.interval[0] > 0 ? 'up' : e.interval[1] < 0 ? 'down' : 'flat');
    const wanted = {
      headers: [['Skill', null], ...names.map((n) => [n, targets[n].optimize ? null : 'measured only'])],
      seed: names.map((n) => [cell(targets[n].seed), bucket(targets[n].seed)]),
      best: names.map((n) => [cell(targets[n].best), bucket(targets[n].best)]),
      gain: names.map((n) => {
        const e = targets[n].improvement;
        return [`${signed(e.mean)} (${signed(e.interval[0])} to ${signed(e.interval[1])})`, verdict(e)];
      }),
    };
    // The two optimized targets gain for sure, the measured one loses for sure: both colours show.
    assert.deepEqual(wanted.gain.map(([, v]) => v), ['up', 'up', 'down'], JSON.stringify(targets));
    const heatmap = async (page) => page.locator('#targets-table').evaluate((table) => {
      const row = (skill) => [...table.querySelectorAll(`tr[data-skill="${skill}"] td`)];
      const score = (td) => [td.textContent, [...td.classList].find((c) => /^t\d$/.test(c)) ?? null];
      return {
        headers: [...table.querySelectorAll('thead th')].map((th) => [th.firstChild.textContent, th.querySelector('.sub')?.textContent ?? null]),
        seed: row('seed').map(score),
        best: row('best').map(score),
        gain: row('gain').map((td) => [td.textContent, td.dataset.verdict]),
      };
    });
    // Each gate's gains on the optimized targets, beside its decision in the proposals.
    const gates = run.candidates.filter((c) => c.gain && c.gain.per_target);
    assert.ok(gates.length > 0, `no gate has per-target gains: ${JSON.stringify(run.candidates)}`);
    const perTarget = (gain) => Object.entries(gain.per_target).map(([n, x]) => `${n} ${signed(x)}`).join(' · ');
    const proposals = async (page) => {
      await page.locator('#tab-proposals').click();
      await page.locator('#proposals tbody tr[data-candidate]').first().waitFor();
      return page.locator('#proposals tbody tr[data-candidate]').evaluateAll((trs) => trs
        .filter((tr) => tr.querySelector('.per-target')).map((tr) => [Number(tr.dataset.candidate), tr.querySelector('.per-target').textContent]));
    };
    const gains = gates.map((c) => [c.id, perTarget(c.gain)]);
    assert.match(gains[0][1], /^scripted [+−]\d\.\d{3} · twin [+−]\d\.\d{3}$/);

    for (const colorScheme of ['light', 'dark']) {
      await withPage(async (page) => {
        await page.emulateMedia({ colorScheme });
        await page.goto(`${url}/#/run/${encodeURIComponent(runPath)}`);
        await page.locator('#targets-table').waitFor();
        assert.deepEqual(await heatmap(page), wanted, `the Targets heatmap (${colorScheme})`);
        assert.match(await page.locator('#targets-split').textContent(), /^The seed's and the best skill's score on every target, on the validation split \(\d+ tasks\), ± the half-width of the 95% interval; red 0 … green 1\.$/);
        // Low and high scores are told apart by colour; a gain and a loss too.
        const background = (selector) => page.locator(selector).evaluate((node) => getComputedStyle(node).backgroundColor);
        assert.notEqual(await background('tr[data-skill="best"] td[data-target="terse"]'), await background('tr[data-skill="best"] td[data-target="scripted"]'));
        assert.notEqual(await background('tr[data-skill="gain"] td[data-target="terse"]'), await background('tr[data-skill="gain"] td[data-target="scripted"]'));
        const violations = await axe(page);
        assert.deepEqual(violations, [], `axe on the targets run's overview (${colorScheme}):\n${formatViolations(violations)}`);
        await page.evaluate(() => window.scrollTo(0, 0));
        await screenshot(page, colorScheme === 'dark' ? 'targets-dark' : 'targets');
        assert.deepEqual(await proposals(page), gains, 'the per-target gains in the proposals');
        const proposalsViolations = await axe(page);
        assert.deepEqual(proposalsViolations, [], `axe on the targets run's proposals (${colorScheme}):\n${formatViolations(proposalsViolations)}`);
      });
    }

    // The export carries the same views, from the data it embeds.
    const out = path.join(W, 'targets.html');
    execFileSync(BIN, ['ui', 'export', runDir, '-o', out], { cwd: W, stdio: 'pipe', timeout: 60_000 });
    await withPage(async (page) => {
      const requested = [];
      page.on('request', (request) => requested.push(request.url()));
      await page.goto('file://' + out);
      await page.locator('#targets-table').waitFor();
      assert.deepEqual(await heatmap(page), wanted, 'the exported Targets heatmap');
      assert.deepEqual(await proposals(page), gains, 'the exported per-target gains');
      assert.deepEqual(requested.filter((u) => !u.startsWith('file://') && !u.startsWith('data:')), [], 'the export fetches nothing');
    });
  } finally {
    child.kill('SIGTERM');
  }

  // A run on one target shows no Targets view, and no per-target gains.
  await withPage(async (page) => {
    await openRun(page, runs['ticket-gepa']);
    await page.locator('#chart canvas').first().waitFor();
    assert.equal(await page.locator('#targets').count(), 0);
    await page.locator('#tab-proposals').click();
    await page.locator('#proposals tbody tr').first().waitFor();
    assert.equal(await page.locator('#proposals .per-target').count(), 0);
  });
});

test('script in a run\'s skill, tasks, replies and proposals never runs', async () => {
  const response = await fetch(`${base}/`);
  const csp = response.headers.get('content-security-policy') || '';
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);

  const runPath = runs.xss;
  await withPage(async (page) => {
    const safe = async (where) => {
      const state = await page.evaluate(() => ({
        pwned: typeof window.__pwned,
        imgs: document.querySelectorAll('img[src=x], img[onerror]').length,
        scripts: [...document.scripts].map((s) => s.getAttribute('src')),
      }));
      assert.equal(state.pwned, 'undefined', `window.__pwned was set on ${where}`);
      assert.equal(state.imgs, 0, `an <img> of the payload is in the DOM on ${where}`);
      assert.deepEqual(state.scripts, ['/assets/uplot.js', '/assets/app.js'], `a script element was added on ${where}`);
      assert.deepEqual(page.dialogs, [], `a dialog opened on ${where}`);
    };
    const text = async (selector) => (await page.locator(selector).textContent()) || '';

    await openRun(page, runPath);
    await page.locator('#diff').waitFor();
    // The payload is on the page, as text.
    assert.ok((await text('#diff')).includes(PAYLOAD_SCRIPT), 'the seed → best diff does not show the planted <script> as text');
    assert.ok((await text('#diff')).includes(PAYLOAD_IMG), 'the seed → best diff does not show the planted <img> as text');
    await page.locator('#lineage [data-candidate="1"]').click();
    await page.locator('#candidate-details').waitFor();
    assert.ok((await text('#candidate-details')).includes(PAYLOAD_SCRIPT), 'the candidate details do not show the planted rationale');
    await page.mouse.move(0, 0);
    await page.locator('#chart').evaluate((chart) => chart.scrollIntoView({ block: 'center' }));
    const over = await page.locator('#chart .u-over').boundingBox();
    await page.mouse.move(over.x + over.width - 3, over.y + over.height / 2, { steps: 5 });
    await safe('the overview');

    await page.locator('#tab-lines').click();
    await page.locator('#blame').waitFor();
    assert.ok((await text('#blame')).includes(PAYLOAD_IMG), 'the lines tab does not show the planted <img> as text');
    await safe('the lines tab');

    await page.locator('#tab-tasks').click();
    await page.locator('#tasks tbody tr[data-task]').first().waitFor();
    await page.locator('#task-candidate').selectOption('0');
    await until(async () => (await text('#tasks tbody')).includes(PAYLOAD_REPLY), 'the tasks tab never showed the planted reply as text');
    assert.ok((await text('#tasks tbody')).includes(PAYLOAD_SCRIPT), 'the tasks tab does not show the planted input as text');
    await safe('the tasks tab');

    await page.locator('#tab-proposals').click();
    await page.locator('#proposals tbody tr[data-candidate]').first().waitFor();
    assert.ok((await text('#proposals')).includes(PAYLOAD_SCRIPT), 'the proposals tab does not show the planted rationale as text');
    await safe('the proposals tab');

    await page.locator('#tab-report').click();
    await page.locator('#report').waitFor();
    assert.ok((await text('#report')).trim().length > 0, 'the report is empty');
    await safe('the report tab');

    for (const tab of ['heatmap', 'usage']) {
      await page.locator(`#tab-${tab}`).click();
      await safe(`the ${tab} tab`);
    }
    await page.locator('#tab-tasks').click();
    await page.locator('#tasks tbody tr[data-task]').first().waitFor();
    await screenshot(page, 'xss');
  });
});

test('the list and a run page work from the keyboard', async () => {
  await withPage(async (page) => {
    await page.goto(`${base}/`);
    await until(async () => (await dataRows(page).count()) >= 4, 'the runs list did not load');
    let presses = 0;
    const focusedRunLink = () => page.evaluate(() => {
      const a = document.activeElement;
      return a && a.matches('#runs a[href^="#/run/"]') ? a.getAttribute('href') : null;
    });
    let href = await focusedRunLink();
    while (!href && presses < 40) {
      await page.keyboard.press('Tab');
      presses += 1;
      href = await focusedRunLink();
    }
    assert.ok(href, 'no run link took the focus in 40 presses of Tab');
    await page.keyboard.press('Enter');
    await until(() => new URL(page.url()).hash === href, `Enter on ${href} did not open it`);
    await page.locator('#tab-overview[aria-selected="true"]').waitFor();

    // The tabs: arrow keys move the selection and the focus.
    await page.locator('#tab-overview').focus();
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.locator('#tab-lines').getAttribute('aria-selected'), 'true');
    assert.equal(await page.locator('#tab-overview').getAttribute('aria-selected'), 'false');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-lines');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await page.locator('#tab-overview').getAttribute('aria-selected'), 'true');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await page.locator('#tab-report').getAttribute('aria-selected'), 'true', 'ArrowLeft on the first tab does not wrap to the last');
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.locator('#tab-overview').getAttribute('aria-selected'), 'true');

    // The lineage: Tab reaches a node, Enter on it shows its details.
    assert.equal(await page.locator('#candidate-details').count(), 0);
    let node = null;
    for (let i = 0; i < 40 && node === null; i += 1) {
      await page.keyboard.press('Tab');
      node = await page.evaluate(() => document.activeElement?.closest?.('#lineage [data-candidate]')?.dataset.candidate ?? null);
    }
    assert.ok(node !== null, 'Tab from the tabs never reached a lineage node');
    await page.keyboard.press('Enter');
    await page.locator('#candidate-details').waitFor();
    assert.match(await page.locator('#candidate-details').textContent(), new RegExp(`^Candidate ${node}(?!\\d)`));
    await page.keyboard.press('Tab');
    const next = await page.evaluate(() => document.activeElement?.dataset?.candidate ?? null);
    if (next !== null) {
      await page.keyboard.press(' ');
      await until(async () => (await page.locator('#candidate-details').textContent()).startsWith(`Candidate ${next}`), 'Space on a lineage node did not show it');
    }

    // The skip link moves the focus to the content and stays on the page.
    const here = page.url();
    await page.locator('a[href="#main"]').focus();
    assert.ok(await page.locator('a[href="#main"]').evaluate((a) => a.getBoundingClientRect().width > 1), 'the focused skip link is not visible');
    await page.keyboard.press('Enter');
    await sleep(300);
    assert.equal(page.url(), here, 'the skip link left the run page');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
    await page.locator('#tab-overview').waitFor();
  });
});

test('axe finds no WCAG 2 A/AA violation on the list and a run page', async () => {
  for (const colorScheme of ['light', 'dark']) {
    await withPage(async (page) => {
      await page.emulateMedia({ colorScheme });
      const problems = [];
      const audit = async (where) => {
        const violations = await axe(page);
        if (violations.length) problems.push(`${where} (${colorScheme}):\n${formatViolations(violations)}`);
      };
      await page.goto(`${base}/`);
      await until(async () => (await dataRows(page).count()) >= 4, 'the runs list did not load');
      await audit('the runs list');

      await openRun(page, runs['ticket-gepa']);
      await page.locator('#chart canvas').first().waitFor();
      await page.locator('#diff').waitFor();
      await audit('a run page, overview');
      if (colorScheme === 'dark') await screenshot(page, 'run-dark');

      await page.locator('#tab-tasks').click();
      await page.locator('#tasks tbody tr[data-task]').first().waitFor();
      await audit('a run page, tasks');
      assert.deepEqual(problems, [], `axe violations:\n${problems.join('\n')}`);
    });
  }
});
