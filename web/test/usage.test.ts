import { describe, expect, it } from 'vitest';
import { normaliseUsage } from '../src/lib/usage';

describe('normaliseUsage', () => {
  it('keeps the offline embedder work apart from billable totals', () => {
    const u = normaliseUsage({ totals: { requests: 7, tokens: 900, cost: 0.02 }, local: { requests: 64, tokens: 426000, cost: 0 } });
    expect(u.totalCalls).toBe(7);
    expect(u.totalTokens).toBe(900);
    expect([u.localRequests, u.localTokens]).toEqual([64, 426000]);
  });

  it('reads totals, breakdowns and unlabelled spend', () => {
    const u = normaliseUsage({
      period: '7d',
      totals: { cost_usd: 1.5, input_tokens: 1000, output_tokens: 500, calls: 12 },
      by_day: [
        { day: '2026-12-02', cost_usd: 1, input_tokens: 600, output_tokens: 300 },
        { day: '2026-12-01', cost_usd: 0.5, tokens: 600 },
      ],
      by_service: [
        { service: 'chat', cost_usd: 1.2, tokens: 1200 },
        { service: '', cost_usd: 0.3, tokens: 300 },
      ],
      by_model: [{ model: 'gpt', cost_usd: 1.5 }],
      by_token_type: { input: 1000, output: 500 },
      tools: [{ tool: 'read_file', calls: 4, errors: 1, avg_ms: 3, p95_ms: 9 }],
    });
    expect(u.totalCost).toBe(1.5);
    expect(u.totalTokens).toBe(1500);
    expect(u.totalCalls).toBe(12);
    expect(u.byDay.map((d) => d.key)).toEqual(['2026-12-01', '2026-12-02']);
    expect(u.byDay[1].tokens).toBe(900);
    expect(u.unlabelledCost).toBe(0.3);
    expect(u.byService.map((r) => r.key)).toEqual(['chat', 'unlabelled']);
    expect(u.byTokenType).toEqual([
      { key: 'input', cost: 0, tokens: 1000, calls: 0, errors: 0 },
      { key: 'output', cost: 0, tokens: 500, calls: 0, errors: 0 },
    ]);
    expect(u.tools[0]).toMatchObject({ key: 'read_file', calls: 4, errors: 1, avgMs: 3, p95Ms: 9 });
  });

  it('survives an empty or odd body', () => {
    for (const raw of [null, {}, [], 'x', { by_day: 'nope' }]) {
      const u = normaliseUsage(raw);
      expect(u.totalCost).toBe(0);
      expect(u.byDay).toEqual([]);
    }
  });
});

describe('normaliseUsage with the ledger’s own shape', () => {
  it('reads internal/usage.Summary', () => {
    const grp = (key: string, cost: number, tokens: number, requests: number, extra = {}) => ({ key, cost, tokens, requests, errors: 0, input_tokens: tokens, output_tokens: 0, ...extra });
    const u = normaliseUsage({
      period: '30d', currency: 'USD', estimate: true,
      totals: grp('', 2, 1000, 9),
      unattributed_requests: 3,
      by_service: [grp('chat', 1.5, 800, 6), grp('unknown', 0.5, 200, 3)],
      by_action: [grp('turn', 1.5, 800, 6, { service: 'chat' })],
      by_day: [grp('2026-12-01', 2, 1000, 9)],
      by_model: [grp('local-model', 0, 300, 2, { unpriced: true })],
      by_token_type: [{ type: 'input', tokens: 900, cost: 1 }, { type: 'cache_read', tokens: 100, cost: 0 }],
      tools: [{ tool: 'read_file', calls: 2, errors: 0, avg_ms: 3.5, max_ms: 6, total_ms: 7 }],
    });
    expect(u).toMatchObject({ totalCost: 2, totalTokens: 1000, totalCalls: 9, unlabelledCost: 0.5, unlabelledRequests: 3, estimate: true });
    expect(u.byService.map((r) => r.key)).toEqual(['chat', 'unlabelled']);
    expect(u.byAction[0].key).toBe('turn');
    expect(u.byModel[0]).toMatchObject({ key: 'local-model', unpriced: true, calls: 2 });
    expect(u.byTokenType.map((r) => r.key)).toEqual(['input', 'cache_read']);
    expect(u.tools[0]).toMatchObject({ key: 'read_file', avgMs: 3.5, maxMs: 6 });
  });
});

import { fillDays } from '../src/components/Charts';

describe('fillDays', () => {
  it('fills a week ending today with zero days', () => {
    const rows = fillDays([{ key: '2026-12-01', cost: 1, tokens: 5, calls: 1, errors: 0 }], 3, new Date('2026-12-02T12:00:00Z'));
    expect(rows.map((r) => [r.key, r.tokens])).toEqual([['2026-11-30', 0], ['2026-12-01', 5], ['2026-12-02', 0]]);
    expect(fillDays([], undefined)).toEqual([]);
  });
});
