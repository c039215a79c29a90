// Skill Factory dashboard: the runs list, a run's page, comparisons and jobs.
// Plain DOM, no framework. Every string from a run goes into the page as a text node
// (el() below); nothing is ever parsed as HTML. In a static export (`ui export`) the data
// comes from the export's JSON block (id "sf-export") instead of the API, and launching, the live
// stream and arbitrary diffs are left out.
(function () {
  'use strict';

  const EXPORTED = (function () {
    const block = document.getElementById('sf-export');
    return block ? JSON.parse(block.textContent) : null;
  })();

  // ---------- small helpers ----------

  /** An element: el('td', {class: 'num', onclick: f}, child, 'text', ...). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else if (key === 'class') node.className = value;
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    append(node, children);
    return node;
  }
  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function svg(tag, attrs) {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  const fmt = (x, digits = 3) => (x === null || x === undefined || Number.isNaN(x) ? '–' : Number(x).toFixed(digits));
  const money = (x) => (x === null || x === undefined ? '–' : '$' + Number(x).toFixed(x < 0.01 ? 4 : 2));
  // One formatter for every number: toLocaleString builds a new one per call, slow over 1,000 rows.
  const numbers = new Intl.NumberFormat('en-US');
  const count = (x) => (x === null || x === undefined ? '–' : numbers.format(x));
  const badge = (state) => el('span', { class: 'badge s-' + state }, String(state).replace('_', ' '));
  function delta(before, after) {
    if (before === null || after === null || before === undefined || after === undefined) return '';
    const d = (after - before) * 100;
    const cls = d > 0.05 ? 'up' : d < -0.05 ? 'down' : 'muted';
    return el('span', { class: cls }, (d >= 0 ? ' +' : ' ') + d.toFixed(1) + ' pts');
  }
  // An interval as the page writes it: `0.412–0.588`; a gain in points: `+4.1 to +12.3 pts`.
  const span = (pair, digits = 3) => (Array.isArray(pair) && pair.length === 2 ? fmt(pair[0], digits) + '–' + fmt(pair[1], digits) : '–');
  const points = (x) => (x === null || x === undefined ? '–' : (x >= 0 ? '+' : '') + (x * 100).toFixed(1));
  const gainSpan = (pair) => (Array.isArray(pair) && pair.length === 2 ? points(pair[0]) + ' to ' + points(pair[1]) + ' pts' : '–');
  // A signed score, `+0.250` or `−0.125` (a true minus sign).
  const signed = (x) => (x === null || x === undefined ? '–' : (x < 0 && fmt(-x) !== '0.000' ? '−' : '+') + fmt(Math.abs(x)));
  // A gate's gain on each target of a run over several, `a +0.250 · b −0.125` (no break
  // inside a target's pair); empty for a run of one target.
  const perTarget = (gain) => Object.entries((gain && gain.per_target) || {})
    .flatMap(([name, x], i) => [i ? ' · ' : null, el('span', { class: 'pair' }, name + ' ' + signed(x))]);
  // `95%`, from a run's noise.confidence (0.95 when the run does not say).
  const percent = (result) => Math.round(((result && result.noise && result.noise.confidence) || 0.95) * 1000) / 10 + '%';
  function when(text) {
    if (!text) return '–';
    const date = new Date(text);
    return Number.isNaN(date.getTime()) ? text : date.toISOString().replace('T', ' ').slice(0, 16);
  }
  const enc = encodeURIComponent;

  async function answer(response) {
    const text = await response.text();
    let body;
    try { body = JSON.parse(text); } catch (e) { body = { error: text || response.statusText }; }
    if (!response.ok) throw new Error(body.error || response.statusText);
    return body;
  }
  const getJson = async (url) => answer(await fetch(url, { headers: { Accept: 'application/json' } }));
  const postJson = async (url, body) => answer(await fetch(url, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body || {}),
  }));

  // ---------- data: the API, or the export's block ----------

  const api = EXPORTED ? {
    run: async () => EXPORTED.run,
    tasks: async (path, q) => {
      const key = (q.candidate ?? EXPORTED.run.best) + '/' + (q.split || 'val');
      const table = EXPORTED.tables[key];
      if (!table) return { total: 0, offset: 0, limit: 50, rows: [], note: 'not in this export' };
      let rows = table.rows;
      if (q.only === 'failures') rows = rows.filter((r) => r.score < 1 - 1e-9);
      if (q.search) { const s = q.search.toLowerCase(); rows = rows.filter((r) => [r.task_id, r.input, r.output, r.feedback].some((f) => (f || '').toLowerCase().includes(s))); }
      return { ...table, total: rows.length, rows: rows.slice(q.offset || 0, (q.offset || 0) + 50), offset: q.offset || 0, limit: 50 };
    },
    diff: async (path, a, b) => {
      const run = EXPORTED.run;
      if (a === 0 && b === run.best) return { a, b, lines: run.seed_diff };
      const found = EXPORTED.diffs[a + '/' + b];
      if (found) return found;
      throw new Error('this export holds the diff of each candidate against its parent and of the seed against the best; open the dashboard for any other pair');
    },
    heatmap: async () => ({ candidates: [], tasks: [], scores: [] }),
  } : {
    runs: () => getJson('/api/runs'),
    run: (path) => getJson('/api/run?path=' + enc(path)),
    tasks: (path, q) => {
      const params = new URLSearchParams({ path });
      for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') params.set(k, v);
      return getJson('/api/run/tasks?' + params);
    },
    diff: (path, a, b) => getJson('/api/run/diff?path=' + enc(path) + '&a=' + a + '&b=' + b),
    heatmap: (path, split) => getJson('/api/run/heatmap?path=' + enc(path) + '&split=' + enc(split)),
    compare: (q) => getJson('/api/compare?' + new URLSearchParams(q)),
    jobs: () => getJson('/api/jobs'),
    launch: (command, config) => postJson('/api/jobs', { command, config }),
    cancel: (id) => postJson('/api/jobs/' + enc(id) + '/cancel'),
  };

  // ---------- the live stream: one per tab ----------

  const state = { jobs: [], onEvent: null, onRuns: null, onJobs: null, source: null, follow: null };

  function follow(path, after) {
    if (EXPORTED) return;
    const key = (path || '') + '#' + (after || 0);
    if (state.source && state.follow === key) return;
    if (state.source) state.source.close();
    const params = new URLSearchParams();
    if (path) { params.set('path', path); params.set('after', after || 0); }
    state.follow = key;
    state.source = new EventSource('/api/stream?' + params);
    state.source.addEventListener('jobs', (e) => { state.jobs = JSON.parse(e.data); if (state.onJobs) state.onJobs(); });
    state.source.addEventListener('runs', () => { if (state.onRuns) state.onRuns(); });
    state.source.addEventListener('event', (e) => { if (state.onEvent) state.onEvent(JSON.parse(e.data)); });
  }

  // ---------- the shell ----------

  const app = document.getElementById('app');
  const main = el('main', { id: 'main', tabindex: '-1' });
  function shell() {
    const header = el('header', { class: 'top' },
      el('a', { class: 'brand', href: EXPORTED ? '#' : '#/' }, 'Skill Factory'),
      EXPORTED ? el('span', { class: 'muted' }, 'exported run report') : el('nav', { 'aria-label': 'Sections' },
        el('a', { href: '#/' }, 'Runs'), el('a', { href: '#/compare' }, 'Compare'), el('a', { href: '#/jobs' }, 'Jobs')),
      el('span', { class: 'root', id: 'root' }));
    // The skip link focuses the content itself: following its href would change the hash,
    // which routes (to the runs list).
    const skip = el('a', { class: 'sr-only skip', href: '#main', onclick: (e) => { e.preventDefault(); main.focus(); } }, 'Skip to content');
    append(app, [skip, header, main]);
  }

  function route() {
    state.onEvent = state.onRuns = state.onJobs = null;
    clear(main);
    const hash = decodeURIComponent(location.hash.replace(/^#/, '')) || '/';
    if (EXPORTED) return runPage(EXPORTED.run.path);
    const [where, query] = hash.split('?');
    const params = new URLSearchParams(query || '');
    if (where.startsWith('/run/')) return runPage(where.slice('/run/'.length));
    if (where === '/compare') return comparePage(params);
    if (where === '/jobs') return jobsPage();
    if (where.startsWith('/job/')) return jobPage(where.slice('/job/'.length));
    return listPage();
  }
  const runLink = (path) => '#/run/' + enc(path);

  function failed(error) {
    append(main, [el('p', { class: 'error', role: 'alert' }, 'Could not load: ' + error.message)]);
  }

  // ---------- runs list ----------

  function listPage() {
    document.title = 'Runs · Skill Factory';
    const view = { search: '', status: '', kind: '', sort: 'started', desc: true, picked: new Set() };
    const search = el('input', { type: 'search', id: 'search', placeholder: 'config, optimizer, run id', 'aria-label': 'Search runs' });
    const status = el('select', { id: 'status', 'aria-label': 'Status' },
      ['', 'running', 'done', 'stopped', 'failed'].map((s) => el('option', { value: s }, s || 'any status')));
    const kind = el('select', { id: 'kind', 'aria-label': 'Kind' },
      ['', 'skill', 'classifier'].map((s) => el('option', { value: s }, s || 'any kind')));
    const compareButton = el('button', { id: 'compare-picked', disabled: true, onclick: () => {
      const [a, b] = [...view.picked];
      location.hash = '#/compare?' + new URLSearchParams({ a, b });
    } }, 'Compare the two picked');
    const counter = el('span', { class: 'muted', id: 'count', 'aria-live': 'polite' });
    const body = el('tbody');
    const problems = el('div');
    const table = el('table', { class: 'runs', id: 'runs' });
    const columns = [
      ['config_name', 'Config'], ['run_id', 'Run'], ['optimizer', 'Optimizer'], ['status', 'Status'],
      ['best_val', 'Validation', 'num'], ['test_best', 'Test', 'num'], ['calls', 'Calls', 'num'],
      ['tokens', 'Tokens', 'num'], ['cost_usd', 'Cost', 'num'], ['started_at', 'Started (UTC)'],
    ];
    const head = el('tr', {}, el('th', {}, el('span', { class: 'sr-only' }, 'Pick')), columns.map(([key, label, cls]) =>
      el('th', { class: cls, scope: 'col' }, el('button', { class: 'sort', onclick: () => {
        view.desc = view.sort === key ? !view.desc : true; view.sort = key; draw();
      } }, label))));
    append(table, [el('thead', {}, head), body]);
    append(main, [
      el('h1', {}, 'Runs'),
      launcher(),
      el('div', { class: 'panel' },
        el('div', { class: 'row' }, search, status, kind, compareButton, el('span', { class: 'grow' }), counter),
        table),
      problems,
    ]);
    let runs = [];
    function draw() {
      const needle = view.search.toLowerCase();
      const shown = runs.filter((r) =>
        (!view.status || r.status === view.status) && (!view.kind || r.kind === view.kind) &&
        (!needle || [r.config_name, r.optimizer, r.run_id, r.path].some((f) => (f || '').toLowerCase().includes(needle))));
      shown.sort((a, b) => {
        const x = a[view.sort], y = b[view.sort];
        const order = x === y ? 0 : x === null || x === undefined ? 1 : y === null || y === undefined ? -1 : x < y ? -1 : 1;
        return view.desc ? -order : order;
      });
      const focused = document.activeElement;
      current = shown;
      rendered = [0, 0];
      clear(body);
      if (!shown.length) body.appendChild(el('tr', {}, el('td', { colspan: 11, class: 'empty' },
        runs.length ? 'No run matches.' : 'No runs yet: run `skill-factory optimize -c CONFIG`, or launch one above.')));
      table.setAttribute('aria-rowcount', String(shown.length + 1));
      windowRows();
      // A refresh redraws the rows; the one that had the focus keeps it.
      if (focused && focused !== document.activeElement && focused.isConnected) focused.focus({ preventScroll: true });
      counter.textContent = shown.length + ' of ' + runs.length + ' runs';
    }
    // Only the rows near the viewport are in the page (a thousand rows of a table take
    // Chromium longer to lay out than the whole list should take to appear): two spacer rows
    // stand for the others, and scrolling slides the window. Rows that stay in the window are
    // kept as they are, so the focused one keeps its focus and Tab walks on row by row.
    const ROW = 34, AHEAD = 30;
    let current = [], rendered = [0, 0];
    const made = new Map();
    const spacer = () => el('tr', { class: 'spacer', 'aria-hidden': 'true' }, el('td', { colspan: 11 }));
    const topSpace = spacer(), bottomSpace = spacer();
    const rowOf = (path) => made.get(path).tr;
    function row(r, index) {
      const key = JSON.stringify(r);
      let tr = made.has(r.path) && made.get(r.path).key === key ? rowOf(r.path) : null;
      if (!tr) {
        const pick = el('input', { type: 'checkbox', 'aria-label': 'Pick ' + r.path + ' to compare', onchange: (e) => {
          if (e.target.checked) view.picked.add(r.path); else view.picked.delete(r.path);
          compareButton.disabled = view.picked.size !== 2;
        } });
        pick.checked = view.picked.has(r.path);
        tr = el('tr', { 'data-path': r.path },
          el('td', {}, pick),
          el('td', {}, el('a', { href: runLink(r.path), title: r.path }, r.config_name || r.path)),
          el('td', { class: 'mono' }, r.run_id),
          el('td', {}, r.optimizer, r.kind === 'classifier' ? el('span', { class: 'muted' }, ' · classifier') : ''),
          el('td', {}, badge(r.status)),
          el('td', { class: 'num' }, fmt(r.baseline_val), ' → ', fmt(r.best_val), delta(r.baseline_val, r.best_val)),
          el('td', { class: 'num' }, r.test_best === null || r.test_best === undefined ? '–' : [fmt(r.test_seed), ' → ', fmt(r.test_best)]),
          el('td', { class: 'num' }, count(r.calls)),
          el('td', { class: 'num' }, count(r.tokens)),
          el('td', { class: 'num' }, money(r.cost_usd)),
          el('td', {}, when(r.started_at)));
        made.set(r.path, { tr, key });
      }
      tr.setAttribute('aria-rowindex', String(index + 2));
      return tr;
    }
    function windowRows() {
      if (!current.length) return;
      const top = body.getBoundingClientRect().top;
      const first = Math.max(0, Math.floor(-top / ROW) - AHEAD);
      const last = Math.min(current.length, first + Math.ceil(window.innerHeight / ROW) + 2 * AHEAD);
      const [from, to] = rendered;
      if (first === from && last === to) return;
      if (first >= to || last <= from || to === 0) {
        for (let i = from; i < to; i++) made.get(current[i].path)?.tr.remove();
        const rows = document.createDocumentFragment();
        for (let i = first; i < last; i++) rows.appendChild(row(current[i], i));
        body.insertBefore(rows, bottomSpace.isConnected ? bottomSpace : null);
      } else {
        for (let i = from; i < first; i++) rowOf(current[i].path).remove();
        for (let i = last; i < to; i++) rowOf(current[i].path).remove();
        const before = document.createDocumentFragment();
        for (let i = first; i < from; i++) before.appendChild(row(current[i], i));
        body.insertBefore(before, topSpace.nextSibling);
        const after = document.createDocumentFragment();
        for (let i = Math.max(to, first); i < last; i++) after.appendChild(row(current[i], i));
        body.insertBefore(after, bottomSpace);
      }
      if (!topSpace.isConnected) body.insertBefore(topSpace, body.firstChild);
      if (!bottomSpace.isConnected) body.appendChild(bottomSpace);
      topSpace.style.height = first * ROW + 'px';
      bottomSpace.style.height = (current.length - last) * ROW + 'px';
      rendered = [first, last];
    }
    let ticking = false;
    const onScroll = () => { if (!ticking) { ticking = true; requestAnimationFrame(() => { ticking = false; if (body.isConnected) windowRows(); }); } };
    window.addEventListener('scroll', onScroll, { passive: true });
    window.addEventListener('resize', onScroll, { passive: true });
    async function load() {
      try {
        const data = await api.runs();
        document.getElementById('root').textContent = data.root;
        runs = data.runs;
        clear(problems);
        if (data.problems.length) append(problems, [el('div', { class: 'panel' },
          el('h2', {}, 'Result files that could not be read'), el('ul', {}, data.problems.map((p) => el('li', { class: 'mono' }, p))))]);
        draw();
      } catch (error) { failed(error); }
    }
    search.addEventListener('input', () => { view.search = search.value; draw(); });
    status.addEventListener('change', () => { view.status = status.value; draw(); });
    kind.addEventListener('change', () => { view.kind = kind.value; draw(); });
    state.onRuns = load;
    follow(null);
    load();
    search.focus();
  }

  // ---------- launching and jobs ----------

  function launcher() {
    const config = el('input', { id: 'config', type: 'text', size: 48, placeholder: 'examples/ticket-classifier/config.offline.yaml', 'aria-label': 'Config path, under the working directory' });
    const message = el('span', { id: 'launch-message', role: 'status' });
    const go = (command) => async () => {
      message.textContent = '';
      try {
        const job = await api.launch(command, config.value.trim());
        location.hash = '#/job/' + enc(job.id);
      } catch (error) { message.textContent = error.message; message.className = 'error'; }
    };
    return el('form', { class: 'panel row', onsubmit: (e) => { e.preventDefault(); go('optimize')(); } },
      el('label', { for: 'config' }, 'Launch'), config,
      el('button', { class: 'primary', type: 'submit', id: 'launch-optimize' }, 'Optimize'),
      el('button', { type: 'button', id: 'launch-evaluate', onclick: go('evaluate') }, 'Evaluate'), message);
  }

  function jobRow(job) {
    const cancel = job.state === 'running' && el('button', { onclick: async () => {
      try { await api.cancel(job.id); } catch (error) { alert(error.message); }
    } }, 'Cancel');
    return el('tr', { 'data-job': job.id },
      el('td', { class: 'mono' }, el('a', { href: '#/job/' + enc(job.id) }, job.id)),
      el('td', {}, job.command), el('td', { class: 'mono' }, job.config), el('td', {}, badge(job.state)),
      el('td', {}, job.run ? el('a', { href: runLink(job.run) }, 'run page') : '–'),
      el('td', { class: 'num' }, job.exit_code ?? '–'), el('td', {}, cancel || ''));
  }

  function jobsPage() {
    document.title = 'Jobs · Skill Factory';
    const body = el('tbody');
    append(main, [el('h1', {}, 'Jobs'), launcher(), el('div', { class: 'panel' }, el('table', { id: 'jobs' },
      el('thead', {}, el('tr', {}, ['Job', 'Command', 'Config', 'State', 'Run', 'Exit', ''].map((h) => el('th', { scope: 'col' }, h)))), body))]);
    const draw = () => {
      clear(body);
      append(body, [state.jobs.map(jobRow)]);
      if (!state.jobs.length) body.appendChild(el('tr', {}, el('td', { colspan: 7, class: 'empty' }, 'No jobs yet.')));
    };
    state.onJobs = draw;
    follow(null);
    api.jobs().then((jobs) => { state.jobs = jobs; draw(); }).catch(failed);
  }

  function jobPage(id) {
    document.title = id + ' · Skill Factory';
    const box = el('div', { class: 'panel', id: 'job', 'aria-live': 'polite' });
    append(main, [el('h1', {}, 'Job ', el('span', { class: 'mono' }, id)), box]);
    const draw = () => {
      const job = state.jobs.find((j) => j.id === id);
      clear(box);
      if (!job) { box.textContent = 'Waiting for the job…'; return; }
      if (job.run && job.command === 'optimize') { location.replace(runLink(job.run)); return; }
      append(box, [el('table', {}, el('tbody', {}, jobRow(job)))]);
      if (job.command === 'evaluate') append(box, [el('p', { class: 'muted' }, 'Its report is in ', el('span', { class: 'mono' }, job.log), ' under the runs root.')]);
    };
    state.onJobs = draw;
    follow(null);
    api.jobs().then((jobs) => { state.jobs = jobs; draw(); }).catch(failed);
  }

  // ---------- a run ----------

  async function runPage(path) {
    let data;
    try { data = await api.run(path); } catch (error) { return failed(error); }
    const s = data.summary;
    document.title = (s.config_name || path) + ' · ' + s.run_id + ' · Skill Factory';
    if (data.summary.kind === 'classifier') return classifierPage(path, data);
    const result = data.result;
    const tiles = el('div', { class: 'tiles', id: 'tiles' });
    const live = el('div', { id: 'live', 'aria-live': 'polite' });
    const drawTiles = () => {
      clear(tiles);
      const spent = s.status === 'running' && data.live && data.live.spent;
      const tile = (k, ...v) => el('div', { class: 'tile' }, el('div', { class: 'k' }, k), el('div', { class: 'v' }, ...v));
      const headline = result.headline;
      const noise = result.noise;
      append(tiles, [
        tile('Status', badge(s.status)),
        tile('Validation', fmt(s.baseline_val), '\u00a0→\u00a0', fmt(s.best_val), el('div', { class: 'sub' }, delta(s.baseline_val, s.best_val)),
          headline ? el('div', { class: 'sub', id: 'headline' }, percent(result), ' interval ', span(headline.best.interval), headline.source === 'fresh_samples' ? ', on fresh samples' : '') : null),
        tile('Held-out test', s.test_best === null || s.test_best === undefined ? el('span', { class: 'muted' }, result.test && result.test.skipped ? 'not scored' : 'none') : [fmt(s.test_seed), ' → ', fmt(s.test_best)]),
        tile('Candidates', count(data.candidates.length)),
        // While it runs, the spending of its last event: result.json is rewritten once a round.
        tile('Model calls', count(spent ? spent.calls : s.calls)),
        tile('Tokens', count(spent ? spent.tokens : s.tokens)),
        tile('Cost', money(spent ? spent.usd : s.cost_usd)),
        tile('Started (UTC)', when(s.started_at)),
        noise ? el('div', { class: 'tile', id: 'regime', title: (noise.reasons || []).join('; ') },
          el('div', { class: 'k' }, 'Regime'), el('div', { class: 'v' }, noise.regime),
          el('div', { class: 'sub' }, noise.regime === 'noisy' ? 'paired gates, ' + noise.max_samples + ' samples at most' : 'means compared')) : null,
      ]);
    };
    drawTiles();
    const header = el('div', { class: 'row' },
      el('h1', { class: 'grow' }, s.config_name || path, ' ', el('span', { class: 'muted mono' }, s.run_id)),
      el('span', { class: 'muted' }, 'optimizer ', el('b', {}, s.optimizer)));
    const stop = result.stop_detail ? el('p', { class: 'muted', id: 'stop' }, 'Stopped: ', result.stop_detail) : null;
    const tabNames = [['overview', 'Overview'], ['lines', 'Where lines came from'], ['proposals', 'Proposals'], ['tasks', 'Tasks'], ['heatmap', 'Heatmap'], ['usage', 'Usage'], ['report', 'Report']];
    const panel = el('div', { id: 'tab-panel', role: 'tabpanel' });
    const tabButtons = tabNames.filter(([key]) => !(EXPORTED && key === 'heatmap')).map(([key, label]) =>
      el('button', { role: 'tab', id: 'tab-' + key, 'aria-selected': 'false', 'aria-controls': 'tab-panel', onclick: () => show(key) }, label));
    const tabs = el('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Run views', onkeydown: (e) => {
      const at = tabButtons.indexOf(document.activeElement);
      if (at < 0 || (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft')) return;
      const next = tabButtons[(at + (e.key === 'ArrowRight' ? 1 : tabButtons.length - 1)) % tabButtons.length];
      next.focus(); next.click();
    } }, tabButtons);
    append(main, [header, tiles, live, stop, tabs, panel]);
    const views = { overview, lines, proposals, tasks, heatmap, usage, report };
    let current = null;
    function show(key) {
      current = key;
      for (const b of tabButtons) b.setAttribute('aria-selected', String(b.id === 'tab-' + key));
      for (const b of tabButtons) b.tabIndex = b.id === 'tab-' + key ? 0 : -1;
      panel.setAttribute('aria-labelledby', 'tab-' + key);
      clear(panel);
      views[key](panel, data, path);
    }
    show('overview');

    // Live: a running run follows its events; its page data is read again at most once a second.
    const drawLive = () => {
      clear(live);
      if (s.status !== 'running' || EXPORTED) return;
      const started = (data.live && data.live.started) || {};
      const spent = (data.live && data.live.spent) || {};
      const budget = started.budget || {};
      const job = state.jobs.find((j) => j.run === path && (j.state === 'running' || j.state === 'cancelling'));
      const left = [];
      if (budget.max_calls) left.push(count(budget.max_calls - (spent.calls || 0)) + ' calls');
      if (budget.max_usd) left.push(money(budget.max_usd - (spent.usd || 0)));
      if (budget.max_tokens) left.push(count(budget.max_tokens - (spent.tokens || 0)) + ' tokens');
      append(live, [el('div', { class: 'panel live row', id: 'live-panel' },
        el('b', {}, 'Running'),
        // A search without a round limit (gepa: its metric-call budget ends it) records 0 rounds.
        el('span', {}, 'round ', el('span', { id: 'live-round' }, String(data.live.round ?? 0)), started.rounds ? ' of ' + started.rounds : ''),
        el('span', {}, el('span', { id: 'live-calls' }, count(spent.calls || 0)), ' calls'),
        el('span', {}, money(spent.usd || 0), ' spent'),
        el('span', { class: 'muted' }, left.length ? 'budget left: ' + left.join(', ') : 'no budget set'),
        el('span', { class: 'grow' }),
        job && job.state === 'running' ? el('button', { id: 'cancel', onclick: async (e) => {
          e.target.disabled = true;
          try { await api.cancel(job.id); } catch (error) { alert(error.message); }
        } }, 'Cancel') : job ? el('span', {}, 'cancelling…') : '')]);
    };
    drawLive();
    if (EXPORTED) return;
    let pending = null;
    const reload = () => {
      if (pending) return;
      pending = setTimeout(async () => {
        pending = null;
        try {
          const fresh = await api.run(path);
          data = fresh;
          Object.assign(s, fresh.summary);
          drawTiles();
          drawLive();
          if (current === 'overview' || current === 'proposals' || current === 'usage') show(current);
        } catch (error) { /* the next event tries again */ }
      }, 1000);
    };
    state.onEvent = (event) => {
      data.live = data.live || {};
      if (event.spent) data.live.spent = event.spent;
      if (event.event === 'round_started') data.live.round = event.round;
      drawTiles();
      drawLive();
      reload();
    };
    state.onJobs = drawLive;
    state.onRuns = reload;
    follow(path, data.last_seq);
  }

  // The score timeline: validation per scored candidate (kept and not), the best so far, and
  // the minibatch (train) scores, on one axis of scoring steps labelled by round.
  function timeline(box, data) {
    const hover = el('div', { class: 'hover', id: 'hover', 'aria-live': 'polite' }, 'Point at the chart to see a candidate and why it was made.');
    const intervals = data.timeline.val.filter((p) => Array.isArray(p.interval)).length;
    const chart = el('div', { class: 'chart', id: 'chart', role: 'img', 'aria-label': 'Validation score per scored candidate' + (intervals ? `, with the ${percent(data.result)} interval of ${intervals} of them` : '') });
    // Train scores sit at the step of the first validation of their round.
    const merged = [];
    let best = -Infinity;
    data.timeline.val.forEach((p, i) => {
      const train = data.timeline.train.filter((t) => t.round === p.round);
      best = p.accepted ? Math.max(best, p.score) : best;
      merged.push({ x: i, val: p, train: i === data.timeline.val.findIndex((q) => q.round === p.round) && train.length ? Math.max(...train.map((t) => t.score)) : null, best: best === -Infinity ? null : best });
    });
    append(box, [el('div', { class: 'row muted' },
      el('span', {}, el('span', { class: 'legend-dot dot-acc' }), 'kept'), el('span', {}, el('span', { class: 'legend-dot dot-rej' }), 'not kept'),
      el('span', {}, el('span', { class: 'legend-dot dot-best' }), 'best so far'), el('span', {}, el('span', { class: 'legend-dot dot-train' }), 'minibatch (train)')), chart, hover]);
    if (!merged.length || typeof uPlot === 'undefined') { chart.textContent = 'No scores yet.'; return; }
    const css = getComputedStyle(document.documentElement);
    const color = (name) => css.getPropertyValue(name).trim();
    const xs = merged.map((m) => m.x);
    const kept = merged.map((m) => (m.val.accepted ? m.val.score : null));
    const notKept = merged.map((m) => (m.val.accepted ? null : m.val.score));
    const bests = merged.map((m) => m.best);
    const trains = merged.map((m) => m.train);
    const dots = (stroke, size) => ({ show: true, size, stroke, fill: stroke });
    const none = () => null;
    const width = Math.max(320, Math.min(box.clientWidth || 900, 1300) - 10);
    // eslint-disable-next-line no-new, new-cap
    new uPlot({
      width, height: 280,
      scales: { x: { time: false, range: [-0.5, xs.length - 0.5] }, y: { range: [0, 1.05] } },
      axes: [
        { stroke: color('--muted'), grid: { stroke: color('--line') },
          // One tick per scored candidate while they fit, else every k-th.
          splits: () => xs.filter((x) => x % Math.ceil(xs.length / 24) === 0),
          values: (u, ticks) => ticks.map((t) => (merged[t] ? '#' + merged[t].val.candidate + ' r' + merged[t].val.round : '')), label: 'scored candidates (#number, round)' },
        { stroke: color('--muted'), grid: { stroke: color('--line') }, label: 'score' },
      ],
      series: [
        {},
        { label: 'best so far', stroke: color('--accent'), width: 2, points: { show: false }, paths: uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined },
        { label: 'kept', stroke: color('--good'), paths: none, points: dots(color('--good'), 9) },
        { label: 'not kept', stroke: color('--grey'), paths: none, points: dots(color('--grey'), 7) },
        { label: 'minibatch', stroke: color('--warn'), paths: none, points: dots(color('--warn'), 6) },
      ],
      legend: { show: false },
      hooks: {
        // Each validation score's interval: a whisker from its low end to its high end.
        draw: [(u) => {
          const ctx = u.ctx;
          ctx.save();
          ctx.lineWidth = Math.max(1, devicePixelRatio);
          merged.forEach((m, i) => {
            const pair = m.val.interval;
            if (!Array.isArray(pair)) return;
            const x = u.valToPos(i, 'x', true);
            const [lo, hi] = [u.valToPos(pair[0], 'y', true), u.valToPos(pair[1], 'y', true)];
            const cap = 4 * devicePixelRatio;
            ctx.strokeStyle = m.val.accepted ? color('--good') : color('--grey');
            ctx.beginPath();
            ctx.moveTo(x, lo); ctx.lineTo(x, hi);
            ctx.moveTo(x - cap, lo); ctx.lineTo(x + cap, lo);
            ctx.moveTo(x - cap, hi); ctx.lineTo(x + cap, hi);
            ctx.stroke();
          });
          ctx.restore();
        }],
        setCursor: [(u) => {
          const i = u.cursor.idx;
          if (i === null || i === undefined || !merged[i]) return;
          const p = merged[i].val;
          const candidate = data.candidates.find((c) => c.id === p.candidate);
          clear(hover);
          append(hover, [el('b', {}, 'candidate ', String(p.candidate), ' · round ', String(p.round), ' · validation ', fmt(p.score),
            Array.isArray(p.interval) ? ` (${percent(data.result)} interval ${span(p.interval)})` : '', ' · ', p.accepted ? 'kept' : 'not kept'),
            candidate && candidate.gain ? el('div', {}, 'paired gain over the best ', points(candidate.gain.mean), ' pts (', gainSpan(candidate.gain.interval), ') on ', String(candidate.gain.samples), ' sample', candidate.gain.samples === 1 ? '' : 's', ' a task') : null,
            el('div', {}, p.note || (candidate && candidate.rationale) || ''),
            candidate && candidate.why ? el('div', { class: 'muted' }, 'why not: ', candidate.why) : null]);
        }],
      },
    }, [xs, bests, kept, notKept, trains], chart);
  }

  // The lineage: one column per round, an edge from each parent, the best's ancestry in green.
  // Clicking two nodes diffs them.
  function lineage(box, data, onPick) {
    const candidates = data.candidates;
    if (!candidates.length) { box.appendChild(el('p', { class: 'empty' }, 'No candidates.')); return; }
    // One column per generation (edits away from the seed), so a child made in the same round
    // as its parent (gepa's deeper edits, merges) stands to its right, not under it.
    const depth = new Map();
    const generation = (c, seen = new Set()) => {
      if (depth.has(c.id)) return depth.get(c.id);
      seen.add(c.id);
      const parents = c.parents.map((p) => candidates.find((x) => x.id === p)).filter((p) => p && !seen.has(p.id));
      const d = parents.length ? 1 + Math.max(...parents.map((p) => generation(p, seen))) : 0;
      depth.set(c.id, d);
      return d;
    };
    candidates.forEach((c) => generation(c));
    const rounds = [...new Set(candidates.map((c) => depth.get(c.id)))].sort((a, b) => a - b);
    const column = new Map(rounds.map((r, i) => [r, i]));
    const perColumn = new Map();
    const at = new Map();
    const dx = 84, dy = 38, pad = 28;
    for (const c of candidates) {
      const col = column.get(depth.get(c.id));
      const row = perColumn.get(col) || 0;
      perColumn.set(col, row + 1);
      at.set(c.id, { x: pad + col * dx, y: pad + 14 + row * dy });
    }
    const height = pad * 2 + 14 + Math.max(...perColumn.values()) * dy;
    const width = pad * 2 + rounds.length * dx;
    const chain = new Set(data.lineage_of_best);
    const root = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'group', 'aria-label': 'Candidate lineage: one column per edit away from the seed' });
    rounds.forEach((r, i) => { const t = svg('text', { x: pad + i * dx, y: 14, class: 'round-label' }); t.textContent = r === 0 ? 'seed' : 'edit ' + r; root.appendChild(t); });
    for (const c of candidates) {
      for (const p of c.parents) {
        const from = at.get(p), to = at.get(c.id);
        if (!from || !to) continue;
        const onBest = chain.has(c.id) && chain.has(p);
        root.appendChild(svg('path', { class: 'edge' + (onBest ? ' best' : ''), d: `M${from.x},${from.y} C${(from.x + to.x) / 2},${from.y} ${(from.x + to.x) / 2},${to.y} ${to.x},${to.y}` }));
      }
    }
    const nodes = new Map();
    for (const c of candidates) {
      const p = at.get(c.id);
      const kept = c.status === 'accepted' || c.status === 'seed';
      const g = svg('g', { class: `node st-${c.status}${kept ? '' : ' dim'}${c.id === data.best ? ' best' : ''}`, transform: `translate(${p.x},${p.y})`, tabindex: 0, role: 'button', 'data-candidate': c.id,
        'aria-label': `candidate ${c.id}, round ${c.round}, ${c.status.replace('_', ' ')}${c.val_score !== null && c.val_score !== undefined ? ', validation ' + fmt(c.val_score) : ''}` });
      const title = svg('title'); title.textContent = `#${c.id} · ${c.status}${c.why ? ' · ' + c.why : ''}\n${c.rationale || ''}`;
      g.appendChild(title);
      g.appendChild(svg('circle', { r: 14 }));
      const t = svg('text', {}); t.textContent = String(c.id); g.appendChild(t);
      const pick = () => onPick(c, nodes);
      g.addEventListener('click', pick);
      g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(); } });
      nodes.set(c.id, g);
      root.appendChild(g);
    }
    box.appendChild(el('div', { class: 'lineage', id: 'lineage' }, root));
    return nodes;
  }

  function candidateDetails(c) {
    return el('div', { class: 'panel details', id: 'candidate-details' },
      el('div', { class: 'row' }, el('b', {}, 'Candidate ', String(c.id)), badge(c.status), el('span', { class: 'muted' }, 'round ', String(c.round)),
        c.parents.length ? el('span', { class: 'muted' }, 'from ', c.parents.join(' + ')) : '',
        c.component ? el('span', { class: 'muted' }, c.operation || 'edit', ' of ', c.component) : '',
        el('span', { class: 'muted' }, 'validation ', fmt(c.val_score), Array.isArray(c.val_interval) ? ' (' + span(c.val_interval) + ')' : ''),
        c.gain ? el('span', { class: 'muted' }, 'gain over the best ', points(c.gain.mean), ' pts (', gainSpan(c.gain.interval), ')') : '',
        perTarget(c.gain).length ? el('span', { class: 'muted per-target' }, 'per target: ', perTarget(c.gain)) : '',
        c.gate_score !== null && c.gate_score !== undefined ? el('span', { class: 'muted' }, 'gate ', fmt(c.gate_score), ' vs ', fmt(c.gate_parent_score)) : ''),
      el('p', {}, c.rationale || el('span', { class: 'muted' }, 'no rationale')),
      c.why ? el('p', { class: 's-' + c.status }, 'Why it was not kept: ', c.why) : null,
      c.warnings && c.warnings.length ? el('ul', {}, c.warnings.map((w) => el('li', { class: 'muted' }, w))) : null);
  }

  function diffView(lines) {
    return el('div', { class: 'diff', id: 'diff' }, lines.map((l) => el('div', { class: 'l ' + (l.tag === 'insert' ? 'ins' : l.tag === 'delete' ? 'del' : 'eq') },
      el('span', { class: 'n' }, l.old ?? ''), el('span', { class: 'n' }, l.new ?? ''),
      el('span', { 'aria-hidden': 'true' }, l.tag === 'insert' ? '+' : l.tag === 'delete' ? '−' : ' '),
      el('span', {}, l.tag === 'insert' ? el('span', { class: 'sr-only' }, 'added: ') : l.tag === 'delete' ? el('span', { class: 'sr-only' }, 'removed: ') : '', l.text))));
  }

  // A trigger run's loads (result.json's `trigger`): the seed's and the best skill's precision,
  // recall and false-trigger rate, with their counts, on the split they were measured on.
  function triggering(box, data) {
    const t = data.result && data.result.trigger;
    if (!t || !t.seed || !t.best) return;
    const rate = (x) => (x === null || x === undefined ? 'n/a' : fmt(x));
    const should = (f) => f.true_positives + f.false_negatives;
    const near = (f) => f.false_positives + f.true_negatives;
    const failures = t.seed.failed || t.best.failed;
    const columns = [
      ['accuracy', 'Accuracy', (f) => rate(f.accuracy)],
      ['precision', 'Precision', (f) => rate(f.precision)],
      ['recall', 'Recall', (f) => rate(f.recall)],
      ['false_trigger_rate', 'False-trigger rate', (f) => rate(f.false_trigger_rate)],
      ['loaded_should', 'Loaded / should', (f) => count(f.true_positives) + ' / ' + count(should(f))],
      ['loaded_near_misses', 'Loaded / near misses', (f) => count(f.false_positives) + ' / ' + count(near(f))],
      failures ? ['failed', 'Failed', (f) => count(f.failed)] : null,
    ].filter(Boolean);
    const requests = should(t.seed) + near(t.seed) + (t.seed.failed || 0);
    const split = t.split === 'test' ? 'the held-out test split' : t.split === 'val' ? 'the validation split' : 'the ' + t.split + ' split';
    append(box, [el('section', { id: 'trigger', 'aria-labelledby': 'trigger-title' },
      el('h2', { id: 'trigger-title' }, 'Triggering'),
      el('p', { class: 'muted', id: 'trigger-split', 'data-split': t.split }, 'Whether an agent loads the skill, on ', split, ' (', count(requests), ' request', requests === 1 ? '' : 's', ').'),
      el('div', { class: 'panel' }, el('table', { id: 'trigger-table' },
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Skill'), columns.map(([, label]) => el('th', { scope: 'col', class: 'num' }, label)))),
        el('tbody', {}, [['seed', 'Seed', t.seed], ['best', 'Best', t.best]].map(([key, label, figures]) =>
          el('tr', { 'data-skill': key }, el('th', { scope: 'row' }, label), columns.map(([k, , value]) => el('td', { class: 'num', 'data-k': k }, value(figures))))))),
      el('p', { class: 'muted' }, 'Precision: of the loads, the share that should have happened. Recall: of the requests that should load the skill, the share that did. False-trigger rate: of the near misses, the share that loaded it anyway.')))]);
  }

  // A run over several targets (result.json's `targets`): the seed's and the best's score on
  // each, on the held-out split, coloured from low to high, and the best's paired gain, red
  // when its interval is wholly below 0 and green when wholly above. Optimized targets first;
  // a target measured only shows how the skill transfers.
  function targeting(box, data) {
    const all = (data.result && data.result.targets) || {};
    const names = Object.keys(all).filter((n) => all[n] && all[n].seed && all[n].best && all[n].improvement);
    if (!names.length) return;
    names.sort((a, b) => Number(all[b].optimize !== false) - Number(all[a].optimize !== false));
    const first = all[names[0]];
    const split = first.split === 'test' ? 'the held-out test split' : first.split === 'val' ? 'the validation split' : 'the ' + first.split + ' split';
    const tasks = first.seed.tasks;
    const confidence = Math.round((first.seed.confidence || 0.95) * 1000) / 10 + '%';
    const half = (e) => (Array.isArray(e.interval) ? fmt((e.interval[1] - e.interval[0]) / 2) : '–');
    const bucket = (x) => 't' + Math.max(0, Math.min(4, Math.floor(x * 4.999)));
    const score = (key, label, name) => {
      const e = all[name][key];
      return el('td', { class: 'num cell ' + bucket(e.mean), 'data-target': name,
        title: `${label} on ${name}: ${fmt(e.mean)}, ${confidence} interval ${span(e.interval)}, ${count(e.tasks)} task${e.tasks === 1 ? '' : 's'}` },
      fmt(e.mean), ' ± ', half(e));
    };
    const gain = (name) => {
      const e = all[name].improvement;
      const [low, high] = Array.isArray(e.interval) ? e.interval : [0, 0];
      const verdict = low > 0 ? 'up' : high < 0 ? 'down' : 'flat';
      return el('td', { class: 'num gain-' + verdict, 'data-target': name, 'data-verdict': verdict,
        title: verdict === 'up' ? 'the best gains on it' : verdict === 'down' ? 'the best loses on it' : 'no gain or loss it can tell from chance' },
      signed(e.mean), ' (', signed(low), ' to ', signed(high), ')');
    };
    append(box, [el('section', { id: 'targets', 'aria-labelledby': 'targets-title' },
      el('h2', { id: 'targets-title' }, 'Targets'),
      el('p', { class: 'muted', id: 'targets-split', 'data-split': first.split }, 'The seed\'s and the best skill\'s score on every target, on ', split,
        ' (', count(tasks), ' task', tasks === 1 ? '' : 's', '), ± the half-width of the ', confidence, ' interval; red 0 … green 1.'),
      el('div', { class: 'panel targets' }, el('table', { id: 'targets-table' },
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Skill'), names.map((n) => el('th', { scope: 'col', class: 'num target', 'data-target': n },
          n, all[n].optimize === false ? el('div', { class: 'sub muted' }, 'measured only') : null)))),
        el('tbody', {},
          el('tr', { 'data-skill': 'seed' }, el('th', { scope: 'row' }, 'Seed'), names.map((n) => score('seed', 'the seed', n))),
          el('tr', { 'data-skill': 'best' }, el('th', { scope: 'row' }, 'Best'), names.map((n) => score('best', 'the best', n))),
          el('tr', { 'data-skill': 'gain' }, el('th', { scope: 'row' }, 'Gain'), names.map(gain))))),
      el('p', { class: 'muted' }, 'Gain: the best\'s improvement over the seed, paired by task, with its interval; green when the interval lies wholly above 0, red when wholly below. A target measured only had no say in the search: its column shows how the skill transfers.'))]);
  }

  function overview(box, data, path) {
    triggering(box, data);
    targeting(box, data);
    box.appendChild(el('h2', {}, 'Scores'));
    timeline(box, data);
    box.appendChild(el('h2', {}, 'Lineage'));
    box.appendChild(el('p', { class: 'muted' }, 'One column per edit away from the seed (the round is in each candidate\'s details). Click one candidate for its details, a second one to see the diff between them. Greyed: not kept.'));
    const details = el('div');
    const diffTitle = el('h2', { id: 'diff-title' }, 'Seed → best');
    const diffBox = el('div');
    const picks = [];
    const showDiff = async (a, b) => {
      diffTitle.textContent = a === 0 && b === data.best ? 'Seed → best' : `Candidate ${a} → candidate ${b}`;
      clear(diffBox);
      try {
        const diff = a === 0 && b === data.best && data.seed_diff ? { lines: data.seed_diff } : await api.diff(path, a, b);
        const ins = diff.lines.filter((l) => l.tag === 'insert').length, del = diff.lines.filter((l) => l.tag === 'delete').length;
        append(diffBox, [el('p', { class: 'muted' }, el('span', { class: 'up' }, '+' + ins), ' ', el('span', { class: 'down' }, '−' + del), ' lines'), diffView(diff.lines)]);
      } catch (error) { diffBox.appendChild(el('p', { class: 'error' }, error.message)); }
    };
    lineage(box, data, (c, nodes) => {
      picks.push(c.id);
      if (picks.length > 2) picks.splice(0, picks.length - 1);
      for (const [id, g] of nodes) g.classList.remove('pick-a', 'pick-b');
      picks.forEach((id, i) => nodes.get(id) && nodes.get(id).classList.add(i === 0 ? 'pick-a' : 'pick-b'));
      clear(details).appendChild(candidateDetails(c));
      if (picks.length === 2) showDiff(picks[0], picks[1]);
    });
    append(box, [details, diffTitle, diffBox]);
    showDiff(0, data.best);
  }

  function lines(box, data) {
    box.appendChild(el('p', { class: 'muted' }, 'Every line of the best skill (candidate ', String(data.best), ') with the candidate and round that wrote it and the validation gain that candidate bought over its parent.'));
    const details = el('div');
    const list = el('div', { class: 'blame panel', id: 'blame' }, data.blame.map((o) => {
      const c = data.candidates.find((x) => x.id === o.candidate);
      const gain = o.gain === null || o.gain === undefined ? '' : (o.gain >= 0 ? ' +' : ' ') + (o.gain * 100).toFixed(1) + ' pts';
      return el('div', { class: 'l c' + o.candidate },
        el('span', { class: 'tag' }, o.candidate === 0 ? 'seed' : el('button', { onclick: () => clear(details).appendChild(candidateDetails(c)), title: c ? c.rationale : '' }, '#' + o.candidate + ' r' + o.round + gain)),
        el('span', { class: 'text' }, o.text || ' '));
    }));
    append(box, [list, details]);
  }

  function proposals(box, data) {
    const filter = el('select', { id: 'proposal-filter', 'aria-label': 'Show proposals' },
      [['', 'every proposal'], ['kept', 'kept'], ['refused', 'refused']].map(([v, l]) => el('option', { value: v }, l)));
    const body = el('tbody');
    const draw = () => {
      clear(body);
      const shown = data.candidates.filter((c) => c.id !== 0 && (!filter.value || (filter.value === 'kept') === (c.status === 'accepted')));
      append(body, [shown.map((c) => el('tr', { 'data-candidate': c.id },
        el('td', { class: 'num' }, String(c.id)), el('td', { class: 'num' }, String(c.round)), el('td', {}, c.parents.join(' + ')),
        el('td', {}, c.operation || '', c.component ? ' · ' + c.component : ''), el('td', {}, badge(c.status)),
        el('td', { class: 'num' }, fmt(c.val_score)),
        el('td', { class: 'num interval' }, span(c.val_interval)),
        el('td', { class: 'num gain' }, c.gain ? gainSpan(c.gain.interval) : '–',
          perTarget(c.gain).length ? el('div', { class: 'muted per-target', title: 'the paired gain on each target' }, perTarget(c.gain)) : null),
        el('td', {}, c.rationale), el('td', {}, c.why || '')))]);
      if (!shown.length) body.appendChild(el('tr', {}, el('td', { colspan: 10, class: 'empty' }, 'No proposals.')));
    };
    filter.addEventListener('change', draw);
    append(box, [el('div', { class: 'row' }, filter), el('table', { id: 'proposals' },
      el('thead', {}, el('tr', {}, ['#', 'Round', 'From', 'Edit', 'Outcome', 'Validation', percent(data.result) + ' interval', 'Gain over the best', 'Rationale', 'Why refused'].map((h) => el('th', { scope: 'col' }, h)))), body)]);
    draw();
  }

  function tasks(box, data, path) {
    const ids = data.candidates.map((c) => c.id);
    const options = (extra) => [extra, ids.map((id) => el('option', { value: id }, id === 0 ? '0 (seed)' : id === data.best ? id + ' (best)' : String(id)))];
    const candidate = el('select', { id: 'task-candidate', 'aria-label': 'Candidate' }, options(null));
    const against = el('select', { id: 'task-against' }, options(el('option', { value: '' }, 'none')));
    const split = el('select', { id: 'task-split', 'aria-label': 'Split' }, ['val', 'test', 'train'].map((s) => el('option', { value: s }, s)));
    const only = el('select', { id: 'task-only', 'aria-label': 'Rows' }, [['', 'all tasks'], ['failures', 'failures only'], ['changed', 'score changed']].map(([v, l]) => el('option', { value: v }, l)));
    const search = el('input', { type: 'search', id: 'task-search', placeholder: 'search tasks', 'aria-label': 'Search tasks' });
    candidate.value = String(data.best);
    if (EXPORTED) { against.disabled = true; for (const o of [...candidate.options]) if (o.value !== '0' && o.value !== String(data.best)) o.remove(); }
    const info = el('span', { class: 'muted', id: 'task-count', 'aria-live': 'polite' });
    const body = el('tbody');
    const headRow = el('tr');
    const prev = el('button', { onclick: () => { offset = Math.max(0, offset - 50); load(); } }, 'Previous');
    const next = el('button', { onclick: () => { offset += 50; load(); } }, 'Next');
    let offset = 0, asked = 0;
    async function load() {
      // Only the answer to the latest question is drawn: an older one may arrive last.
      const ticket = ++asked;
      const q = { candidate: candidate.value, split: split.value, against: against.value, only: only.value, search: search.value, offset, limit: 50 };
      if (q.only === 'changed' && !q.against) { q.against = '0'; against.value = '0'; }
      let page;
      try { page = await api.tasks(path, q); } catch (error) { if (ticket === asked) clear(body).appendChild(el('tr', {}, el('td', { class: 'error' }, error.message))); return; }
      if (ticket !== asked) return;
      const comparing = page.against !== null && page.against !== undefined && page.against !== '';
      // A trigger run's rows: the request, whether it should load the skill, and what the agent loaded.
      const trigger = page.rows.some((r) => typeof r.should_trigger === 'boolean');
      const expected = (r) => (trigger ? (typeof r.should_trigger === 'boolean' ? (r.should_trigger ? 'yes' : 'no') : '–') : el('pre', {}, r.expected ?? ''));
      // Another skill the agent chose (a distractor), beside the run's own or in its place.
      const own = data.result.best_skill && data.result.best_skill.name;
      const loaded = (r) => {
        const others = trigger && Array.isArray(r.loaded_skills) ? r.loaded_skills.filter((name) => name !== own) : [];
        return others.length ? el('div', { class: 'muted other-skills' }, r.loaded_skills.includes(own) ? 'also loaded: ' : 'loaded instead: ', others.join(', ')) : '';
      };
      clear(headRow);
      append(headRow, [['Task', trigger ? 'Request' : 'Input', trigger ? 'Should load' : 'Expected', trigger ? 'Decision' : 'Output', 'Score of #' + page.candidate, comparing ? 'Score of #' + page.against : null, 'Feedback'].filter(Boolean).map((h) => el('th', { scope: 'col' }, h))]);
      clear(body);
      append(body, [page.rows.map((r) => el('tr', { 'data-task': r.task_id },
        el('td', { class: 'mono' }, r.task_id, r.change ? el('div', {}, badge(r.change)) : ''),
        el('td', {}, el('pre', {}, r.input)), el('td', { class: trigger ? 'should' : null }, expected(r)),
        el('td', {}, el('pre', {}, r.output), loaded(r), r.error ? el('div', { class: 'error' }, r.error) : ''),
        el('td', { class: 'num', title: r.samples > 1 ? `the mean of ${r.samples} samples; the output shown is the first` : null }, fmt(r.score)), comparing ? el('td', { class: 'num' }, fmt(r.other_score)) : null,
        el('td', {}, el('pre', {}, r.feedback))))]);
      if (!page.rows.length) body.appendChild(el('tr', {}, el('td', { colspan: 7, class: 'empty' }, page.note || 'No task matches.')));
      info.textContent = page.total ? `tasks ${page.offset + 1}–${page.offset + page.rows.length} of ${page.total}` : '0 tasks';
      prev.disabled = page.offset === 0;
      next.disabled = page.offset + page.rows.length >= page.total;
    }
    for (const control of [candidate, against, split, only]) control.addEventListener('change', () => { offset = 0; load(); });
    search.addEventListener('input', () => { offset = 0; load(); });
    const labelled = (id, text, control) => el('span', { class: 'field' }, el('label', { for: id }, text), control);
    append(box, [el('div', { class: 'row' }, labelled('task-candidate', 'Candidate', candidate), labelled('task-split', 'Split', split),
      labelled('task-against', 'Before', against), labelled('task-only', 'Rows', only), search, el('span', { class: 'grow' }), info),
      el('table', { class: 'tasks', id: 'tasks' }, el('thead', {}, headRow), body), el('div', { class: 'row pager' }, prev, next)]);
    load();
  }

  async function heatmap(box, data, path) {
    const split = el('select', { id: 'heat-split', 'aria-label': 'Split' }, ['val', 'train', 'test'].map((s) => el('option', { value: s }, s)));
    const holder = el('div', { class: 'heat', id: 'heatmap' });
    const draw = async () => {
      clear(holder);
      let map;
      try { map = await api.heatmap(path, split.value); } catch (error) { holder.appendChild(el('p', { class: 'error' }, error.message)); return; }
      if (!map.tasks.length) { holder.appendChild(el('p', { class: 'empty' }, 'No scores on this split.')); return; }
      const bucket = (s) => (s === null ? 'hn' : 'h' + Math.min(4, Math.floor(s * 4.999)));
      holder.appendChild(el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'task \\ candidate'), map.candidates.map((c) => el('th', { class: 'c', scope: 'col' }, '#' + c)))),
        el('tbody', {}, map.tasks.map((t, i) => el('tr', {}, el('th', { class: 'mono', scope: 'row' }, t),
          map.scores[i].map((s, j) => el('td', { class: 'cell ' + bucket(s), title: `${t} · candidate ${map.candidates[j]} · ${s === null ? 'not scored' : fmt(s)}` },
            el('span', { class: 'sr-only' }, s === null ? 'not scored' : fmt(s)))))))));
    };
    split.addEventListener('change', draw);
    append(box, [el('div', { class: 'row' }, el('label', { for: 'heat-split' }, 'Split'), split, el('span', { class: 'muted' }, 'red 0 … green 1; blank: not scored')), holder]);
    draw();
  }

  function usage(box, data) {
    const roles = data.result.usage || {};
    const names = Object.keys(roles);
    if (!names.length) { box.appendChild(el('p', { class: 'empty' }, 'This run records no usage.')); return; }
    box.appendChild(el('table', { id: 'usage' }, el('thead', {}, el('tr', {}, ['Role', 'Calls', 'Cached', 'Failed', 'Input tokens', 'Output tokens', 'Cost'].map((h, i) => el('th', { scope: 'col', class: i ? 'num' : '' }, h)))),
      el('tbody', {}, names.map((n) => { const u = roles[n]; return el('tr', {}, el('td', {}, n), el('td', { class: 'num' }, count(u.calls)), el('td', { class: 'num' }, count(u.cached_calls)),
        el('td', { class: 'num' }, count(u.failed_calls)), el('td', { class: 'num' }, count(u.input_tokens)), el('td', { class: 'num' }, count(u.output_tokens)), el('td', { class: 'num' }, money(u.cost_usd))); }))));
  }

  function report(box, data) {
    box.appendChild(el('div', { class: 'panel' }, el('pre', { id: 'report' }, data.report || 'No report yet.')));
  }

  // ---------- a classifier run ----------

  function classifierPage(path, data) {
    const s = data.summary;
    const info = (data.live && data.live.classifier) || { rounds: [] };
    append(main, [el('div', { class: 'row' }, el('h1', { class: 'grow' }, s.config_name || path, ' ', el('span', { class: 'muted' }, 'classifier')), badge(s.status)),
      el('div', { class: 'tiles' },
        el('div', { class: 'tile' }, el('div', { class: 'k' }, 'Validation objective'), el('div', { class: 'v' }, fmt(s.baseline_val), ' → ', fmt(s.best_val))),
        el('div', { class: 'tile' }, el('div', { class: 'k' }, 'Seal'), el('div', { class: 'v', id: 'seal' }, info.frozen ? 'frozen' : 'sealed: test not shown until lab freeze'))),
      el('h2', {}, 'Rounds')]);
    const splits = [...new Set(info.rounds.flatMap((r) => Object.keys(r.reports || {})))];
    const table = el('table', { id: 'classifier-rounds' }, el('thead', {}, el('tr', {}, ['Round', 'Change', 'Candidate', 'Threshold', 'Kept', ...splits.map((sp) => sp + ' recall / FPR')].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, info.rounds.map((r) => el('tr', {}, el('td', { class: 'num' }, String(r.round)), el('td', {}, r.change), el('td', { class: 'mono' }, r.candidate), el('td', { class: 'num' }, fmt(r.threshold)),
        el('td', {}, r.accepted ? badge('accepted') : badge('rejected')),
        splits.map((sp) => { const level = r.reports && r.reports[sp] && Object.values(r.reports[sp].levels || {})[0]; return el('td', { class: 'num' }, level ? fmt(level.recall) + ' / ' + fmt(level.fpr) : '–'); })))));
    append(main, [el('div', { class: 'panel' }, table), el('h2', {}, 'Probe set'), el('div', { class: 'panel' }, el('pre', {}, data.best_text || (data.result.best_skill && data.result.best_skill.body) || '')),
      el('h2', {}, 'Report'), el('div', { class: 'panel' }, el('pre', {}, data.report || ''))]);
  }

  // ---------- compare ----------

  async function comparePage(params) {
    document.title = 'Compare · Skill Factory';
    append(main, [el('h1', {}, 'Compare')]);
    let runs = [];
    try { runs = (await api.runs()).runs; } catch (error) { return failed(error); }
    const pick = (id, value, label) => {
      const select = el('select', { id, 'aria-label': label }, el('option', { value: '' }, label), runs.map((r) => el('option', { value: r.path }, r.config_name + ' · ' + r.run_id + ' · ' + r.optimizer)));
      select.value = value || '';
      return select;
    };
    const a = pick('compare-a', params.get('a'), 'before run'), b = pick('compare-b', params.get('b'), 'after run');
    const split = el('select', { id: 'compare-split', 'aria-label': 'Split' }, ['val', 'test'].map((s) => el('option', { value: s }, s)));
    split.value = params.get('split') || 'val';
    const out = el('div', { id: 'comparison' });
    const go = () => { location.hash = '#/compare?' + new URLSearchParams({ a: a.value, b: b.value, split: split.value }); };
    append(main, [el('div', { class: 'panel row' }, a, el('span', {}, '→'), b, split, el('button', { class: 'primary', onclick: go, id: 'compare-go' }, 'Compare')), out]);
    if (!params.get('a') || !params.get('b')) { out.appendChild(el('p', { class: 'muted' }, 'Pick two runs (or tick two in the runs list). Each task is sorted into regressed, fixed, still failing and unchanged, regressions first.')); return; }
    let result;
    const q = { a: params.get('a'), b: params.get('b'), split: split.value };
    if (params.get('ca')) q.ca = params.get('ca');
    if (params.get('cb')) q.cb = params.get('cb');
    try { result = await api.compare(q); } catch (error) { out.appendChild(el('p', { class: 'error' }, error.message)); return; }
    const c = result.counts;
    append(out, [el('div', { class: 'tiles' }, ['regressed', 'fixed', 'still_failing', 'unchanged'].map((k) => el('div', { class: 'tile' }, el('div', { class: 'k' }, k.replace('_', ' ')), el('div', { class: 'v s-' + k }, String(c[k]))))),
      el('table', { id: 'compare-rows' }, el('thead', {}, el('tr', {}, ['Task', 'Change', 'Before', 'After', 'Input', 'Before output', 'After output'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, result.rows.map((r) => el('tr', { 'data-task': r.task_id }, el('td', { class: 'mono' }, r.task_id), el('td', {}, r.change ? badge(r.change) : '–'),
          el('td', { class: 'num' }, fmt(r.other_score)), el('td', { class: 'num' }, fmt(r.score)), el('td', {}, el('pre', {}, r.input)),
          el('td', {}, el('pre', {}, r.other_output ?? '')), el('td', {}, el('pre', {}, r.output)))))),
    ]);
    if (!result.rows.length) out.appendChild(el('p', { class: 'empty' }, 'The two runs share no task on this split.'));
  }

  shell();
  window.addEventListener('hashchange', route);
  route();
})();
