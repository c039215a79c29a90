// Times the dashboards in headless Chromium and over HTTP (bench/ui.sh runs it).
//
//   node bench/ui_bench.mjs OURS_URL PEER_URL RUNS BIG_PATH REPEATS
//
// OURS_URL serves bench/ui_data.py's list/ folder, PEER_URL (or "-") the Python tool's dashboard
// on the same folder; BIG_PATH is the 10,000-rollout run's path under OURS_URL's second root,
// given as URL|path. Prints one JSON object of medians, in milliseconds.
import { launch } from '../crates/skill-factory-ui/browser/harness.mjs';

const [ours, peer, runsArg, big, repeatsArg] = process.argv.slice(2);
const runs = Number(runsArg);
const repeats = Number(repeatsArg || 5);
const [bigUrl, bigPath] = big.split('|');

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

async function http(url, times) {
  const spent = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    const response = await fetch(url);
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`${url}: ${response.status}`);
    spent.push(performance.now() - started);
  }
  return median(spent);
}

/** Milliseconds from navigation start until `ready` holds in the page, median of `repeats`. */
async function rendered(page, url, ready, arg) {
  const spent = [];
  for (let i = 0; i < repeats; i++) {
    await page.goto('about:blank');
    await page.goto(url);
    await page.waitForFunction(ready, arg, { timeout: 60_000, polling: 'raf' });
    spent.push(await page.evaluate(() => performance.now()));
  }
  return median(spent);
}

const browser = await launch();
const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
const result = { runs, repeats };
result.ours_api_runs_ms = await http(`${ours}/api/runs`, 50);
result.ours_list_rendered_ms = await rendered(page, `${ours}/`,
  (n) => (document.querySelector('#count') || {}).textContent === `${n} of ${n} runs`, runs);
// The list keeps only the rows near the view: the time to scroll to its end and see the last
// (oldest) run drawn.
result.ours_list_scroll_to_end_ms = await (async () => {
  const spent = [];
  for (let i = 0; i < repeats; i++) {
    await page.goto(`${ours}/`);
    await page.waitForFunction((n) => (document.querySelector('#count') || {}).textContent === `${n} of ${n} runs`, runs);
    spent.push(await page.evaluate(() => new Promise((resolve) => {
      const started = performance.now();
      window.scrollTo(0, document.body.scrollHeight);
      const rows = document.querySelectorAll('#runs tbody tr[data-path]');
      const check = () => {
        const last = document.querySelector(`#runs tbody tr[aria-rowindex="${document.querySelector('#runs').getAttribute('aria-rowcount')}"]`);
        if (last) resolve(performance.now() - started); else requestAnimationFrame(check);
      };
      check();
    })));
  }
  return median(spent);
})();
if (peer !== '-') {
  result.peer_api_runs_ms = await http(`${peer}/api/runs`, 20);
  result.peer_list_rendered_ms = await rendered(page, `${peer}/`,
    (n) => document.querySelectorAll('#runs li').length >= n, runs);
}
const enc = encodeURIComponent(bigPath);
// The first read of the big run parses its files; later ones are served from memory until
// the files change.
const cold = performance.now();
const first = await fetch(`${bigUrl}/api/run?path=${enc}`);
const body = await first.json();
result.big_rollouts = body.rollouts;
result.big_candidates = body.candidates.length;
result.big_api_run_cold_ms = performance.now() - cold;
result.big_api_run_warm_ms = await http(`${bigUrl}/api/run?path=${enc}`, 20);
result.big_api_tasks_page_ms = await http(`${bigUrl}/api/run/tasks?path=${enc}&candidate=0&only=failures&offset=50`, 20);
result.big_api_heatmap_ms = await http(`${bigUrl}/api/run/heatmap?path=${enc}&split=val`, 5);
result.big_run_page_rendered_ms = await rendered(page, `${bigUrl}/#/run/${enc}`,
  () => !!document.querySelector('#chart canvas') && document.querySelectorAll('#lineage [data-candidate]').length > 0 && !!document.querySelector('#diff'));
result.big_tasks_tab_rendered_ms = await rendered(page, `${bigUrl}/#/run/${enc}`, () => {
  const tab = document.querySelector('#tab-tasks');
  if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
  return document.querySelectorAll('#tasks tbody tr[data-task]').length === 50;
});
await browser.close();
for (const [key, value] of Object.entries(result)) if (typeof value === 'number' && !Number.isInteger(value)) result[key] = Math.round(value * 10) / 10;
console.log(JSON.stringify(result));
