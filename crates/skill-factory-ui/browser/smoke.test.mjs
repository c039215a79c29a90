// Self-test of harness.mjs: a static page served on loopback, opened in Debian's Chromium,
// clicked, screenshotted and checked with axe-core. Run it as:
//   SKILL_FACTORY_BROWSER_MODULES="$(scripts/setup-browser.sh)" \
//     node --test crates/skill-factory-ui/browser/smoke.test.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { statSync } from 'node:fs';
import { axe, formatViolations, launch, screenshot } from './harness.mjs';

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Harness smoke test</title>
  <style>
    body { font: 16px/1.5 system-ui, sans-serif; margin: 2rem; color: #1a1a1a; background: #fff; }
    button { font: inherit; padding: .5rem 1rem; color: #fff; background: #1f4e99; border: 0; border-radius: 4px; }
    button:focus-visible { outline: 3px solid #1a1a1a; outline-offset: 2px; }
  </style>
</head>
<body>
  <main>
    <h1>Harness smoke test</h1>
    <p id="status" role="status">Not clicked yet.</p>
    <button type="button" id="go">Say hello</button>
  </main>
  <script>
    document.getElementById('go').addEventListener('click', () => {
      document.getElementById('status').textContent = 'Hello from the button.';
    });
  </script>
</body>
</html>
`;

let server;
let base;
let browser;

before(async () => {
  server = createServer((req, res) => {
    if (req.url === '/' || req.url === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(PAGE);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
});

test('a page on loopback opens, reacts to a click, and is screenshotted', async () => {
  const page = await browser.newPage();
  try {
    const response = await page.goto(`${base}/`);
    assert.equal(response.status(), 200);
    assert.equal(await page.title(), 'Harness smoke test');
    const status = page.getByRole('status');
    assert.equal(await status.textContent(), 'Not clicked yet.');

    await page.getByRole('button', { name: 'Say hello' }).click();
    assert.equal(await status.textContent(), 'Hello from the button.');

    const file = await screenshot(page, 'smoke');
    assert.ok(file.endsWith('/smoke.png'), file);
    assert.ok(statSync(file).size > 1000, `${file} is too small to be a screenshot`);
  } finally {
    await page.close();
  }
});

test('axe finds no WCAG 2 A/AA violation on an accessible page', async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`${base}/`);
    const violations = await axe(page);
    assert.deepEqual(violations, [], `axe violations:\n${formatViolations(violations)}`);
  } finally {
    await page.close();
  }
});

test('axe reports a violation on an inaccessible page', async () => {
  // Guards against an axe() that silently checks nothing.
  const page = await browser.newPage();
  try {
    await page.goto(`${base}/`);
    await page.evaluate(() => {
      document.documentElement.removeAttribute('lang');
      document.getElementById('go').textContent = '';
    });
    const ids = (await axe(page)).map((v) => v.id).sort();
    assert.deepEqual(ids, ['button-name', 'html-has-lang']);
  } finally {
    await page.close();
  }
});

test('the browser reaches nothing but loopback', async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`${base}/`);
    // A name that never resolves (RFC 2606); with the harness's flags it is not even looked up.
    const outcome = await page.evaluate(async () => {
      try {
        await fetch('http://skill-factory.invalid/', { cache: 'no-store' });
        return 'fetched';
      } catch (e) {
        return `failed: ${e}`;
      }
    });
    assert.match(outcome, /^failed: /);
    const failure = await page
      .goto('http://skill-factory.invalid/')
      .then(() => null, (e) => String(e));
    assert.match(failure ?? '', /net::ERR_(PROXY_CONNECTION_FAILED|NAME_NOT_RESOLVED)/);
  } finally {
    await page.close();
  }
});
