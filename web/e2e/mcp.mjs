// An outside agent (any MCP client) calls Hestia's tools over the daemon's
// /api/mcp endpoint; a gated call shows up in the PWA as an approval card in
// the "MCP: <client>" chat and the MCP call finishes only after the user
// approves it there.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert, shot, test } from './lib.mjs';

function post(url, token, session, body) {
  const headers = {
    Authorization: `Bearer ${token}`,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
  };
  if (session) headers['Mcp-Session-Id'] = session;
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

// The JSON-RPC response in a JSON or SSE answer.
async function answer(r) {
  const text = await r.text();
  if ((r.headers.get('content-type') || '').includes('text/event-stream')) {
    for (const line of text.split('\n')) {
      if (!line.startsWith('data:')) continue;
      const m = JSON.parse(line.slice(5));
      if (m.id !== undefined) return m;
    }
    throw new Error(`no response in the event stream: ${text.slice(0, 500)}`);
  }
  return JSON.parse(text);
}

export async function runMCPFlow({ page, daemon }) {
  await test("daemon: an MCP client's gated call waits for an approval card in the app", async () => {
    const token = await page.evaluate(() => localStorage.getItem('hestia.token'));
    const url = daemon.url + '/api/mcp';
    const denied = await post(url, 'wrong', '', { jsonrpc: '2.0', id: 0, method: 'initialize', params: {} });
    assert(denied.status === 401, `wrong token got ${denied.status}`);
    const init = await post(url, token, '', {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e-agent', version: '1' } },
    });
    assert(init.ok, `initialize: ${init.status}`);
    const session = init.headers.get('mcp-session-id');
    const info = await answer(init);
    assert(info.result?.serverInfo?.name === 'hestia', `initialize answer: ${JSON.stringify(info)}`);
    const ack = await post(url, token, session, { jsonrpc: '2.0', method: 'notifications/initialized' });
    assert(ack.ok, `initialized: ${ack.status}`);
    const target = join(daemon.home, 'from-mcp.txt');
    const call = post(url, token, session, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'write_file', arguments: { path: '~/from-mcp.txt', content: 'written by an outside agent' } },
    }).then(answer);
    await page.locator('.chat-item', { hasText: 'MCP: e2e-agent' }).click();
    await page.getByText('Approval needed').waitFor();
    await shot(page, 'e2e-mcp-approval');
    assert(!existsSync(target), 'the MCP call ran before approval');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    const res = await call;
    assert(res.result && !res.result.isError, `tools/call answer: ${JSON.stringify(res)}`);
    assert(readFileSync(target, 'utf8') === 'written by an outside agent', 'file not written after approval');
  }, page);
}
