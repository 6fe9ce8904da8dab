// Normalises GET /api/usage into what the page draws. The usage ledger is
// its own package; this reader accepts the documented field names and a few
// spellings around them so a small change there does not blank the page.

export interface Row {
  key: string;
  cost: number;
  tokens: number;
  calls: number;
  errors: number;
  avgMs?: number;
  p95Ms?: number;
  maxMs?: number;
  /** No rate matched this model, so its cost shows as 0. */
  unpriced?: boolean;
}

export interface Usage {
  totalCost: number;
  totalTokens: number;
  totalCalls: number;
  unlabelledCost: number;
  unlabelledTokens: number;
  unlabelledRequests: number;
  /** The offline embedder's work: never priced, not in the totals. */
  localRequests: number;
  localTokens: number;
  estimate: boolean;
  byDay: Row[];
  byService: Row[];
  byAction: Row[];
  byModel: Row[];
  byTokenType: Row[];
  tools: Row[];
}

type Obj = Record<string, unknown>;

function num(o: Obj, ...keys: string[]): number {
  for (const k of keys) {
    const v = o[k];
    if (typeof v === 'number' && Number.isFinite(v)) return v;
  }
  return 0;
}

function maybe(o: Obj, ...keys: string[]): number | undefined {
  for (const k of keys) if (typeof o[k] === 'number') return o[k] as number;
  return undefined;
}

function tokensOf(o: Obj): number {
  const t = maybe(o, 'tokens', 'total_tokens', 'token_count');
  if (t !== undefined) return t;
  return num(o, 'input_tokens', 'prompt_tokens') + num(o, 'output_tokens', 'completion_tokens') + num(o, 'cached_tokens', 'cache_read_tokens') + num(o, 'reasoning_tokens');
}

function rowOf(o: Obj, keyNames: string[]): Row {
  let key = '';
  for (const k of ['key', ...keyNames]) {
    if (typeof o[k] === 'string') {
      key = o[k] as string;
      break;
    }
  }
  if (!key && !('key' in o)) {
    const firstStr = Object.values(o).find((v) => typeof v === 'string');
    key = (firstStr as string) ?? '';
  }
  return {
    key,
    cost: num(o, 'cost_usd', 'cost', 'usd', 'total_cost_usd'),
    tokens: tokensOf(o),
    calls: num(o, 'calls', 'count', 'requests', 'n'),
    errors: num(o, 'errors', 'error_count', 'failed'),
    avgMs: maybe(o, 'avg_ms', 'mean_ms', 'avg_duration_ms'),
    p95Ms: maybe(o, 'p95_ms', 'p95_duration_ms'),
    maxMs: maybe(o, 'max_ms'),
    unpriced: o.unpriced === true || undefined,
  };
}

function rows(v: unknown, keyNames: string[]): Row[] {
  if (Array.isArray(v)) return v.filter((x) => x && typeof x === 'object').map((x) => rowOf(x as Obj, keyNames));
  if (v && typeof v === 'object') {
    // {"openai": {...}} or {"input": 1234}
    return Object.entries(v as Obj).map(([k, x]) =>
      typeof x === 'number' ? { key: k, cost: 0, tokens: x, calls: 0, errors: 0 } : { ...rowOf((x ?? {}) as Obj, []), key: k },
    );
  }
  return [];
}

function pick(o: Obj, ...keys: string[]): unknown {
  for (const k of keys) if (o[k] !== undefined) return o[k];
  return undefined;
}

export function normaliseUsage(raw: unknown): Usage {
  const o = (raw && typeof raw === 'object' ? raw : {}) as Obj;
  const totals = (pick(o, 'totals', 'total') ?? {}) as Obj;
  const by = (pick(o, 'by', 'breakdowns') ?? o) as Obj;
  const byService = rows(pick(by, 'by_service', 'service', 'services'), ['service']);
  const unl = (pick(o, 'unlabelled', 'unlabeled') ?? {}) as Obj;
  const isUnlabelled = (k: string) => k === '' || k === 'unlabelled' || k === 'unlabeled' || k === 'unknown';
  const unlabelledRow = byService.find((r) => isUnlabelled(r.key));
  const byDay = rows(pick(by, 'by_day', 'day', 'days', 'daily'), ['day', 'date']).sort((a, b) => a.key.localeCompare(b.key));
  const sumCost = byDay.reduce((a, r) => a + r.cost, 0);
  const sumTokens = byDay.reduce((a, r) => a + r.tokens, 0);
  return {
    totalCost: maybe(totals, 'cost_usd', 'cost', 'usd') ?? sumCost,
    totalTokens: Object.keys(totals).length ? tokensOf(totals) : sumTokens,
    totalCalls: num(totals, 'calls', 'requests', 'count'),
    unlabelledCost: maybe(unl, 'cost_usd', 'cost') ?? unlabelledRow?.cost ?? 0,
    unlabelledTokens: Object.keys(unl).length ? tokensOf(unl) : (unlabelledRow?.tokens ?? 0),
    unlabelledRequests: num(o, 'unattributed_requests', 'unlabelled_requests') || (unlabelledRow?.calls ?? 0),
    localRequests: num((o.local ?? {}) as Obj, 'requests'),
    localTokens: num((o.local ?? {}) as Obj, 'tokens'),
    estimate: o.estimate === true,
    byDay,
    byService: byService.map((r) => (isUnlabelled(r.key) ? { ...r, key: 'unlabelled' } : r)),
    byAction: rows(pick(by, 'by_action', 'action', 'actions'), ['action']),
    byModel: rows(pick(by, 'by_model', 'model', 'models'), ['model']),
    byTokenType: rows(pick(by, 'by_token_type', 'token_type', 'token_types'), ['token_type', 'type', 'kind']),
    tools: rows(pick(o, 'tools', 'by_tool', 'tool_calls'), ['tool', 'name']),
  };
}
