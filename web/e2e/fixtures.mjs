// A stand-in daemon for visual checks: serves the built dist/ and answers
// the API from fixtures, so every screen can be rendered and photographed
// in a known state. The real-daemon flow lives in daemon.mjs.
import { createServer } from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { webRoot } from './lib.mjs';

const now = Date.now();
const iso = (minAgo) => new Date(now - minAgo * 60_000).toISOString();

const chats = [
  { id: 'c_trip', title: 'Lisbon trip planning', created_at: iso(300), updated_at: iso(2), message_count: 6 },
  { id: 'c_mail', title: 'Reply to the landlord', created_at: iso(900), updated_at: iso(50), message_count: 4 },
  { id: 'c_notes', title: 'Weekly review notes', created_at: iso(3000), updated_at: iso(1500), message_count: 9 },
  { id: 'c_tax', title: 'Find the 2025 tax receipts', created_at: iso(9000), updated_at: iso(6000), message_count: 3 },
];

const writeArgs = { path: '/home/sam/notes/lisbon.md', content: '# Lisbon\n\n- Flights: TAP 1342, Fri 07:40\n- Hotel: Casa do Bairro, 3 nights\n' };
const messages = [
  { id: 'm_1', chat_id: 'c_trip', seq: 1, turn_id: 't_1', role: 'user', content: 'What did Ana say about the Lisbon dates? Put the flight and hotel into my trip notes.', created_at: iso(6) },
  {
    id: 'm_2', chat_id: 'c_trip', seq: 2, turn_id: 't_1', role: 'assistant', content: 'Let me look through your mail first.',
    tool_calls: [{ id: 'call_1', name: 'mail_search', arguments: { query: 'from:ana lisbon', limit: 10 } }], created_at: iso(6),
  },
  {
    id: 'm_3', chat_id: 'c_trip', seq: 3, turn_id: 't_1', role: 'tool', tool_call_id: 'call_1', tool_name: 'mail_search',
    content: '2 messages: "Lisbon 14–17 March?" (Ana, 3 Mar), "Re: flights" (Ana, 5 Mar)',
    tool: { input: { query: 'from:ana lisbon', limit: 10 }, effective_input: { query: 'from:ana lisbon', limit: 10 }, decision: 'allowed', policy: 'allow', status: 'ok', duration_ms: 38 },
    created_at: iso(6),
  },
  {
    id: 'm_4', chat_id: 'c_trip', seq: 4, turn_id: 't_1', role: 'assistant',
    content: 'Ana suggested **14–17 March** and confirmed on 5 March:\n\n> Friday morning works, I booked TAP 1342.\n\n| | Detail |\n|---|---|\n| Flight | TAP 1342, Fri 14 Mar, 07:40 |\n| Hotel | Casa do Bairro, 3 nights |\n\nI will add this to `notes/lisbon.md`.',
    tool_calls: [{ id: 'call_2', name: 'write_file', arguments: writeArgs }], created_at: iso(5),
  },
];

const approval = {
  id: 'a_1', kind: 'approval', chat_id: 'c_trip', turn_id: 't_1', call_id: 'call_2', tool: 'write_file', args: writeArgs,
  risk: 'medium', preview: 'Create /home/sam/notes/lisbon.md (82 bytes, new file)',
  reason: 'risk medium is above the auto-approve threshold low; this turn read untrusted content (mail_read (id 42))',
  tainted_by: [{ tool: 'mail_read', detail: 'id 42', call_id: 'call_1', at: iso(6) }],
  schema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'File to write' },
      content: { type: 'string', description: 'Full new contents' },
      append: { type: 'boolean', description: 'Append instead of replacing' },
    },
    required: ['path', 'content'],
  },
  created_at: iso(5), expires_at: new Date(now + 4 * 60_000 + 12_000).toISOString(),
};

const mailMessages = [
  { id: 'm_10', chat_id: 'c_mail', seq: 1, turn_id: 't_9', role: 'user', content: 'Tell the landlord the heating is fixed.', created_at: iso(55) },
  { id: 'm_11', chat_id: 'c_mail', seq: 2, turn_id: 't_9', role: 'assistant', content: '', tool_calls: [{ id: 'call_9', name: 'mail_send', arguments: { to: 'landlord@example.org', subject: 'Heating', body: 'Hi, the heating works again.' } }], created_at: iso(54) },
  { id: 'm_12', chat_id: 'c_mail', seq: 3, turn_id: 't_9', role: 'tool', tool_call_id: 'call_9', tool_name: 'mail_send', content: 'The user denied this action. It was NOT done. Note: not yet, wait for the plumber invoice', tool: { input: { to: 'landlord@example.org' }, decision: 'denied', policy: 'gate', status: 'not_run' }, created_at: iso(52) },
  { id: 'm_13', chat_id: 'c_mail', seq: 4, turn_id: 't_9', role: 'assistant', content: 'Understood — I did not send it. I will wait until the plumber invoice arrives.', created_at: iso(50) },
];

const day = (i) => new Date(now - i * 86_400_000).toISOString().slice(0, 10);
// The shape of GET /api/usage (internal/usage.Summary).
const g = (key, cost, tokens, requests = 0, extra = {}) => ({ key, cost, tokens, requests, errors: 0, input_tokens: Math.round(tokens * 0.85), output_tokens: Math.round(tokens * 0.15), cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, ...extra });
const usage = {
  period: '7d', currency: 'USD', estimate: true,
  totals: g('', 3.42, 908_400, 214),
  unattributed_requests: 17,
  by_day: [0.31, 0.52, 0.18, 0.74, 0.49, 0.66, 0.52].map((c, i) => g(day(6 - i), c, Math.round(c * 265_000), 30)),
  by_service: [g('chat', 2.41, 640_000, 150), g('mail.distill', 0.58, 160_000, 47), g('unknown', 0.43, 108_400, 17)],
  by_action: [g('turn', 2.41, 640_000, 150, { service: 'chat' }), g('summarise', 0.58, 160_000, 47, { service: 'mail.distill' }), g('embed', 0.02, 8000, 5, { service: 'search' })],
  by_model: [g('gpt-5-mini', 2.1, 600_000, 120), g('claude-sonnet-4.5', 1.22, 200_000, 60), g('qwen3:4b', 0, 108_400, 34, { unpriced: true })],
  by_token_type: [{ type: 'input', tokens: 690_000, cost: 1.9 }, { type: 'output', tokens: 86_000, cost: 1.3 }, { type: 'cache_read', tokens: 122_000, cost: 0.2 }, { type: 'cache_write', tokens: 10_400, cost: 0.02 }],
  tools: [
    { tool: 'mail_search', calls: 61, errors: 0, avg_ms: 42, max_ms: 130, total_ms: 2562 },
    { tool: 'read_file', calls: 38, errors: 2, avg_ms: 4, max_ms: 11, total_ms: 152 },
    { tool: 'calendar_list', calls: 22, errors: 0, avg_ms: 18, max_ms: 40, total_ms: 396 },
    { tool: 'write_file', calls: 7, errors: 1, avg_ms: 6, max_ms: 9, total_ms: 42 },
  ],
  recent: [],
};

// The shape of GET /api/budget (internal/budget.Status).
const endOfDay = new Date(now); endOfDay.setHours(24, 0, 0, 0);
const budget = {
  enabled: true, warn_percent: 80,
  caps: [
    { period: 'day', metric: 'cost_usd', limit: 2, used: 1.7, percent: 85, state: 'warning', since: iso(600), resets: endOfDay.toISOString() },
    { period: 'month', metric: 'tokens', limit: 5_000_000, used: 908_400, percent: 18.2, state: 'ok', since: iso(9000), resets: new Date(now + 20 * 86_400_000).toISOString() },
  ],
  day: { cost_usd: 1.7, tokens: 120_000 }, month: { cost_usd: 9.1, tokens: 908_400 },
};

const auditTypes = ['message.user', 'policy.decision', 'approval.requested', 'approval.resolved', 'tool.run', 'message.assistant'];
const audit = Array.from({ length: 14 }, (_, i) => {
  const type = auditTypes[i % auditTypes.length];
  return {
    id: 120 - i, ts: iso(i * 3 + 1), type, chat_id: 'c_trip', turn_id: 't_1', tool: type.startsWith('tool') || type.startsWith('approval') ? 'write_file' : undefined,
    summary: {
      'message.user': 'user: What did Ana say about the Lisbon dates?',
      'policy.decision': 'write_file → gate (threshold: medium > low)',
      'approval.requested': 'approval a_1 requested for write_file',
      'approval.resolved': 'approval a_1: edit by user',
      'tool.run': 'write_file ok in 6ms',
      'message.assistant': 'assistant: Ana suggested 14–17 March…',
    }[type],
    data: { tool: 'write_file', args: { path: '/home/sam/notes/lisbon.md', content: '# Lisbon…' }, api_key: '[redacted]' },
    prev_hash: 'a'.repeat(64), hash: (120 - i).toString(16).padStart(64, 'b'),
  };
});

const system = {
  version: '0.4.0-dev', started_at: iso(185), uptime_seconds: 185 * 60, data_dir: '/home/sam/.local/share/hestia',
  checks: [
    { name: 'daemon', status: 'ok', detail: 'listening on 127.0.0.1:4317' },
    { name: 'disk.space', status: 'ok', detail: '212 GiB free' },
    { name: 'home.writable', status: 'ok', detail: '' },
    { name: 'llm.endpoint', status: 'ok', detail: 'fast: gpt-5-mini · 142 ms' },
    { name: 'llm.strong', status: 'warn', detail: 'strong: claude-sonnet-4.5 · slow (2.1 s)' },
    { name: 'llm.embed', status: 'ok', detail: 'local embedder' },
    { name: 'store.chat', status: 'ok', detail: 'integrity ok · 2.1 MiB' },
    { name: 'store.audit', status: 'ok', detail: 'integrity ok · 8.4 MiB' },
    { name: 'store.mail', status: 'ok', detail: 'integrity ok · 412 MiB' },
    { name: 'mail.imap', status: 'fail', detail: 'imap.example.org: connection refused' },
    { name: 'calendar.vdir', status: 'ok', detail: '3 calendars, 1,204 events' },
  ],
};
const tools = [
  { name: 'mail_search', description: 'Search mail by sender, subject and text', risk: 'low', read_only: true, available: true, decision: 'allow', decision_source: 'threshold' },
  { name: 'read_file', description: 'Read a file inside the allowed folders', risk: 'low', read_only: true, available: true, decision: 'allow', decision_source: 'threshold' },
  { name: 'write_file', description: 'Create or replace a file', risk: 'medium', available: true, decision: 'gate', decision_source: 'threshold' },
  { name: 'mail_send', description: 'Send an email', risk: 'high', available: false, unavailable_reason: 'no SMTP account configured', decision: 'gate', decision_source: 'threshold' },
  { name: 'mcp__browser_open', description: 'Open a web page', risk: 'high', available: true, decision: 'deny', decision_source: 'deny_prefix' },
];

const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png', '.webmanifest': 'application/manifest+json' };

/** The code the fixture daemon "prints" for local pairing. */
export const FIXTURE_PAIR_CODE = 'ABCD-EFGH';

export function startFixtures({ streaming = true } = {}) {
  const dist = join(webRoot, 'dist');
  const sse = new Set();
  const srv = createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    const send = (status, body) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(body === undefined ? '' : JSON.stringify(body));
    };
    const p = u.pathname;
    if (p === '/health') return send(200, { status: 'ok', version: '0.4.0-dev' });
    // Local pairing as the daemon does it: a request id first, then the
    // code it "printed" (FIXTURE_PAIR_CODE) buys the token.
    if (p === '/api/pair/local/start') return send(202, { request: 'f'.repeat(32), expires_at: new Date(Date.now() + 120_000).toISOString(), ttl_seconds: 120, code_length: 8, attempts: 3 });
    if (p === '/api/pair/local') {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const ok = JSON.parse(body || '{}').code?.replace(/-/g, '').toUpperCase() === FIXTURE_PAIR_CODE.replace('-', '');
        if (ok) send(200, { token: 'fixture-token' });
        else send(403, { error: { code: 'invalid_code', message: "that is not the code for this browser's request; 2 attempts left" } });
      });
      return;
    }
    if (p.startsWith('/api/')) {
      if (req.headers.authorization !== 'Bearer fixture-token') return send(401, { error: { code: 'unauthorized', message: 'a valid bearer token is required' } });
      if (p === '/api/events') {
        res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
        res.write(`event: ready\ndata: ${JSON.stringify({ type: 'ready', data: { last_seq: 10 } })}\n\n`);
        sse.add(res);
        req.on('close', () => sse.delete(res));
        return;
      }
      if (p === '/api/chats') return send(200, { chats });
      const m = /^\/api\/chats\/([^/]+)$/.exec(p);
      if (m) {
        const chat = chats.find((c) => c.id === m[1]);
        if (!chat) return send(404, { error: { code: 'not_found', message: 'no such chat' } });
        const msgs = chat.id === 'c_trip' ? messages : chat.id === 'c_mail' ? mailMessages : [];
        return send(200, { chat, messages: msgs });
      }
      if (/^\/api\/chats\/[^/]+\/status$/.test(p)) return send(200, { running: false, queued: 0 });
      if (p === '/api/approvals') {
        const chat = u.searchParams.get('chat');
        return send(200, { approvals: !chat || chat === 'c_trip' ? [approval] : [] });
      }
      if (p === '/api/usage') return send(200, usage);
      if (p === '/api/budget') return send(200, budget);
      if (p === '/api/audit') return send(200, { events: audit, next_before: 106 });
      if (p === '/api/system') return send(200, system);
      if (p === '/api/tools') return send(200, { tools });
      return send(404, { error: { code: 'not_found', message: 'no such endpoint' } });
    }
    let file = normalize(join(dist, p));
    if (!file.startsWith(dist) || !existsSync(file) || statSync(file).isDirectory()) file = join(dist, 'index.html');
    res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  let seq = 10;
  const emit = (type, data, chat_id) => {
    seq++;
    const line = `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify({ seq, type, chat_id, data })}\n\n`;
    for (const r of sse) r.write(line);
  };
  return new Promise((resolve) => {
    srv.listen(0, '127.0.0.1', () => {
      const url = `http://127.0.0.1:${srv.address().port}`;
      resolve({
        url,
        emit,
        close: () => new Promise((r) => {
          for (const s of sse) s.end();
          srv.close(r);
          srv.closeAllConnections?.();
        }),
      });
    });
  });
}
