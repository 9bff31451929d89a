// skein's live thread viewer (served at /ui by `skein serve`; routes in docs/api.md).
//
// Two rules hold everywhere in this file:
// - Every text that comes from the server goes into the page as text
//   (textContent, an attribute at most), never as markup: an event holding
//   `<img src=x onerror=...>` shows those characters and runs nothing. There is
//   no innerHTML here, nor any other call that parses markup.
// - Every API call carries the bearer token the user entered, kept in
//   sessionStorage (this tab only, gone when it closes). A 401 or 403 asks for
//   a token again.
//
// A thread's events come over its SSE stream. EventSource cannot send an
// Authorization header, so the stream is read with fetch() and parsed here;
// after a drop it resumes with Last-Event-ID, the last seq shown.
'use strict';

const token_key = 'skein.token';
const threads_page_limit = 50;
const reconnect_ms_min = 500;      // first wait after a dropped stream
const reconnect_ms_max = 10000;    // waits double up to this
const running_diagnose_ms = 30000; // how often a running thread is diagnosed (stall check)
const preview_chars_max = 120;     // a tool call's arguments in its folded summary

const $ = (id) => document.getElementById(id);

const state = {
  token: null,       // null: none entered yet; '' : a server without tokens
  cursor: '',        // next page of the thread list
  view: null,        // the open thread (open_thread)
};

// ---- DOM helpers: text only ------------------------------------------------

// An element with a class and text content; children are nodes or strings
// (strings become text nodes).
function el(tag, cls, ...children) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function time_of(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  const today = new Date();
  return d.toDateString() === today.toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
}

function short(text, chars_max) {
  return text.length > chars_max ? text.slice(0, chars_max - 1) + '…' : text;
}

function show_banner(text, kind) {
  const b = $('banner');
  b.textContent = text;
  b.className = kind || 'error';
  b.hidden = false;
}

function hide_banner() {
  $('banner').hidden = true;
}

// ---- API -----------------------------------------------------------------

class api_error extends Error {
  constructor(http_status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${http_status}`);
    this.http_status = http_status;
    this.code = e.code || '';
    this.limit = e.limit || '';
    this.field = e.field || '';
  }
}

function auth_headers() {
  return state.token ? { Authorization: `Bearer ${state.token}` } : {};
}

function thread_path(id, rest) {
  return `/v1/threads/${encodeURIComponent(id)}${rest || ''}`;
}

async function api(method, path, body) {
  const headers = auth_headers();
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = null;
  }
  if (!res.ok) {
    const err = new api_error(res.status, data);
    if (res.status === 401 || res.status === 403) ask_for_token(err);
    throw err;
  }
  return data;
}

function describe(err) {
  if (!(err instanceof api_error)) return String(err.message || err);
  let text = `${err.http_status} ${err.code}: ${err.message}`;
  if (err.limit) text += ` (limit ${err.limit})`;
  return text;
}

// ---- token -----------------------------------------------------------------

function ask_for_token(err) {
  const why = err.http_status === 401
    ? 'The server wants a bearer token (401 unauthorized): enter it above.'
    : `This token may not do that (403 forbidden: ${err.message}). Enter another token above.`;
  show_banner(why, 'auth');
  $('token-input').focus();
  show_token_state();
}

function show_token_state() {
  $('token-state').textContent = state.token === null ? 'no token entered'
    : state.token === '' ? 'no token (a server without tokens)' : 'token kept in this tab';
}

function load_token() {
  const t = sessionStorage.getItem(token_key);
  state.token = t;
  show_token_state();
}

function use_token(token) {
  state.token = token;
  sessionStorage.setItem(token_key, token);
  $('token-input').value = '';
  show_token_state();
  hide_banner();
  refresh_threads();
  load_agents();
  if (state.view) open_thread(state.view.id);
}

function forget_token() {
  state.token = null;
  sessionStorage.removeItem(token_key);
  show_token_state();
  if (state.view) close_view(state.view);
  clear($('threads').tBodies[0]);
}

// ---- thread list -----------------------------------------------------------

function threads_query(cursor) {
  const q = new URLSearchParams({ limit: String(threads_page_limit) });
  const agent = $('agent-filter').value.trim();
  const status = $('status-filter').value;
  if (agent) q.set('agent', agent);
  if (status) q.set('status', status);
  if (cursor) q.set('cursor', cursor);
  return `/v1/threads?${q}`;
}

// The badge of a manifest: its status, and its stage when the last run failed
// or was cancelled (a root thread is open again after any run; the stage says
// how its last run ended — the rule diagnose applies too, docs/api.md).
function status_badge(m) {
  const ended_badly = m.stage === 'failed' || m.stage === 'cancelled';
  const text = ended_badly && m.stage !== m.status ? `${m.status} · ${m.stage}` : m.status;
  return el('span', `status ${ended_badly ? m.stage : m.status}`, text);
}

function thread_row(m) {
  const title = el('a', 'title', m.title || m.id);
  title.href = `#thread=${encodeURIComponent(m.id)}`;
  const row = el('tr', state.view && state.view.id === m.id ? 'selected' : '',
    el('td', '', status_badge(m)),
    el('td', 'agent', m.agent_id),
    el('td', '', title, m.title ? el('div', 'muted id', m.id) : null),
    el('td', 'time', time_of(m.updated_at)));
  row.dataset.id = m.id;
  return row;
}

// A listed thread's row, with the manifest a run left (status, title, time).
function update_row(m) {
  for (const row of $('threads').tBodies[0].rows)
    if (row.dataset.id === m.id) row.replaceWith(thread_row(m));
}

async function refresh_threads(more) {
  const body = $('threads').tBodies[0];
  try {
    const page = await api('GET', threads_query(more ? state.cursor : ''));
    if (!more) clear(body);
    for (const m of page.threads) body.append(thread_row(m));
    state.cursor = page.next_cursor || '';
    $('more').hidden = !state.cursor;
    $('threads-empty').hidden = body.rows.length > 0;
    if (!more && $('banner').className !== 'auth') hide_banner();
  } catch (err) {
    if (!(err instanceof api_error && (err.http_status === 401 || err.http_status === 403)))
      show_banner(`Listing threads failed: ${describe(err)}`);
  }
}

async function load_agents() {
  const select = $('new-agent');
  try {
    const data = await api('GET', '/v1/agents');
    clear(select);
    for (const a of data.agents) {
      const opt = el('option', '', a.id);
      opt.value = a.id;
      select.append(opt);
    }
  } catch (_) {
    // A token without agents to list still reads threads; the form stays empty.
  }
}

async function new_thread(e) {
  e.preventDefault();
  const agent_id = $('new-agent').value;
  if (!agent_id) return show_banner('New thread: choose an agent first.');
  const body = { agent_id };
  const title = $('new-title').value.trim();
  if (title) body.title = title;
  try {
    const m = await api('POST', '/v1/threads', body);
    $('new-title').value = '';
    await refresh_threads();
    location.hash = `thread=${encodeURIComponent(m.id)}`;
  } catch (err) {
    show_banner(`Creating the thread failed: ${describe(err)}`);
  }
}

// ---- SSE over fetch --------------------------------------------------------

// A parser of the text/event-stream format: feed() it decoded text in pieces
// of any size; on_frame gets {id, event, data} at each blank line. Comments
// (`: keepalive`) and unknown fields are skipped.
function sse_parser(on_frame) {
  let buffer = '';
  let frame = { id: null, event: '', data: [] };
  const line_end = /\r\n|\n|\r/g;
  function line(text) {
    if (text === '') {
      if (frame.data.length) on_frame({ id: frame.id, event: frame.event || 'message', data: frame.data.join('\n') });
      frame = { id: null, event: '', data: [] };
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') frame.data.push(value);
    else if (field === 'event') frame.event = value;
    else if (field === 'id') frame.id = value;
  }
  return function feed(text) {
    buffer += text;
    let start = 0;
    line_end.lastIndex = 0;
    for (let m; (m = line_end.exec(buffer)) !== null;) {
      // A '\r' last in the buffer may be the first half of a "\r\n".
      if (m[0] === '\r' && m.index === buffer.length - 1) break;
      line(buffer.slice(start, m.index));
      start = m.index + m[0].length;
    }
    buffer = buffer.slice(start);
  };
}

// Resolves after `ms`, or at once when `signal` aborts (the view closed).
function sleep(ms, signal) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });
}

// Follows a thread's stream until the view closes: from the first event, then
// after each drop from the last seq shown (Last-Event-ID), waiting longer after
// each failure in a row.
async function follow(view) {
  const signal = view.abort.signal;
  let wait_ms = reconnect_ms_min;
  while (!signal.aborted && !view.ended) {
    try {
      const headers = auth_headers();
      if (view.last_seq > 0) headers['Last-Event-ID'] = String(view.last_seq);
      set_stream_state(view, view.last_seq > 0 ? `resuming after #${view.last_seq}…` : 'connecting…');
      const res = await fetch(thread_path(view.id, '/stream'), { headers, signal, cache: 'no-store' });
      if (!res.ok) {
        let body = null;
        try { body = await res.json(); } catch (_) { body = null; }
        const err = new api_error(res.status, body);
        if (res.status === 401 || res.status === 403) {
          ask_for_token(err);
          return set_stream_state(view, 'stopped: no access');
        }
        if (res.status === 404) {
          show_banner(`Thread ${view.id}: ${err.message}`);
          return set_stream_state(view, 'stopped: not found');
        }
        throw err;
      }
      set_stream_state(view, 'live');
      wait_ms = reconnect_ms_min;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const feed = sse_parser((frame) => on_frame(view, frame));
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        feed(value);
      }
    } catch (err) {
      if (signal.aborted) return;
      set_stream_state(view, `stream failed: ${describe(err)}`);
    }
    if (signal.aborted || view.ended) break;
    set_stream_state(view, `dropped; resuming after #${view.last_seq} in ${Math.round(wait_ms / 100) / 10} s`);
    diagnose(view);
    await sleep(wait_ms, signal);
    wait_ms = Math.min(wait_ms * 2, reconnect_ms_max);
  }
}

function set_stream_state(view, text) {
  if (state.view !== view) return;
  const s = $('stream-state');
  s.textContent = text;
  s.dataset.state = text === 'live' ? 'live' : '';
}

// ---- the timeline ----------------------------------------------------------

function on_frame(view, frame) {
  if (state.view !== view) return;
  let data;
  try {
    data = JSON.parse(frame.data);
  } catch (_) {
    return show_banner(`A stream frame that is no JSON (${frame.event}); skipped.`);
  }
  keep_at_bottom(() => show_frame(view, frame, data));
}

function show_frame(view, frame, data) {
  if (frame.event === 'delta') return on_delta(view, data);
  if (frame.event === 'deleted') {
    view.ended = true;
    set_stream_state(view, 'ended: the thread was deleted');
    return $('timeline').append(el('li', 'marker deleted', 'The thread was deleted.'));
  }
  if (frame.event === 'error') {
    view.ended = true;
    set_stream_state(view, 'ended with an error');
    return show_banner(`Stream: ${(data.error && data.error.message) || frame.data}`);
  }
  // A resumed stream starts after last_seq; anything older is a repeat.
  if (typeof data.seq !== 'number' || data.seq <= view.last_seq) return;
  view.last_seq = data.seq;
  render_event(view, data);
}

// The container of a run's events, made when its first event (or delta) shows.
function run_box(view, run_id) {
  if (!run_id) return $('timeline');
  let box = view.runs.get(run_id);
  if (!box) {
    const list = el('ol', 'events');
    const head = el('div', 'run-head', el('span', 'run-id', `run ${run_id}`), el('span', 'run-state muted', ''));
    const item = el('li', 'run', head, list);
    item.dataset.run = run_id;
    $('timeline').append(item);
    box = { item, list, head };
    view.runs.set(run_id, box);
  }
  return box.list;
}

function set_run_state(view, run_id, text, cls) {
  const box = view.runs.get(run_id);
  if (!box) return;
  const s = box.head.querySelector('.run-state');
  s.textContent = text;
  s.className = `run-state ${cls || ''}`;
}

function on_delta(view, d) {
  const list = run_box(view, d.run_id);
  let live = view.live.get(d.run_id);
  if (!live) {
    live = el('li', 'msg assistant live', el('div', 'who', 'assistant (streaming)'), el('div', 'text', ''));
    view.live.set(d.run_id, live);
    list.append(live);
  }
  live.querySelector('.text').textContent += d.text || '';
}

// The durable text of a run replaces its streamed deltas.
function drop_live(view, run_id) {
  const live = view.live.get(run_id);
  if (live) {
    live.remove();
    view.live.delete(run_id);
  }
}

function pre(text, cls) {
  return el('pre', cls || '', text);
}

function folded(summary_text, cls, ...body) {
  return el('details', cls, el('summary', '', summary_text), ...body);
}

function render_event(view, ev) {
  const list = run_box(view, ev.run);
  const p = ev.payload || {};
  let item = null;
  switch (ev.type) {
    case 'message':
      if (p.role === 'assistant') drop_live(view, ev.run);
      item = el('li', `msg ${p.role}`, el('div', 'who', p.role), el('div', 'text', p.text));
      break;
    case 'assistant_text':
      drop_live(view, ev.run);
      item = el('li', 'msg assistant', el('div', 'who', 'assistant'), el('div', 'text', p.text));
      break;
    case 'thinking':
      item = el('li', 'thinking', folded('thinking', '', pre(p.text)));
      break;
    case 'system_prompt':
      item = el('li', 'system-prompt', folded('system prompt', '', pre(p.text)));
      break;
    case 'local_system_message':
      item = el('li', 'msg local', el('div', 'who', 'note'), el('div', 'text', p.text));
      break;
    case 'tool_call':
      item = render_tool_call(view, ev);
      break;
    case 'tool_result':
      item = render_tool_result(view, ev);
      break;
    case 'result':
      item = el('li', `result ${p.outcome}`, result_text(p));
      break;
    case 'compaction':
      item = render_compaction(p);
      break;
    case 'signal':
      item = render_signal(view, ev);
      break;
    default:
      item = el('li', 'marker', folded(`${ev.type}`, '', pre(JSON.stringify(p, null, 2))));
  }
  if (item) {
    item.dataset.seq = String(ev.seq);
    item.title = `#${ev.seq} ${ev.type} · ${time_of(ev.ts)}`;
    list.append(item);
  }
}

function result_text(p) {
  const u = p.usage || {};
  const parts = [p.outcome || 'done',
    `${u.input_tokens || 0} in / ${u.output_tokens || 0} out tokens`];
  if (p.cost_usd) parts.push(`$${p.cost_usd.toFixed(4)}`);
  parts.push(`${p.duration_ms || 0} ms`, `${p.turns || 0} turn(s)`);
  return parts.join(' · ');
}

// A tool call shows folded; its result lands inside it when it comes.
function render_tool_call(view, ev) {
  const p = ev.payload;
  const args = JSON.stringify(p.arguments === undefined ? {} : p.arguments);
  const status = el('span', 'tool-status pending', 'running…');
  const summary = el('summary', '', el('span', 'tool-name', p.name), el('span', 'tool-args', short(args, preview_chars_max)), status);
  const body = el('div', 'tool-body', el('div', 'label', 'arguments'), pre(JSON.stringify(p.arguments, null, 2)));
  const details = el('details', 'tool', summary, body);
  view.calls.set(p.call_id, { status, body });
  return el('li', 'tool-item', details);
}

function render_tool_result(view, ev) {
  const p = ev.payload;
  const call = view.calls.get(p.call_id);
  const output = [el('div', 'label', p.is_error ? 'error' : 'result'), pre(p.output, p.is_error ? 'error' : '')];
  if (call) {
    call.body.append(...output);
    call.status.textContent = p.is_error ? 'error' : 'done';
    call.status.className = `tool-status ${p.is_error ? 'error' : 'done'}`;
    view.calls.delete(p.call_id);
    return null;
  }
  // Its call is older than what this view read (or was compacted away).
  const status = el('span', `tool-status ${p.is_error ? 'error' : 'done'}`, p.is_error ? 'error' : 'done');
  return el('li', 'tool-item', el('details', 'tool',
    el('summary', '', el('span', 'tool-name', p.name), el('span', 'tool-args', `result of ${p.call_id}`), status),
    el('div', 'tool-body', ...output)));
}

function render_compaction(p) {
  let text = `compaction (${p.strategy}): #${p.from_seq}–#${p.to_seq}`;
  if (p.tokens_before) text += `, ${p.tokens_before} → ${p.tokens_after} tokens`;
  const events = Array.isArray(p.events) ? p.events.length : 0;
  return el('li', 'marker compaction',
    folded(text, '', el('div', 'muted', `${events} event(s) in the working view it starts`),
      pre(JSON.stringify(p.events, null, 2))));
}

function render_signal(view, ev) {
  const p = ev.payload;
  const data = p.data || {};
  if (p.name === 'thread.start') {
    set_run_state(view, ev.run, `started ${time_of(ev.ts)}`, 'running');
    set_thread_status('running');
    view.running = true;
    return el('li', 'boundary start', `▶ run started (${data.source || 'input'})`);
  }
  if (p.name === 'thread.stop') {
    const outcome = data.outcome || 'stopped';
    set_run_state(view, ev.run, `${outcome} ${time_of(ev.ts)}`, outcome);
    drop_live(view, ev.run);
    view.running = false;
    after_run(view);
    return el('li', `boundary stop ${outcome}`, `■ run ${outcome}${data.error ? `: ${data.error}` : ''}`);
  }
  const detail = Object.keys(data).length ? pre(JSON.stringify(data, null, 2)) : null;
  const item = el('li', 'marker signal', detail ? folded(`⚑ ${p.name}`, '', detail) : `⚑ ${p.name}`);
  if (/orphaned|interrupted|failed|denied/.test(p.name)) item.classList.add('bad');
  return item;
}

// Runs `fn` (which adds to the timeline) and follows the new end, but only when
// the reader was at the end before: reading older events is not interrupted.
function keep_at_bottom(fn) {
  const t = $('timeline');
  const at_end = t.scrollHeight - t.scrollTop - t.clientHeight < 40;
  fn();
  if (at_end) t.scrollTop = t.scrollHeight;
}

// ---- the open thread -------------------------------------------------------

function set_thread_status(status) {
  const s = $('thread-status');
  s.textContent = status;
  s.className = `status ${status}`;
}

function show_manifest(m) {
  $('thread-title').textContent = m.title || m.id;
  $('thread-status').replaceWith(Object.assign(status_badge(m), { id: 'thread-status' }));
  const parts = [`agent ${m.agent_id}`, m.id, `updated ${time_of(m.updated_at)}`];
  if (m.usage) parts.push(`${m.usage.input_tokens} in / ${m.usage.output_tokens} out tokens`);
  $('thread-meta').textContent = parts.join(' · ');
}

function close_view(view) {
  view.abort.abort();
  clearInterval(view.timer);
  if (state.view === view) {
    state.view = null;
    $('thread-pane').hidden = true;
  }
}

async function open_thread(id) {
  if (state.view) close_view(state.view);
  const view = {
    id, last_seq: 0, ended: false, running: false,
    runs: new Map(), live: new Map(), calls: new Map(),
    abort: new AbortController(), timer: 0,
  };
  state.view = view;
  clear($('timeline'));
  $('diagnosis').hidden = true;
  $('thread-title').textContent = id;
  $('thread-meta').textContent = '';
  $('thread-pane').hidden = false;
  for (const row of $('threads').tBodies[0].rows) row.classList.toggle('selected', row.dataset.id === id);
  try {
    show_manifest(await api('GET', thread_path(id)));
  } catch (err) {
    if (state.view === view) show_banner(`Thread ${id}: ${describe(err)}`);
    return;
  }
  // A running thread may be stalled: look again now and then while it runs.
  view.timer = setInterval(() => { if (view.running) diagnose(view); }, running_diagnose_ms);
  diagnose(view);
  follow(view);
}

// After a run: the manifest's new totals and title, and what went wrong if anything.
async function after_run(view) {
  try {
    const m = await api('GET', thread_path(view.id));
    if (state.view === view) show_manifest(m);
    update_row(m);
  } catch (_) { /* the stream goes on; the header stays as it was */ }
  diagnose(view);
}

// GET .../diagnose: shown when the thread is stalled, failed or cancelled (or
// when asked for with the button).
async function diagnose(view, always) {
  let d;
  try {
    d = await api('GET', thread_path(view.id, '/diagnose'));
  } catch (err) {
    if (always && state.view === view) show_banner(`Diagnose failed: ${describe(err)}`);
    return;
  }
  if (state.view !== view) return;
  const box = $('diagnosis');
  const bad = d.stage === 'stalled' || d.stage === 'failed' || d.stage === 'cancelled';
  if (!bad && !always) {
    box.hidden = true;
    return;
  }
  clear(box);
  box.className = `stage-${d.stage}`;
  const lines = [`stage ${d.stage} · status ${d.status} · last seq #${d.last_seq}`];
  if (d.last_run_id) lines.push(`last run ${d.last_run_id}: ${d.last_outcome || '—'}`);
  if (d.last_error) lines.push(`error: ${d.last_error}`);
  if (d.stage === 'stalled' || d.stage === 'running') lines.push(`last heartbeat ${Math.round(d.heartbeat_age_ms / 1000)} s ago`);
  box.append(el('strong', '', 'Diagnosis'), ...lines.map((l) => el('div', '', l)));
  if (d.stage === 'stalled') {
    const b = el('button', '', 'Reconcile (end the stalled run as failed)');
    b.type = 'button';
    b.addEventListener('click', async () => {
      try {
        await api('POST', thread_path(view.id, '/reconcile'));
        diagnose(view, true);
      } catch (err) {
        show_banner(`Reconcile failed: ${describe(err)}`);
      }
    });
    box.append(b);
  }
  box.hidden = false;
}

async function send_message(e) {
  e.preventDefault();
  const view = state.view;
  const text = $('message').value;
  if (!view || !text.trim()) return;
  const button = $('send');
  button.disabled = true;
  try {
    await api('POST', thread_path(view.id, '/entries'), { text });
    $('message').value = '';
    hide_banner();
  } catch (err) {
    show_banner(`Sending failed: ${describe(err)}`);
  } finally {
    button.disabled = false;
  }
}

async function cancel_run() {
  const view = state.view;
  if (!view) return;
  try {
    const r = await api('POST', thread_path(view.id, '/cancel'));
    if (!r.cancelled) show_banner('No run to cancel.', 'info');
  } catch (err) {
    show_banner(`Cancel failed: ${describe(err)}`);
  }
}

function on_hash() {
  const m = /^#thread=(.+)$/.exec(location.hash);
  if (!m) return;
  const id = decodeURIComponent(m[1]);
  if (!state.view || state.view.id !== id) open_thread(id);
}

function start() {
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    use_token($('token-input').value.trim());
  });
  $('forget-token').addEventListener('click', forget_token);
  $('refresh').addEventListener('click', () => {
    refresh_threads();
    load_agents();
  });
  $('more').addEventListener('click', () => refresh_threads(true));
  $('agent-filter').addEventListener('change', () => refresh_threads());
  $('status-filter').addEventListener('change', () => refresh_threads());
  $('new-thread').addEventListener('submit', new_thread);
  $('send-form').addEventListener('submit', send_message);
  $('message').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) $('send-form').requestSubmit();
  });
  $('diagnose').addEventListener('click', () => state.view && diagnose(state.view, true));
  $('cancel-run').addEventListener('click', cancel_run);
  window.addEventListener('hashchange', on_hash);
  load_token();
  // Without a stored token, try none: a loopback server without a tokens file
  // answers; one with tokens says 401 and the prompt shows.
  refresh_threads();
  load_agents();
  on_hash();
}

start();
