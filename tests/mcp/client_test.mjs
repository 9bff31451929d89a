// skein mcp against the official MCP TypeScript SDK client (the version
// package.json pins): spawns `skein mcp --data <tmp> --agent a` through the
// SDK's StdioClientTransport, lists the tools, calls each, and checks results
// and tool errors. Usage: node client_test.mjs SKEIN_BINARY
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const skein = process.argv[2];
const data = mkdtempSync(join(tmpdir(), 'skein-mcp-'));
const transport = new StdioClientTransport({
  command: skein,
  args: ['mcp', '--data', data, '--durability', 'flush', '--agent', 'a'],
  stderr: 'inherit',
});
const client = new Client({ name: 'skein-conformance', version: '1.0.0' });
try {
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, 'skein');
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ['cleanup_threads', 'create_thread', 'dismiss_suggestion', 'graph_traverse',
    'list_threads', 'promote_suggestion', 'read_thread', 'resolve_thread', 'send_entry', 'session_close',
    'session_start']);
  for (const t of tools) assert.equal(t.inputSchema.type, 'object', t.name);

  const call = (name, args) => client.callTool({ name, arguments: args });
  const good = async (name, args) => {
    const r = await call(name, args);
    assert.equal(r.isError, false, `${name}: ${JSON.stringify(r.content)}`);
    assert.equal(r.content[0].type, 'text');
    return r.structuredContent ?? JSON.parse(r.content[0].text);
  };
  const bad = async (name, args, field) => {
    const r = await call(name, args);
    assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} should fail`);
    assert.match(r.content[0].text, new RegExp(field), name);
  };

  // The work-item tools called as their seed (gitmem) calls them: its parameter
  // names, its answer fields. session_start's project scopes the calls after it.
  const started = await good('session_start', { project: 'web' });
  assert.equal(started.project, 'web');
  assert.ok(started.session_id);
  assert.ok(Array.isArray(started.suggested_threads));
  const sid = started.session_id;
  const created = await good('create_thread', { text: 'fix the broken deploy pipeline', linear_issue: 'PROJ-123' });
  assert.equal(created.deduplicated, false);
  const id = created.thread.id;
  assert.equal(created.thread.text, 'fix the broken deploy pipeline');
  assert.equal(created.thread.status, 'open');
  assert.equal(created.thread.linear_issue, 'PROJ-123');
  assert.equal(created.thread.project, 'web');
  assert.match(created.thread.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const again = await good('create_thread', { text: 'Fix the broken deploy pipeline!' });
  assert.equal(again.deduplicated, true);
  assert.equal(again.thread.id, id);
  assert.equal(again.dedup_details.matched_thread_id, id);
  const other = await good('create_thread', { text: 'write the release notes' });
  let listed = await good('list_threads', { status: 'open', include_resolved: false, project: 'web' });
  assert.deepEqual(listed.threads.map((t) => t.id).sort(), [id, other.thread.id].sort());
  assert.equal(listed.total_open, 2);
  assert.equal(listed.total_resolved, 0);
  assert.equal((await good('list_threads', { project: 'default' })).threads.length, 0);

  const connected = await good('graph_traverse',
    { lens: 'connected_to', node: 'issue:PROJ-123', predicate: 'relates_to_thread', project: 'web', limit: 10 });
  assert.equal(connected.triples.length, 1);
  assert.equal(connected.triples[0].subject, `thread:${id}`);
  const stats = await good('graph_traverse', { lens: 'stats', project: 'web' });
  assert.equal(stats.stats.total_triples, 3);  // two creations, one relates_to
  assert.equal(stats.top_objects[0].count, 1);
  assert.deepEqual(stats.issues_by_learning_count, [{ issue: 'issue:PROJ-123', count: 1 }]);
  assert.deepEqual(stats.stats.top_subjects.map((x) => x.count), [2, 1]);  // agent:a, the thread
  assert.equal((await good('graph_traverse', { lens: 'produced_by', node: 'a' })).triples.length, 3);
  assert.equal((await good('graph_traverse', { lens: 'provenance', node: 'issue:PROJ-123', depth: 2 })).triples.length, 2);

  await good('send_entry', { thread_id: id, text: 'hello', wait: true });
  const read = await good('read_thread', { thread_id: id });
  assert.match(JSON.stringify(read), /hello/);

  const resolved = await good('resolve_thread', { text_match: 'deploy pipeline', resolution_note: 'rolled back' });
  assert.equal(resolved.success, true);
  assert.equal(resolved.resolved_thread.id, id);
  assert.equal(resolved.resolved_thread.status, 'resolved');
  assert.equal(resolved.resolved_thread.resolution_note, 'rolled back');
  listed = await good('list_threads', { include_resolved: true });
  assert.equal(listed.total_open, 1);
  assert.equal(listed.total_resolved, 1);
  assert.equal(listed.threads.length, 2);
  listed = await good('list_threads', { status: 'resolved' });
  assert.deepEqual(listed.threads.map((t) => t.id), [id]);

  const cleaned = await good('cleanup_threads', { project: 'web', auto_archive: true });
  assert.equal(cleaned.summary.total_open, 1);
  assert.equal(cleaned.groups.emerging.length, 1);
  assert.equal(cleaned.groups.emerging[0].thread_id, other.thread.id);
  for (const g of ['active', 'cooling', 'dormant']) assert.deepEqual(cleaned.groups[g], []);
  assert.equal(cleaned.archived_count, 0);
  assert.deepEqual(cleaned.archived_ids, []);

  const closed = await good('session_close', { session_id: sid, close_type: 'quick',
    open_threads: ['write the docs', { text: 'ship the beta', status: 'open' }, { text: 'old', status: 'resolved' }] });
  assert.deepEqual(closed.items.map((i) => i.thread.text), ['write the docs', 'ship the beta']);
  assert.equal(closed.items[0].thread.project, 'web');

  // Topics recurring in three sessions of the project become suggestions, carried by session_start.
  for (let i = 0; i < 3; ++i) {
    const s = await good('session_start', { project: 'web' });
    await good('session_close', { session_id: s.session_id, close_type: 'standard',
      topics: ['migrate billing to postgres', 'tune the flaky tests'] });
  }
  const carried = await good('session_start', { project: 'web' });
  assert.equal(carried.suggested_threads.length, 2, JSON.stringify(carried.suggested_threads));
  const promoted = await good('promote_suggestion',
    { suggestion_id: carried.suggested_threads[0].id, project: 'web' });
  assert.ok(promoted.thread.id);
  assert.equal(promoted.thread.project, 'web');
  assert.equal(promoted.suggestion.status, 'promoted');
  const dismissed = await good('dismiss_suggestion', { suggestion_id: carried.suggested_threads[1].id });
  assert.equal(dismissed.suggestion.status, 'dismissed');

  // skein's own names stay, as aliases of the seed's.
  const alias = await good('create_thread', { text: 'rotate the signing keys', session_id: 's9' });
  const byAlias = await good('resolve_thread', { text: 'signing keys', note: 'rotated', session_id: 's9' });
  assert.equal(byAlias.resolved_thread.id, alias.thread.id);
  assert.equal(byAlias.resolution, 'rotated');
  assert.equal((await good('graph_traverse', { lens: 'connected', node: 'session:s9' })).triples.length, 2);
  const viaItems = await good('session_close', { session_id: 's9', open_items: ['file the expenses'] });
  assert.equal(viaItems.items[0].thread.text, 'file the expenses');

  await bad('create_thread', {}, 'arguments.text: required');
  await bad('resolve_thread', { text_match: 'a', text: 'a' }, 'arguments.text');
  await bad('resolve_thread', { resolution_note: 'why' }, 'thread_id');
  await bad('list_threads', { limit: 0 }, 'arguments.limit');
  await bad('list_threads', { status: 'closed' }, 'arguments.status');
  await bad('graph_traverse', { lens: 'sideways' }, 'arguments.lens');
  await bad('graph_traverse', { lens: 'stats', predicate: 'likes' }, 'arguments.predicate');
  await bad('promote_suggestion', { suggestion_id: 'nope' }, 'not_found');
  await bad('dismiss_suggestion', {}, 'arguments.suggestion_id');
  await bad('resolve_thread', { text_match: 'no such item anywhere' }, 'not_found');
  await bad('session_close', { session_id: 's10', close_type: 'sloppy' }, 'arguments.close_type');
  await bad('read_thread', { thread_id: 'missing' }, 'not_found');
  // Still answering after the errors.
  assert.ok((await good('list_threads', {})).threads);
  await assert.rejects(call('no_such_tool', {}), /unknown tool/);
  console.log(`ok: ${tools.length} tools through the SDK ${LATEST_PROTOCOL_VERSION} client`);
} finally {
  await client.close();
  rmSync(data, { recursive: true, force: true });
}
