// The ctx inspector page: plain DOM, no framework, no build step. It reads /api/state once and
// then follows /api/events (server-sent events), one `run` event per change of a run.

const state = {
  sessions: new Map(), // sessionId -> { sessionId, userId?, title?, runIds: [] }
  runs: new Map(), // runId -> run view
  showText: false,
  selected: { sessionId: undefined, runId: undefined, call: undefined },
  pinned: false, // the user picked a run: stop following the newest
};

const PALETTE = ['#3b5bdb', '#e8590c', '#2b8a3e', '#ae3ec9', '#1098ad', '#f08c00', '#c2255c', '#5c940d', '#6741d9', '#0b7285'];
const FIXED = { agent: '#495057', input: '#862e9c', response: '#868e96', model: '#212529' };
const colors = new Map();
function colorOf(sourceId) {
  if (FIXED[sourceId]) return FIXED[sourceId];
  if (!colors.has(sourceId)) colors.set(sourceId, PALETTE[colors.size % PALETTE.length]);
  return colors.get(sourceId);
}

function h(tag, attrs, ...children) {
  const el = document.createElementNS(tag === 'svg' || attrs?.svg ? 'http://www.w3.org/2000/svg' : 'http://www.w3.org/1999/xhtml', tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (k === 'svg' || v === undefined || v === false) continue;
    if (k === 'onclick') el.addEventListener('click', v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}
const s = (tag, attrs, ...children) => h(tag, { ...attrs, svg: true }, ...children);
const fmt = (n) => (n === undefined ? '–' : Math.round(n).toLocaleString('en-US'));
const ms = (n) => (n === undefined ? '–' : n < 10 ? `${n.toFixed(1)} ms` : `${Math.round(n)} ms`);
const chip = (sourceId) => h('span', { class: 'chip', style: { background: colorOf(sourceId) }, 'data-source': sourceId }, sourceId);
const plural = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

function upsertRun(run) {
  state.runs.set(run.runId, run);
  let session = state.sessions.get(run.sessionId);
  if (!session) state.sessions.set(run.sessionId, (session = { sessionId: run.sessionId, runIds: [] }));
  if (!session.runIds.includes(run.runId)) session.runIds.push(run.runId);
  session.lastActive = Math.max(session.lastActive ?? 0, run.startedAt);
}

function follow() {
  if (state.pinned) return;
  let newest;
  for (const run of state.runs.values()) if (!newest || run.startedAt >= newest.startedAt) newest = run;
  if (!newest) return;
  state.selected = { sessionId: newest.sessionId, runId: newest.runId, call: undefined };
}

function render() {
  document.getElementById('text-mode').textContent = state.showText ? 'text shown' : 'text hidden';
  renderSessions();
  renderMain();
}

function renderSessions() {
  const nav = document.getElementById('sessions');
  const sessions = [...state.sessions.values()].sort((a, b) => (b.lastActive ?? 0) - (a.lastActive ?? 0));
  nav.replaceChildren(
    h('h2', null, `Sessions (${sessions.length})`),
    state.storeError ? h('div', { class: 'diag warning', style: { padding: '0 14px 8px' } }, `session store: ${state.storeError}`) : '',
    ...sessions.map((session) =>
      h(
        'button',
        {
          class: 'session',
          'data-testid': 'session',
          'data-session-id': session.sessionId,
          'aria-current': session.sessionId === state.selected.sessionId ? 'true' : 'false',
          onclick: () => {
            state.pinned = true;
            const last = session.runIds.at(-1);
            state.selected = { sessionId: session.sessionId, runId: last, call: undefined };
            render();
          },
        },
        h('div', { class: 'id' }, session.title ?? session.sessionId),
        h(
          'div',
          { class: 'meta' },
          [
            session.userId ? `user ${session.userId}` : undefined,
            plural(session.runIds.length, 'run'),
            session.title ? session.sessionId : undefined,
          ]
            .filter(Boolean)
            .join(' · '),
        ),
      ),
    ),
  );
}

function renderMain() {
  const main = document.getElementById('main');
  const session = state.sessions.get(state.selected.sessionId);
  if (!session) return;
  const runs = session.runIds.map((id) => state.runs.get(id)).filter(Boolean);
  if (runs.length === 0) {
    main.replaceChildren(h('p', { class: 'empty' }, `No run of ${session.sessionId} seen since the inspector started.`));
    return;
  }
  const run = state.runs.get(state.selected.runId) ?? runs.at(-1);
  const children = [h('div', { class: 'charts' }, tokensChart(runs), cachedChart(runs), latencyChart(runs))];
  children.push(
    h(
      'div',
      { class: 'runs' },
      runs.map((r, i) =>
        h(
          'button',
          {
            class: 'run',
            'data-testid': 'run',
            'data-run-id': r.runId,
            'aria-current': r === run ? 'true' : 'false',
            onclick: () => {
              state.pinned = true;
              state.selected = { sessionId: r.sessionId, runId: r.runId, call: undefined };
              render();
            },
          },
          h('div', { class: 'title' }, `Run ${i + 1}`, h('span', { class: `status ${r.status}` }, r.status)),
          h('div', { class: 'progress', 'data-testid': 'progress' }, r.progress),
        ),
      ),
    ),
  );
  if (run) children.push(runDetail(run));
  main.replaceChildren(...children);
}

function runDetail(run) {
  const callIndex = Math.min(state.selected.call ?? run.calls.length, run.calls.length);
  const call = run.calls[callIndex - 1];
  const out = h('section', { 'data-testid': 'run-detail', 'data-run-id': run.runId });
  out.append(
    h(
      'div',
      { class: 'card' },
      h('h3', null, `${run.agentName} · ${run.provider}/${run.modelId}`),
      h(
        'div',
        { class: 'muted' },
        `providers: `,
        ...run.providers.flatMap((p) => [chip(p), ' ']),
        run.durationMs !== undefined ? ` · ${ms(run.durationMs)}` : '',
        run.usage ? ` · ${fmt(run.usage.inputTokens)} in / ${fmt(run.usage.outputTokens)} out` : '',
      ),
      run.idle.length
        ? h(
            'div',
            { class: 'muted', 'data-testid': 'idle' },
            `added nothing this run (gated off or nothing to add): ${run.idle.join(', ')}`,
          )
        : '',
      run.error ? h('div', { class: 'diag skipped' }, run.error) : '',
    ),
  );
  if (!call) {
    out.append(h('p', { class: 'empty' }, 'No model call yet.'), diagnosticsCard(run));
    return out;
  }
  out.append(
    h(
      'div',
      { class: 'tabs', role: 'tablist' },
      run.calls.map((c) =>
        h(
          'button',
          {
            class: 'tab',
            role: 'tab',
            'data-testid': 'call-tab',
            'aria-selected': c.index === callIndex ? 'true' : 'false',
            onclick: () => {
              state.pinned = true;
              state.selected = { sessionId: run.sessionId, runId: run.runId, call: c.index };
              render();
            },
          },
          `Model call ${c.index} · ${fmt(c.totalTokens)} tok`,
        ),
      ),
    ),
  );
  out.append(
    h(
      'div',
      { class: 'grid2', 'data-testid': 'call', 'data-call': call.index },
      h('div', null, sourcesCard(call), itemsCard(call)),
      h('div', null, cacheCard(call, run), removedCard(call), diffCard(call), toolsCard(run, call), diagnosticsCard(run)),
    ),
  );
  return out;
}

function sourcesCard(call) {
  return h(
    'div',
    { class: 'card' },
    h('h3', null, 'Tokens by source'),
    h(
      'table',
      { 'data-testid': 'sources' },
      h(
        'tr',
        null,
        h('th', null, 'source'),
        h('th', { class: 'num' }, 'messages'),
        h('th', { class: 'num' }, 'instructions'),
        h('th', { class: 'num' }, 'tools'),
        h('th', { class: 'num' }, 'tokens'),
      ),
      call.sources.map((src) =>
        h(
          'tr',
          { 'data-testid': 'source-row', 'data-source': src.sourceId },
          h('td', null, chip(src.sourceId)),
          h('td', { class: 'num', 'data-field': 'messageTokens' }, fmt(src.messageTokens)),
          h('td', { class: 'num', 'data-field': 'instructionTokens' }, fmt(src.instructionTokens)),
          h('td', { class: 'num', 'data-field': 'toolTokens' }, fmt(src.toolTokens)),
          h('td', { class: 'num', 'data-field': 'tokens' }, fmt(src.tokens)),
        ),
      ),
      h(
        'tr',
        { class: 'total' },
        h('td', null, 'total'),
        h('td'),
        h('td'),
        h('td'),
        h('td', { class: 'num', 'data-testid': 'total-tokens' }, fmt(call.totalTokens)),
      ),
    ),
  );
}

function itemsCard(call) {
  return h(
    'div',
    { class: 'card' },
    h('h3', null, `Sent, in order (${call.items.length})`),
    h(
      'table',
      { 'data-testid': 'items' },
      h('tr', null, h('th', null, '#'), h('th', null, 'what'), h('th', null, 'source'), h('th', { class: 'num' }, 'tokens')),
      call.items.map((item, i) =>
        h(
          'tr',
          { 'data-testid': 'item', 'data-kind': item.kind, 'data-source': item.sourceId },
          h('td', { class: 'muted' }, i + 1),
          h(
            'td',
            null,
            h('span', { class: 'kind' }, item.kind === 'message' ? '' : `${item.kind} `),
            h('b', null, item.label),
            item.parts ? h('span', { class: 'muted' }, ` · ${item.parts.join(', ')}`) : '',
            item.summaryOf !== undefined ? h('span', { class: 'muted' }, ` · summary of ${item.summaryOf} messages`) : '',
            item.text !== undefined
              ? h('div', { class: 'text' }, item.text)
              : item.kind !== 'tool' && !state.showText
                ? h('div', { class: 'hidden-text' }, 'text hidden')
                : '',
          ),
          h('td', null, chip(item.sourceId)),
          h('td', { class: 'num' }, fmt(item.tokens)),
        ),
      ),
    ),
    call.response
      ? h(
          'div',
          { style: { marginTop: '10px' } },
          h(
            'h3',
            null,
            `Answer${call.durationMs !== undefined ? ` · ${ms(call.durationMs)}` : ''}${call.finishReason ? ` · ${call.finishReason}` : ''}`,
          ),
          h(
            'ul',
            { class: 'plain' },
            call.response.map((item) =>
              h(
                'li',
                null,
                h('b', null, item.label),
                item.parts ? ` · ${item.parts.join(', ')}` : '',
                ` · ${fmt(item.tokens)} tok`,
                item.text ? h('div', { class: 'text' }, item.text) : '',
              ),
            ),
          ),
        )
      : '',
  );
}

function cacheCard(call) {
  const c = call.cache;
  const share = c.totalTokens ? c.repeatedTokens / c.totalTokens : 0;
  return h(
    'div',
    { class: 'card', 'data-testid': 'cache' },
    h('h3', null, 'Prompt-cache prefix'),
    c.compared
      ? h(
          'div',
          null,
          h('b', { 'data-testid': 'repeated-tokens' }, fmt(c.repeatedTokens)),
          ` of ${fmt(c.totalTokens)} tokens repeat the previous call from the start (${Math.round(share * 100)}%)`,
        )
      : h('div', { class: 'muted' }, 'First call of the session: nothing to repeat yet.'),
    h('div', { class: 'prefix-bar' }, h('div', { style: { width: `${Math.round(share * 100)}%` } })),
    c.cachedInputTokens !== undefined
      ? h('div', { class: 'muted' }, `service read ${fmt(c.cachedInputTokens)} input tokens from its cache`)
      : '',
    c.firstChange
      ? h(
          'div',
          { class: 'break', 'data-testid': 'cache-break', 'data-source': c.firstChange.sourceId },
          h('div', null, h('b', null, 'First change: '), c.firstChange.kind, ' from ', chip(c.firstChange.sourceId)),
          h('div', null, c.firstChange.reason),
          c.firstChange.advice ? h('div', { class: 'advice' }, `→ ${c.firstChange.advice}`) : '',
        )
      : c.compared
        ? h('div', { class: 'ok' }, 'Everything the previous call sent is repeated.')
        : '',
  );
}

function removedCard(call) {
  if (!call.removed.length) return '';
  return h(
    'div',
    { class: 'card', 'data-testid': 'removed' },
    h('h3', null, 'Removed since the previous call'),
    h(
      'ul',
      { class: 'plain' },
      call.removed.map((r) => h('li', null, chip(r.sourceId), ` ${plural(r.messages, 'message')}, ${fmt(r.tokens)} tokens: ${r.reason}`)),
    ),
  );
}

function diffCard(call) {
  const { added, removed } = call.diff;
  const line = (sign, e) =>
    h(
      'li',
      { class: sign === '+' ? 'add' : 'del' },
      `${sign} ${e.kind === 'message' ? '' : `${e.kind} `}${e.label} `,
      chip(e.sourceId),
      ` ${fmt(e.tokens)} tok`,
    );
  return h(
    'div',
    { class: 'card', 'data-testid': 'diff' },
    h('h3', null, `Difference with the previous call (+${added.length} / −${removed.length})`),
    added.length + removed.length === 0
      ? h('div', { class: 'muted' }, 'Nothing changed.')
      : h(
          'ul',
          { class: 'plain' },
          removed.slice(0, 30).map((e) => line('−', e)),
          added.slice(0, 30).map((e) => line('+', e)),
        ),
  );
}

function toolsCard(run, call) {
  const tools = run.tools.filter((t) => t.call === call.index);
  if (!tools.length) return '';
  return h(
    'div',
    { class: 'card', 'data-testid': 'tools' },
    h('h3', null, 'Tool calls'),
    h(
      'ul',
      { class: 'plain' },
      tools.map((t) =>
        h(
          'li',
          { 'data-testid': 'tool-call', 'data-status': t.status },
          h('b', null, t.toolName),
          h('span', { class: `status ${t.status === 'failed' ? 'failed' : t.status === 'done' ? '' : 'running'}` }, t.status),
          t.durationMs !== undefined ? h('span', { class: 'muted' }, ` ${ms(t.durationMs)}`) : '',
          t.arguments !== undefined ? h('div', { class: 'text' }, `args ${t.arguments}`) : '',
          t.result !== undefined ? h('div', { class: 'text' }, `→ ${JSON.stringify(t.result)}`) : '',
          t.error ? h('div', { class: 'diag skipped' }, t.error) : '',
        ),
      ),
    ),
  );
}

function diagnosticsCard(run) {
  const shown = run.diagnostics.filter((d) => d.code !== 'context-audit');
  if (!shown.length) return '';
  return h(
    'div',
    { class: 'card', 'data-testid': 'diagnostics' },
    h('h3', null, 'Diagnostics, budgets and warnings'),
    h(
      'ul',
      { class: 'plain' },
      shown.map((d) => h('li', { class: `diag ${d.level}` }, d.sourceId ? chip(d.sourceId) : '', ` ${d.code}: ${d.message}`)),
    ),
  );
}

// ---- charts (inline SVG) ----

function chartCard(title, testid, svg, legend) {
  return h('div', { class: 'card', 'data-testid': testid }, h('h3', null, title), svg, legend ?? '');
}

function legendOf(sources) {
  return h(
    'div',
    { class: 'legend' },
    sources.map((src) => h('span', null, h('span', { class: 'swatch', style: { background: colorOf(src) } }), src)),
  );
}

function tokensChart(runs) {
  const W = 360;
  const H = 140;
  const pad = { l: 34, b: 18, t: 6 };
  const rows = runs.map((r) => r.calls[0]?.sources ?? []);
  const sources = [...new Set(rows.flat().map((x) => x.sourceId))];
  const max = Math.max(1, ...rows.map((row) => row.reduce((a, x) => a + x.tokens, 0)));
  const bw = Math.min(34, (W - pad.l) / Math.max(1, runs.length) - 6);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'Tokens by source per run' });
  svg.append(s('line', { x1: pad.l, x2: W, y1: H - pad.b, y2: H - pad.b, stroke: '#ccd1db' }));
  svg.append(s('text', { x: pad.l - 4, y: pad.t + 8, 'text-anchor': 'end', 'font-size': 9, fill: '#6b7385' }, fmt(max)));
  svg.append(s('text', { x: pad.l - 4, y: H - pad.b, 'text-anchor': 'end', 'font-size': 9, fill: '#6b7385' }, '0'));
  rows.forEach((row, i) => {
    const x = pad.l + 6 + i * (bw + 6);
    let y = H - pad.b;
    for (const src of sources) {
      const t = row.find((x) => x.sourceId === src)?.tokens ?? 0;
      if (!t) continue;
      const hgt = (t / max) * (H - pad.b - pad.t);
      y -= hgt;
      svg.append(s('rect', { x, y, width: bw, height: hgt, fill: colorOf(src) }, s('title', null, `run ${i + 1} · ${src}: ${t} tokens`)));
    }
    svg.append(s('text', { x: x + bw / 2, y: H - 5, 'text-anchor': 'middle', 'font-size': 9, fill: '#6b7385' }, i + 1));
  });
  return chartCard('Tokens by source per run (first call)', 'chart-tokens', svg, legendOf(sources));
}

function cachedShare(run) {
  let cached = 0;
  let input = 0;
  let measured = false;
  for (const c of run.calls) {
    if (c.usage?.cachedInputTokens !== undefined && c.usage.inputTokens) {
      measured = true;
      cached += c.usage.cachedInputTokens;
      input += c.usage.inputTokens;
    }
  }
  if (measured) return { share: cached / input, measured };
  const repeated = run.calls.reduce((a, c) => a + c.cache.repeatedTokens, 0);
  const total = run.calls.reduce((a, c) => a + c.cache.totalTokens, 0);
  return { share: total ? repeated / total : 0, measured: false };
}

function cachedChart(runs) {
  const W = 260;
  const H = 140;
  const pad = { l: 30, b: 18, t: 6 };
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'Cached share per run' });
  for (const p of [0, 0.5, 1]) {
    const y = H - pad.b - p * (H - pad.b - pad.t);
    svg.append(s('line', { x1: pad.l, x2: W, y1: y, y2: y, stroke: '#e3e6ec' }));
    svg.append(s('text', { x: pad.l - 4, y: y + 3, 'text-anchor': 'end', 'font-size': 9, fill: '#6b7385' }, `${p * 100}%`));
  }
  const bw = Math.min(26, (W - pad.l) / Math.max(1, runs.length) - 6);
  let anyMeasured = false;
  runs.forEach((r, i) => {
    const { share, measured } = cachedShare(r);
    anyMeasured ||= measured;
    const x = pad.l + 6 + i * (bw + 6);
    const hgt = share * (H - pad.b - pad.t);
    svg.append(
      s(
        'rect',
        {
          x,
          y: H - pad.b - hgt,
          width: bw,
          height: Math.max(hgt, 1),
          fill: measured ? '#2b8a3e' : '#8ce99a',
          'data-share': share.toFixed(3),
        },
        s(
          'title',
          null,
          `run ${i + 1}: ${Math.round(share * 100)}% ${measured ? 'read from the cache (service)' : 'repeated prefix (estimate)'}`,
        ),
      ),
    );
    svg.append(s('text', { x: x + bw / 2, y: H - 5, 'text-anchor': 'middle', 'font-size': 9, fill: '#6b7385' }, i + 1));
  });
  const note = h(
    'div',
    { class: 'legend' },
    anyMeasured ? 'dark: cached tokens the service reported' : 'repeated prefix / tokens sent (the service reported no cached tokens)',
  );
  return chartCard('Cached share per run', 'chart-cached', svg, note);
}

function latencyChart(runs) {
  const totals = new Map();
  for (const r of runs) for (const [src, t] of Object.entries(r.latency)) totals.set(src, [...(totals.get(src) ?? []), t]);
  const rows = [...totals.entries()].map(([src, list]) => ({ src, avg: list.reduce((a, b) => a + b, 0) / list.length }));
  const W = 260;
  const rowH = 16;
  const H = Math.max(40, rows.length * rowH + 8);
  const max = Math.max(0.001, ...rows.map((r) => r.avg));
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'Latency per provider' });
  rows.forEach((row, i) => {
    const y = 4 + i * rowH;
    const w = (row.avg / max) * (W - 140);
    svg.append(s('text', { x: 70, y: y + 10, 'text-anchor': 'end', 'font-size': 10, fill: '#1d2330' }, row.src));
    svg.append(s('rect', { x: 76, y: y + 2, width: Math.max(w, 1), height: rowH - 5, rx: 2, fill: colorOf(row.src) }));
    svg.append(s('text', { x: 80 + w, y: y + 10, 'font-size': 9, fill: '#6b7385' }, ms(row.avg)));
  });
  return chartCard('Latency per provider (mean per run)', 'chart-latency', svg);
}

// ---- data ----

async function load() {
  const res = await fetch('api/state');
  const snapshot = await res.json();
  state.showText = snapshot.showText;
  state.storeError = snapshot.storeError;
  for (const session of snapshot.sessions) {
    const known = state.sessions.get(session.sessionId) ?? { sessionId: session.sessionId, runIds: [] };
    Object.assign(known, { userId: session.userId, title: session.title });
    state.sessions.set(session.sessionId, known);
  }
  // A run already heard of on the live connection (opened before this request) is at least as fresh.
  for (const run of Object.values(snapshot.runs).sort((a, b) => a.startedAt - b.startedAt)) if (!state.runs.has(run.runId)) upsertRun(run);
  follow();
  render();
}

function connect() {
  const live = document.getElementById('live');
  const events = new EventSource('api/events');
  events.addEventListener('open', () => {
    live.dataset.state = 'open';
    live.textContent = 'live';
    load().catch((error) => {
      document.getElementById('main').replaceChildren(h('p', { class: 'empty' }, `Could not load the inspector's state: ${error}`));
    });
  });
  events.addEventListener('error', () => {
    live.dataset.state = 'closed';
    live.textContent = 'reconnecting';
  });
  events.addEventListener('run', (e) => {
    upsertRun(JSON.parse(e.data));
    follow();
    render();
  });
}

connect();
