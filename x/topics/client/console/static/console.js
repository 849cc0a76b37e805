'use strict';
// bftlog console. Everything here comes from the node's public REST routes (x/topics, x/poa,
// x/staking, CometBFT service), read at one block height per refresh so a screen is one
// consistent snapshot. Record contents are untrusted: they are only ever set as text.

const REFRESH_MS = 1000;
const RATE_WINDOW = 60; // blocks shown in the append-rate chart
const RATE_TOPICS = 8; // topics charted (most records first): bounds the queries per block
const TAIL_BATCH = 100; // records per fetch while tailing
const TAIL_KEEP = 200; // rows kept in the tail table
const LIST_LIMIT = 200; // topics, groups and validators listed
const COLORS = ['#2f6fde', '#d9480f', '#2b8a3e', '#862e9c', '#c2255c', '#1098ad', '#e67700', '#495057'];

const $ = (sel) => document.querySelector(sel);
const enc = encodeURIComponent;

class HTTPError extends Error {
  constructor(status, body) {
    super(body.message || `HTTP ${status}`);
    this.status = status;
    this.code = body.code;
  }
}

// get reads one REST route, at a given block height when one is passed.
async function get(path, height) {
  const headers = height ? { 'x-cosmos-block-height': String(height) } : {};
  const r = await fetch(path, { headers });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new HTTPError(r.status, body);
  return body;
}

function notFound(e) {
  return e instanceof HTTPError && (e.status === 404 || /not found/i.test(e.message));
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text != null) e.textContent = String(text);
  return e;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function base64Bytes(b64) {
  const s = atob(b64 || '');
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// text shows bytes as UTF-8 when they are printable text, else as hex.
function text(b64) {
  const bytes = base64Bytes(b64);
  try {
    const s = utf8.decode(bytes);
    if (!/[\u0000-\u0008\u000e-\u001f\u007f]/.test(s)) return s;
  } catch (_) { /* not UTF-8 */ }
  return '0x' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// A record's key and value are wrapped ({data}) so that null and empty differ, as in Kafka.
function wrapped(b) {
  return b == null ? 'null' : text(b.data);
}

function short(addr) {
  return addr && addr.length > 20 ? addr.slice(0, 12) + '…' + addr.slice(-6) : addr || '';
}

function setStatus(msg, isError) {
  const s = $('#status');
  s.textContent = msg;
  s.className = isError ? 'error' : '';
}

// ---- topics ---------------------------------------------------------------------------------

function sumHW(partitions) {
  return partitions.reduce((n, p) => n + Number(p.high_watermark), 0);
}

function renderTopics(topics, parts) {
  const rows = [];
  topics.forEach((t, i) => {
    parts[i].forEach((p, j) => {
      const id = `${t.name}/${p.partition}`;
      rows.push(el('tr', { class: j === 0 ? 'topic-first' : '', 'data-partition': id },
        el('td', {}, j === 0 ? t.name : ''),
        el('td', { class: 'num' }, p.partition),
        el('td', { class: 'num', 'data-log-start': id }, p.log_start_offset),
        el('td', { class: 'num', 'data-hw': id }, p.high_watermark),
        el('td', { class: 'num' }, p.record_count),
        el('td', { class: 'num' }, p.byte_count),
        el('td', { class: 'mono', title: t.owner }, j === 0 ? short(t.owner) : '')));
    });
  });
  if (rows.length === 0) rows.push(el('tr', {}, el('td', { colspan: 7 }, 'No topics yet.')));
  $('#topics tbody').replaceChildren(...rows);
}

// ---- append rate ----------------------------------------------------------------------------

// sums: height -> Map(topic -> sum of high watermarks at that height, or null if unknown).
// Records appended in block h = sum(h) - sum(h-1): the high watermark only moves on appends.
const sums = new Map();

async function sumAt(topic, height) {
  try {
    return sumHW((await get(`/bftlog/topics/v1/topics/${enc(topic)}/partitions`, height)).partitions || []);
  } catch (e) {
    if (notFound(e)) return 0; // the topic did not exist yet
    return null; // pruned or unavailable: a gap, not a zero
  }
}

async function inParallel(jobs, width) {
  let next = 0;
  async function worker() {
    while (next < jobs.length) await jobs[next++]();
  }
  await Promise.all(Array.from({ length: Math.min(width, jobs.length) }, worker));
}

async function updateRate(height, topics, parts) {
  const current = new Map(topics.map((t, i) => [t.name, sumHW(parts[i])]));
  const chosen = [...current.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, RATE_TOPICS).map((e) => e[0]);
  const from = Math.max(1, height - RATE_WINDOW);
  for (const h of sums.keys()) if (h < from) sums.delete(h);
  sums.set(height, current);
  const jobs = [];
  for (let h = from; h < height; h++) {
    if (!sums.has(h)) sums.set(h, new Map());
    const known = sums.get(h);
    for (const t of chosen) {
      // null (pruned or a failed request) is asked again next time, not kept as a gap.
      if (known.get(t) == null) jobs.push(async () => { known.set(t, await sumAt(t, h)); });
    }
  }
  await inParallel(jobs, 6);
  drawRate(from, height, chosen);
}

function drawRate(from, to, chosen) {
  $('#rate-window').textContent = String(RATE_WINDOW);
  const series = chosen.map((t) => {
    const pts = [];
    for (let h = from + 1; h <= to; h++) {
      const a = sums.get(h - 1)?.get(t);
      const b = sums.get(h)?.get(t);
      pts.push(a == null || b == null ? null : Math.max(0, b - a));
    }
    return { topic: t, pts };
  });
  const max = Math.max(1, ...series.flatMap((s) => s.pts.filter((v) => v != null)));
  const W = 720, H = 160, L = 48, B = 20, n = Math.max(1, to - from);
  const x = (i) => L + (i * (W - L - 8)) / Math.max(1, n - 1);
  const y = (v) => H - B - (v * (H - B - 8)) / max;
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': 'records appended per block' });
  chart.append(svg('line', { x1: L, y1: H - B, x2: W - 8, y2: H - B, stroke: '#ccd' }));
  chart.append(svg('text', { x: 4, y: 14 }, `${max}/block`), svg('text', { x: 4, y: H - B }, '0'));
  chart.append(svg('text', { x: L, y: H - 4 }, `block ${from + 1}`), svg('text', { x: W - 90, y: H - 4 }, `block ${to}`));
  const legend = el('div', { class: 'legend' });
  const totals = el('table', { class: 'rate-totals' },
    el('thead', {}, el('tr', {}, el('th', {}, 'Topic'), el('th', {}, `Records in window`), el('th', {}, 'Peak per block'), el('th', {}, 'Last block'))));
  const body = el('tbody');
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    let d = '';
    s.pts.forEach((v, j) => {
      if (v == null) return;
      d += `${d && s.pts[j - 1] != null ? 'L' : 'M'}${x(j).toFixed(1)},${y(v).toFixed(1)}`;
    });
    if (d) chart.append(svg('path', { d, fill: 'none', stroke: color, 'stroke-width': 2 }));
    const item = el('span', {}, s.topic);
    item.style.setProperty('--c', color);
    legend.append(item);
    const known = s.pts.filter((v) => v != null);
    body.append(el('tr', {},
      el('td', {}, s.topic),
      el('td', { class: 'num', 'data-rate-total': s.topic }, known.reduce((a, b) => a + b, 0)),
      el('td', { class: 'num' }, known.length ? Math.max(...known) : 0),
      el('td', { class: 'num' }, s.pts[s.pts.length - 1] ?? '–')));
  });
  totals.append(body);
  $('#rate').replaceChildren(chart, legend, totals);
}

// ---- live tail --------------------------------------------------------------------------------

// gen changes whenever a tail starts or stops, so a fetch still in flight for an earlier tail
// is dropped instead of landing in (or moving the offset of) the new one.
const tail = { running: false, topic: '', partition: 0, next: 0, gen: 0 };
let partitionsByID = new Map();

function updateTailOptions(topics, parts) {
  partitionsByID = new Map();
  const values = [];
  topics.forEach((t, i) => parts[i].forEach((p) => {
    const id = `${t.name}/${p.partition}`;
    partitionsByID.set(id, { topic: t.name, partition: p.partition, hw: Number(p.high_watermark), logStart: Number(p.log_start_offset) });
    values.push(id);
  }));
  const sel = $('#tail-partition');
  const have = Array.from(sel.options, (o) => o.value);
  if (have.join('\n') === values.join('\n')) return;
  const chosen = sel.value;
  sel.replaceChildren(...values.map((v) => el('option', { value: v }, v)));
  if (values.includes(chosen)) sel.value = chosen;
}

function startTail(ev) {
  ev.preventDefault();
  const p = partitionsByID.get($('#tail-partition').value);
  if (!p) return;
  const raw = $('#tail-offset').value;
  tail.topic = p.topic;
  tail.partition = p.partition;
  tail.next = raw === '' ? Math.max(p.logStart, p.hw - 20) : Number(raw);
  tail.running = true;
  tail.gen++;
  $('#tail tbody').replaceChildren();
  $('#tail-state').textContent = `tailing ${p.topic}/${p.partition} from offset ${tail.next}`;
  tailStep();
}

function stopTail() {
  tail.running = false;
  tail.gen++;
  $('#tail-state').textContent = 'stopped';
}

let tailBusy = false;
async function tailStep() {
  if (!tail.running || tailBusy) return;
  tailBusy = true;
  const gen = tail.gen;
  try {
    for (let i = 0; i < 5 && tail.running; i++) {
      const p = partitionsByID.get(`${tail.topic}/${tail.partition}`);
      if (p && tail.next < p.logStart) tail.next = p.logStart; // retention deleted what was next
      const r = await get(`/bftlog/topics/v1/topics/${enc(tail.topic)}/partitions/${tail.partition}/records?offset=${tail.next}&max_records=${TAIL_BATCH}`);
      if (gen !== tail.gen) return; // a new tail started meanwhile
      const rows = (r.records || []).map((rec) => el('tr', { 'data-offset': rec.offset },
        el('td', { class: 'num' }, rec.offset),
        el('td', { class: 'num', 'data-block': '' }, rec.height),
        el('td', { class: 'mono', 'data-key': '' }, wrapped(rec.key)),
        el('td', { class: 'mono', 'data-value': '' }, wrapped(rec.value)),
        el('td', { class: 'mono', 'data-headers': '' }, (rec.headers || []).map((h) => `${h.key}=${text(h.value)}`).join(', ')),
        el('td', {}, rec.create_time_ms && rec.create_time_ms !== '0' ? new Date(Number(rec.create_time_ms)).toISOString() : '')));
      const tbody = $('#tail tbody');
      tbody.append(...rows);
      while (tbody.rows.length > TAIL_KEEP) tbody.deleteRow(0);
      tail.next = Number(r.next_offset);
      if (rows.length < TAIL_BATCH) break;
    }
  } catch (e) {
    if (gen === tail.gen) $('#tail-state').textContent = `tail ${tail.topic}/${tail.partition}: ${e.message}`;
  } finally {
    tailBusy = false;
  }
  if (gen !== tail.gen) tailStep(); // start the new tail now rather than at the next refresh
}

// ---- consumer groups --------------------------------------------------------------------------

async function renderGroups(height) {
  const page = await get(`/bftlog/topics/v1/groups?pagination.limit=${LIST_LIMIT}`, height);
  const groups = page.groups || [];
  const views = new Array(groups.length);
  await inParallel(groups.map((g, i) => async () => { views[i] = await groupView(g, height); }), 6);
  if (views.length === 0) views.push(el('p', { class: 'hint' }, 'No consumer groups yet.'));
  if (page.pagination?.next_key) views.push(el('p', { class: 'hint' }, `Only the first ${LIST_LIMIT} groups are shown.`));
  $('#groups').replaceChildren(...views);
}

async function groupView(g, height) {
  const id = enc(g.group_id);
  const [detail, lag] = await Promise.all([
    get(`/bftlog/topics/v1/groups/${id}`, height),
    get(`/bftlog/topics/v1/groups/${id}/lag`, height),
  ]);
  const members = detail.members || [];
  const lags = lag.lags || [];
  const total = lags.reduce((n, l) => n + Number(l.lag), 0);
  const memberList = el('ul', {}, ...members.map((m) => el('li', {},
    el('span', { class: 'mono', title: m.member }, short(m.member)), ': ',
    (m.assignment || []).map((a) => `${a.topic}[${(a.partitions || []).join(',')}]`).join(' ') || 'no partitions')));
  const table = el('table', {},
    el('thead', {}, el('tr', {}, ...['Topic', 'Partition', 'Member', 'Committed', 'High watermark', 'Lag'].map((h) => el('th', {}, h)))),
    el('tbody', {}, ...lags.map((l) => el('tr', {},
      el('td', {}, l.topic),
      el('td', { class: 'num' }, l.partition),
      el('td', { class: 'mono', title: l.member || '' }, short(l.member) || '–'),
      el('td', { class: 'num' }, Number(l.committed) < 0 ? 'none' : l.committed),
      el('td', { class: 'num' }, l.high_watermark),
      el('td', { class: Number(l.lag) > 0 ? 'num lag-high' : 'num', 'data-lag': `${g.group_id}/${l.topic}/${l.partition}` }, l.lag)))));
  return el('div', { class: 'group', 'data-group': g.group_id },
    el('h3', {}, `${g.group_id} — generation ${g.generation}, ${members.length} member${members.length === 1 ? '' : 's'}, lag `,
      el('span', { 'data-total-lag': g.group_id }, total)),
    memberList, table);
}

// ---- validators -------------------------------------------------------------------------------

async function renderValidators(height) {
  const [vals, adm] = await Promise.all([
    get(`/cosmos/staking/v1beta1/validators?pagination.limit=${LIST_LIMIT}`, height),
    get('/bftlog/poa/v1/admissions', height),
  ]);
  const byOperator = new Map((adm.admissions || []).map((a) => [a.admission.operator, a]));
  const rows = (vals.validators || []).map((v) => {
    const a = byOperator.get(v.operator_address);
    byOperator.delete(v.operator_address);
    return el('tr', { 'data-validator': v.operator_address },
      el('td', {}, v.description?.moniker || ''),
      el('td', { class: 'mono', title: v.operator_address }, short(v.operator_address)),
      el('td', {}, v.jailed ? 'jailed' : (v.status || '').replace('BOND_STATUS_', '').toLowerCase()),
      el('td', { class: 'num' }, a ? a.current_power : '–'),
      el('td', { class: 'mono', 'data-admitted-by': v.operator_address, title: a?.admission.admitted_by || '' }, a ? short(a.admission.admitted_by) : 'not admitted'),
      el('td', { class: 'num' }, a ? a.admission.admitted_height : ''));
  });
  // Admitted by governance but no validator created yet.
  for (const a of byOperator.values()) {
    rows.push(el('tr', { 'data-validator': a.admission.operator },
      el('td', {}, ''), el('td', { class: 'mono' }, short(a.admission.operator)), el('td', {}, a.status),
      el('td', { class: 'num' }, a.admission.power), el('td', { class: 'mono' }, short(a.admission.admitted_by)),
      el('td', { class: 'num' }, a.admission.admitted_height)));
  }
  $('#validators tbody').replaceChildren(...rows);
}

// ---- refresh loop -----------------------------------------------------------------------------

let chainID = '';
let refreshing = false;
let lastHeight = 0;

async function section(name, fn) {
  try {
    await fn();
    return '';
  } catch (e) {
    return `${name}: ${e.message}`;
  }
}

async function refresh() {
  if (refreshing) return;
  refreshing = true;
  try {
    if (!chainID) {
      const info = await get('/cosmos/base/tendermint/v1beta1/node_info');
      chainID = info.default_node_info?.network || '';
      $('#chain').textContent = `chain ${chainID}`;
    }
    // named=false: the header is all it reads, so the node does not expand named produces.
    const latest = await get('/cosmos/base/tendermint/v1beta1/blocks/latest?named=false');
    // CometBFT stores block H before the app has committed it, so queries at H can fail for a
    // moment ("height in the future"); H-1 is always committed.
    const height = Number(latest.block.header.height) - 1;
    if (height < 1) return;
    $('#height').textContent = `block ${height + 1} · ${latest.block.header.time} · state at ${height}`;
    $('#height').dataset.height = String(height);
    if (height === lastHeight) return; // no new block: nothing new to show
    lastHeight = height;

    const page = await get(`/bftlog/topics/v1/topics?pagination.limit=${LIST_LIMIT}`, height);
    const topics = page.topics || [];
    $('#topics-more').textContent = page.pagination?.next_key ? `Only the first ${LIST_LIMIT} topics are shown.` : '';
    const parts = new Array(topics.length);
    await inParallel(topics.map((t, i) => async () => {
      parts[i] = (await get(`/bftlog/topics/v1/topics/${enc(t.name)}/partitions`, height)).partitions || [];
    }), 6);
    renderTopics(topics, parts);
    updateTailOptions(topics, parts);
    const errors = (await Promise.all([
      section('append rate', () => updateRate(height, topics, parts)),
      section('groups', () => renderGroups(height)),
      section('validators', () => renderValidators(height)),
      section('tail', () => tailStep()),
    ])).filter(Boolean);
    setStatus(errors.join('; '), errors.length > 0);
  } catch (e) {
    setStatus(`node unreachable or failing: ${e.message}`, true);
  } finally {
    refreshing = false;
  }
}

$('#tail-form').addEventListener('submit', startTail);
$('#tail-stop').addEventListener('click', stopTail);
refresh();
setInterval(refresh, REFRESH_MS);
