// The /ui viewer in a real browser against a real `skein serve`: the system's
// chromium driven by playwright-core (no browser download).
//
//   node viewer_test.mjs SKEIN_BINARY OUTPUT_DIR     (run.sh checks the prerequisites)
//
// Starts `skein serve --demo` on 127.0.0.1 with an ephemeral port and a tokens
// file, opens /ui, enters the token, opens the demo thread, sends a message and
// sees its run live (token deltas, then the durable text; the weather tool call
// folded with its result), drops and resumes the stream (Last-Event-ID: no event
// twice), checks that markup in a message shows as text and runs nothing,
// makes a thread with the page's form for an agent that thinks and fails (thinking
// collapsed, the diagnosis of the failed run shown), saves
// a screenshot to OUTPUT_DIR and stops the server. Every wait is on a real event
// (a line the server prints, an element the page shows) with a deadline.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [skein, out_dir] = process.argv.slice(2);
if (!skein || !out_dir) {
  console.error('usage: node viewer_test.mjs SKEIN_BINARY OUTPUT_DIR');
  process.exit(2);
}
const chromium_path = process.env.SKEIN_CHROMIUM || '/usr/bin/chromium';
const server_start_ms_max = 30000;  // until the demo's first run has answered
const step_ms_max = 30000;          // any one wait on the page (sanitizer builds are slow)
const server_stop_ms_max = 15000;

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed++;
    console.log(`ok - ${name}`);
  } else {
    failed++;
    console.log(`not ok - ${name}${detail === undefined ? '' : `: ${detail}`}`);
  }
}

// `skein serve --demo`; resolves with its base URL once the demo's run is done.
// Durability flush: a restart (the stream's drop) finds the thread again.
function start_server(dir, tokens_file, port) {
  const proc = spawn(skein, ['serve', '--listen', `127.0.0.1:${port}`, '--data', join(dir, 'data'),
    '--durability', 'flush', '--tokens', tokens_file, '--demo'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server not ready in ${server_start_ms_max} ms:\n${stdout}\n${stderr}`)),
      server_start_ms_max);
    proc.stdout.on('data', (d) => {
      stdout += d;
      const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
      // The demo prints this after its first run: the thread has events to show.
      if (port && stdout.includes('Go on from here:')) {
        clearTimeout(timer);
        resolve(`http://127.0.0.1:${port[1]}`);
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before it was ready:\n${stdout}\n${stderr}`));
    });
  });
  return { proc, ready, output: () => `${stdout}\n${stderr}` };
}

function stop_server(proc) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve(proc.exitCode);
    const timer = setTimeout(() => { proc.kill('SIGKILL'); }, server_stop_ms_max);
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code === null ? signal : code);
    });
    proc.kill('SIGTERM');
  });
}

// Records, inside the page, the streamed (live) and durable assistant texts as
// the viewer adds them, in order: a delta and its final text may land in one
// task, which no polling from outside would see.
function watch_timeline() {
  window.__skein_seen = [];
  const seen = window.__skein_seen;
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (n.nodeType !== 1 || !n.matches('li.msg.assistant')) continue;
        // The record's target, not the node: a live node added and removed in
        // one task (its deltas and final text in one read) is detached by now.
        seen.push({ live: n.classList.contains('live'), node: n, run: r.target.closest('li.run')?.dataset.run || '' });
      }
    }
  }).observe(document.getElementById('timeline'), { childList: true, subtree: true });
}

function seen_texts() {
  return window.__skein_seen.map((s) => ({ live: s.live, run: s.run, text: s.node.querySelector('.text').textContent,
    attached: s.node.isConnected }));
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'skein-ui-test-'));
  const token = `ui-${randomBytes(16).toString('hex')}`;
  const tokens_file = join(dir, 'tokens');
  writeFileSync(tokens_file, `${token} admin\n`);
  let server = start_server(dir, tokens_file, 0);
  let browser = null;
  try {
    const base = await server.ready;
    console.log(`# server at ${base}`);
    browser = await chromium.launch({ executablePath: chromium_path, headless: true, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    page.setDefaultTimeout(step_ms_max);
    const page_errors = [];
    const csp_violations = [];
    const dialogs = [];
    page.on('pageerror', (e) => page_errors.push(String(e)));
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) csp_violations.push(m.text()); });
    page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
    const t0 = Date.now();
    const stream_log = [];
    page.on('request', (r) => { if (r.url().endsWith('/stream')) stream_log.push(`+${Date.now() - t0} ms GET stream (Last-Event-ID ${r.headers()['last-event-id'] || '-'})`); });
    page.on('requestfailed', (r) => { if (r.url().endsWith('/stream')) stream_log.push(`+${Date.now() - t0} ms stream failed: ${r.failure()?.errorText}`); });
    page.on('requestfinished', (r) => { if (r.url().endsWith('/stream')) stream_log.push(`+${Date.now() - t0} ms stream ended`); });

    const res = await page.goto(`${base}/ui`);
    check('GET /ui is 200 text/html', res.status() === 200 && /^text\/html/.test(res.headers()['content-type']),
      `${res.status()} ${res.headers()['content-type']}`);
    check('/ui has a strict CSP', /default-src 'self'/.test(res.headers()['content-security-policy'] || ''));

    // No token yet: the thread list's call is refused and the page asks for one.
    const banner = page.locator('#banner.auth');
    await banner.waitFor();
    check('a 401 asks for the token', /401/.test(await banner.textContent()), await banner.textContent());

    await page.fill('#token-input', token);
    await page.click('#token-form button[type=submit]');
    const link = page.locator('#threads a.title', { hasText: 'Weather in Lisbon' });
    await link.waitFor();
    check('with the token the demo thread is listed', (await link.count()) === 1);
    check('the token is kept in sessionStorage',
      (await page.evaluate(() => sessionStorage.getItem('skein.token'))) === token);
    check('the banner is gone', await page.locator('#banner').isHidden());

    await link.click();
    await page.locator('#stream-state', { hasText: 'live' }).waitFor();
    const demo_link = page.url();  // /ui#thread=<id>
    const first_reply = page.locator('li.run').first().locator('li.msg.assistant');
    await first_reply.waitFor();
    check('the demo run is shown from the log', /18°C in Lisbon/.test(await first_reply.textContent()));
    await page.evaluate(watch_timeline);

    // A run live: deltas, then the final text; the tool call folded with its result.
    await page.fill('#message', 'What is the weather in Lisbon now?');
    await page.click('#send');
    const run2 = page.locator('li.run').nth(1);
    await run2.locator('li.boundary.stop').waitFor();
    check('the second run ended completed', /completed/.test(await run2.locator('li.boundary.stop').textContent()));
    check('the user message is in the run', (await run2.locator('li.msg.user').textContent()).includes('Lisbon now?'));
    const run2_id = await run2.getAttribute('data-run');
    const texts = (await page.evaluate(seen_texts)).filter((s) => s.run === run2_id);
    const live_at = texts.findIndex((s) => s.live);
    const final_at = texts.findIndex((s) => !s.live);
    check('deltas streamed before the final text', live_at >= 0 && final_at > live_at,
      `${JSON.stringify(texts)}\n${stream_log.join('\n')}`);
    check('the deltas were the reply\'s tokens', live_at >= 0 && texts[live_at].text === 'It is 18°C in Lisbon.',
      JSON.stringify(texts));
    check('the durable text replaced the deltas',
      final_at >= 0 && texts[final_at].text === 'It is 18°C in Lisbon with a light northerly wind.' &&
      texts.filter((s) => s.live && s.attached).length === 0 && (await run2.locator('li.msg.assistant').count()) === 1,
      JSON.stringify(texts));
    const tool = run2.locator('details.tool');
    check('one tool call, folded', (await tool.count()) === 1 && (await tool.getAttribute('open')) === null);
    check('the tool call names weather and is done',
      /weather/.test(await tool.locator('summary').textContent()) &&
      (await tool.locator('.tool-status').textContent()) === 'done');
    check('its result is folded into it', (await tool.locator('.tool-body').textContent()).includes('light wind from the north'));
    check('no tool result outside its call', (await run2.locator('li.tool-item').count()) === 1);
    await tool.locator('summary').click();
    check('the fold opens', (await tool.getAttribute('open')) !== null);

    // A dropped stream resumes after the last seq it showed: the server stops
    // (its streams end) and starts again on the same port.
    const shown = () => page.evaluate(() => [...document.querySelectorAll('#timeline [data-seq]')].map((e) => +e.dataset.seq));
    const seq_before = await shown();
    const last_seq = Math.max(...seq_before);
    const resumed_from = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/stream')) resumed_from.push(r.headers()['last-event-id'] || '');
    });
    check('the server stopped for the drop', (await stop_server(server.proc)) === 0);
    await page.locator('#stream-state', { hasText: /dropped|failed/ }).waitFor();
    server = start_server(dir, tokens_file, new URL(base).port);
    await server.ready;
    await page.locator('#stream-state', { hasText: 'live' }).waitFor();
    check('the stream resumed with Last-Event-ID: the last seq shown', resumed_from.includes(String(last_seq)),
      `${JSON.stringify(resumed_from)} vs ${last_seq}`);

    // Markup in a message is text: no element is made, nothing runs.
    const payload = '<img src=x onerror="window.__skein_xss=1;alert(1)"><script>window.__skein_xss=2</script><b>bold</b>';
    await page.fill('#message', payload);
    await page.click('#send');
    const run3 = page.locator('li.run').nth(2);
    await run3.locator('li.boundary.stop').waitFor();
    check('the payload shows as its own text', (await run3.locator('li.msg.user .text').textContent()) === payload);
    check('no element came of it',
      (await page.locator('#timeline img, #timeline script, #timeline b').count()) === 0);
    check('nothing ran', (await page.evaluate(() => window.__skein_xss)) === undefined && dialogs.length === 0,
      JSON.stringify(dialogs));
    const seqs = await shown();
    check('after the resume no event shows twice', new Set(seqs).size === seqs.length && seqs.length > seq_before.length,
      JSON.stringify(seqs));

    // A thread made with the page's form: thinking collapsed, a failure diagnosed.
    const made = await fetch(`${base}/v1/agents`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: 'thinker', system_prompt: 'test', engine_config: {
        rules: [{ match: 'fail', error: 'model <b>exploded</b>' }, { match: 'hang', stall: true }],
        default: { reply: 'ok', thinking: 'pondering <i>this</i>' } } }),
    });
    check('the test agent is made', made.status === 201, String(made.status));
    await page.click('#refresh');
    await page.locator('#new-agent option[value=thinker]').waitFor({ state: 'attached' });
    await page.selectOption('#new-agent', 'thinker');
    await page.fill('#new-title', 'thinking and failing');
    await page.click('#new-thread button[type=submit]');
    await page.locator('#thread-title', { hasText: 'thinking and failing' }).waitFor();
    await page.locator('#stream-state', { hasText: 'live' }).waitFor();
    check('the new thread is listed', (await page.locator('#threads a.title', { hasText: 'thinking and failing' }).count()) === 1);
    await page.fill('#message', 'think');
    await page.click('#send');
    const thought = page.locator('li.run').first().locator('li.thinking details');
    await thought.waitFor();
    check('thinking shows collapsed, as text', (await thought.getAttribute('open')) === null &&
      (await thought.locator('pre').textContent()) === 'pondering <i>this</i>');
    await page.locator('li.run').first().locator('li.boundary.stop').waitFor();
    check('the diagnosis hides while the thread is well', await page.locator('#diagnosis').isHidden());
    await page.fill('#message', 'fail now');
    await page.click('#send');
    const diagnosis = page.locator('#diagnosis.stage-failed');
    await diagnosis.waitFor();
    check('a failed run shows its diagnosis', (await diagnosis.textContent()).includes('error: model <b>exploded</b>'),
      await diagnosis.textContent());
    check('and its stop says so', /failed/.test(await page.locator('li.run').nth(1).locator('li.boundary.stop').textContent()));

    // A cancelled run of this root thread: the thread is open again, and the
    // viewer shows the stage beside it and the diagnosis, as it does for a failure.
    const thread_id = decodeURIComponent(new URL(page.url()).hash.replace(/^#thread=/, ''));
    await page.fill('#message', 'hang now');
    await page.click('#send');
    await page.locator('#thread-status', { hasText: 'running' }).waitFor();
    const cancel = await fetch(`${base}/v1/threads/${encodeURIComponent(thread_id)}/cancel`, {
      method: 'POST', headers: { Authorization: `Bearer ${token}` },
    });
    check('the hanging run is cancelled', cancel.status === 200, String(cancel.status));
    const cancelled_box = page.locator('#diagnosis.stage-cancelled');
    await cancelled_box.waitFor();
    check('a cancelled run shows its diagnosis', /stage cancelled · status open/.test(await cancelled_box.textContent()),
      await cancelled_box.textContent());
    await page.locator('#thread-status', { hasText: 'open · cancelled' }).waitFor();
    check('the row of the thread shows the stage too',
      (await page.locator(`#threads tr[data-id="${thread_id}"] .status`).textContent()) === 'open · cancelled',
      await page.locator(`#threads tr[data-id="${thread_id}"] .status`).textContent());

    check('no script error on the page', page_errors.length === 0, JSON.stringify(page_errors));
    check('no CSP violation', csp_violations.length === 0, JSON.stringify(csp_violations));
    // A reload keeps the tab's token; the link opens the demo thread again.
    await page.goto(demo_link);  // only the hash changes: no load yet
    await page.reload();
    await page.locator('li.run').nth(2).locator('li.boundary.stop').waitFor();
    check('a reload keeps the token and opens the linked thread', await page.locator('#banner').isHidden());
    const shot = join(out_dir, 'ui-viewer.png');
    await page.screenshot({ path: shot, fullPage: false });
    console.log(`# screenshot: ${shot}`);
  } catch (err) {
    check('the browser test ran to its end', false, err && err.stack ? err.stack : String(err));
    console.log(`# server output:\n${server.output()}`);
  } finally {
    if (browser) await browser.close();
    const code = await stop_server(server.proc);
    check('the server stopped cleanly', code === 0, String(code));
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

main();
