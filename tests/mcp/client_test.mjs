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

  const started = await good('session_start', { session_id: 's1' });
  assert.equal(started.session_id, 's1');
  const created = await good('create_thread', { text: 'fix the broken deploy', session_id: 's1' });
  assert.equal(created.deduplicated, false);
  const id = created.item.id;
  const again = await good('create_thread', { text: 'fix the broken deploy' });
  assert.equal(again.item.id, id);
  assert.equal(again.deduplicated, true);
  const listed = await good('list_threads', { limit: 10 });
  assert.ok(listed.items.some((i) => i.id === id));
  await good('graph_traverse', { lens: 'stats' });
  await good('graph_traverse', { lens: 'connected', node: `thread:${id}` });
  await good('cleanup_threads', {});
  await good('send_entry', { thread_id: id, text: 'hello', wait: true });
  const read = await good('read_thread', { thread_id: id });
  assert.match(JSON.stringify(read), /hello/);
  const resolved = await good('resolve_thread', { thread_id: id, note: 'done' });
  assert.equal(resolved.status, 'resolved');
  await good('session_close', { session_id: 's1', summary: 'ok', open_items: ['write the docs'] });

  // Topics recurring in three sessions become suggestions, carried by session_start.
  for (const sid of ['s2', 's3', 's4'])
    await good('session_close', { session_id: sid, topics: ['migrate billing to postgres', 'tune the flaky tests'] });
  const carried = await good('session_start', { session_id: 's5' });
  assert.equal(carried.suggestions.length, 2, JSON.stringify(carried.suggestions));
  const promoted = await good('promote_suggestion', { suggestion_id: carried.suggestions[0].id });
  assert.ok(promoted.item.id);
  const dismissed = await good('dismiss_suggestion', { suggestion_id: carried.suggestions[1].id });
  assert.equal(dismissed.status, 'dismissed');

  await bad('create_thread', {}, 'arguments.text: required');
  await bad('list_threads', { limit: 0 }, 'arguments.limit');
  await bad('graph_traverse', { lens: 'sideways' }, 'arguments.lens');
  await bad('promote_suggestion', { suggestion_id: 'nope' }, 'not_found');
  await bad('dismiss_suggestion', {}, 'arguments.suggestion_id');
  await bad('resolve_thread', { text: 'no such item anywhere' }, 'not_found');
  await bad('read_thread', { thread_id: 'missing' }, 'not_found');
  // Still answering after the errors.
  assert.ok((await good('list_threads', {})).items);
  await assert.rejects(call('no_such_tool', {}), /unknown tool/);
  console.log(`ok: ${tools.length} tools through the SDK ${LATEST_PROTOCOL_VERSION} client`);
} finally {
  await client.close();
  rmSync(data, { recursive: true, force: true });
}
