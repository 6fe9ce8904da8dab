import { useEffect, useState } from 'preact/hooks';
import { Bars, DayChart } from '../components/Charts';
import { Alert } from '../components/icons';
import { useApp } from '../context';
import type { BudgetCap, BudgetStatus } from '../api/types';
import { ApiError } from '../api/client';
import { count, duration, money } from '../lib/format';
import { normaliseUsage, type Usage } from '../lib/usage';
import { Failure, PageHeader } from './common';

const periods = [
  ['7d', '7 days'],
  ['30d', '30 days'],
  ['all', 'All time'],
] as const;

export function UsagePage() {
  const app = useApp();
  const [period, setPeriod] = useState<string>('7d');
  const [data, setData] = useState<Usage | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [budget, setBudget] = useState<BudgetStatus | null>(null);
  const load = () => {
    setErr(null);
    app.client.usage(period).then((r) => setData(normaliseUsage(r)), setErr);
  };
  useEffect(load, [period]);
  // The caps are today's and this month's, whatever period is shown. A
  // daemon without budgets (404) or a failed read just hides the panel:
  // the usage figures are still worth showing.
  useEffect(() => {
    let live = true;
    app.client.budget().then(
      (b) => live && setBudget(b),
      (e) => live && !(e instanceof ApiError && e.status === 401) && setBudget(null),
    );
    return () => {
      live = false;
    };
  }, []);

  return (
    <div class="page">
      <PageHeader title="Usage" subtitle="What the models cost and what the tools did.">
        <div class="segmented" role="tablist" aria-label="Period">
          {periods.map(([k, label]) => (
            <button role="tab" aria-selected={period === k} class={period === k ? 'on' : ''} onClick={() => setPeriod(k)}>
              {label}
            </button>
          ))}
        </div>
      </PageHeader>
      {budget && <BudgetPanel b={budget} />}
      {err ? <Failure err={err} retry={load} /> : !data ? <div class="skeleton tall" /> : <UsageView u={data} days={period === '7d' ? 7 : period === '30d' ? 30 : undefined} />}
    </div>
  );
}

export function UsageView({ u, days }: { u: Usage; days?: number }) {
  const toolCalls = u.tools.reduce((a, r) => a + r.calls, 0);
  const toolErrors = u.tools.reduce((a, r) => a + r.errors, 0);
  return (
    <>
      <div class="stats">
        <Stat label="Spend" value={money(u.totalCost)} />
        <Stat label="Tokens" value={count(u.totalTokens)} />
        <Stat label="Model calls" value={count(u.totalCalls)} />
        <Stat label="Tool calls" value={count(toolCalls)} note={toolErrors ? `${toolErrors} failed` : undefined} />
      </div>
      {(u.unlabelledCost > 0 || u.unlabelledTokens > 0 || u.unlabelledRequests > 0) && (
        <div class="callout warn" role="note">
          <Alert size={16} />
          <span>
            <strong>{money(u.unlabelledCost)}</strong> ({count(u.unlabelledTokens)} tokens
            {u.unlabelledRequests ? `, ${count(u.unlabelledRequests)} requests` : ''}) was spent by callers that did not say which service
            they are. Give each program using the gateway its own label to see where it goes.
          </span>
        </div>
      )}
      {u.localRequests > 0 && (
        <div class="muted small local-work" role="note">
          Local, offline work (never billed, not counted above or in budgets): {count(u.localRequests)} embedding requests,{' '}
          {count(u.localTokens)} tokens.
        </div>
      )}
      <div class="grid2">
        <div class="panel">
          <h2>Cost by day</h2>
          <DayChart rows={u.byDay} metric="cost" format={money} days={days} />
        </div>
        <div class="panel">
          <h2>Tokens by day</h2>
          <DayChart rows={u.byDay} metric="tokens" format={count} days={days} />
        </div>
        <div class="panel">
          <h2>By service</h2>
          <Bars rows={u.byService} metric={u.byService.some((r) => r.cost > 0) ? 'cost' : 'tokens'} format={u.byService.some((r) => r.cost > 0) ? money : count} />
        </div>
        <div class="panel">
          <h2>By action</h2>
          <Bars rows={u.byAction} metric={u.byAction.some((r) => r.cost > 0) ? 'cost' : 'tokens'} format={u.byAction.some((r) => r.cost > 0) ? money : count} />
        </div>
        <div class="panel">
          <h2>By model</h2>
          <Bars rows={u.byModel} metric={u.byModel.some((r) => r.cost > 0) ? 'cost' : 'tokens'} format={u.byModel.some((r) => r.cost > 0) ? money : count} />
        </div>
        <div class="panel">
          <h2>By token type</h2>
          <Bars rows={u.byTokenType} metric="tokens" format={count} />
        </div>
      </div>
      {u.estimate && <p class="muted small">Costs are estimates from the rates table; models without a rate count as $0 and are marked “no rate”.</p>}
      <div class="panel">
        <h2>Tools</h2>
        {u.tools.length === 0 ? (
          <div class="chart-empty muted">No tool calls in this period.</div>
        ) : (
          <div class="table-wrap">
            <table class="table">
              <thead>
                <tr>
                  <th>Tool</th>
                  <th class="num">Calls</th>
                  <th class="num">Errors</th>
                  <th class="num">Average</th>
                  <th class="num">{u.tools.some((t) => t.p95Ms !== undefined) ? 'p95' : 'Slowest'}</th>
                </tr>
              </thead>
              <tbody>
                {[...u.tools]
                  .sort((a, b) => b.calls - a.calls)
                  .map((t) => (
                    <tr>
                      <td class="mono">{t.key}</td>
                      <td class="num">{count(t.calls)}</td>
                      <td class={'num' + (t.errors ? ' bad' : '')}>{count(t.errors)}</td>
                      <td class="num">{duration(t.avgMs) || '—'}</td>
                      <td class="num">{duration(t.p95Ms ?? t.maxMs) || '—'}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </>
  );
}

const periodWord: Record<string, string> = { day: 'Daily', month: 'Monthly' };
const metricWord: Record<string, string> = { cost_usd: 'cost', tokens: 'tokens' };

function capValue(c: BudgetCap, n: number): string {
  return c.metric === 'cost_usd' ? money(n) : count(n);
}

function resetsIn(iso: string | undefined, now: number): string {
  const t = iso ? Date.parse(iso) : NaN;
  if (Number.isNaN(t)) return '';
  const mins = Math.max(0, Math.round((t - now) / 60_000));
  if (mins < 60) return `resets in ${mins} min`;
  if (mins < 48 * 60) return `resets in ${Math.round(mins / 60)} h`;
  return 'resets ' + new Date(t).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

/** The model budget caps (GET /api/budget) and where spend stands. */
export function BudgetPanel({ b, now = Date.now() }: { b: BudgetStatus; now?: number }) {
  const caps = b.enabled ? b.caps ?? [] : [];
  return (
    <div class="panel budget" aria-label="Budget caps">
      <h2>Budget caps</h2>
      {caps.length === 0 ? (
        <div class="chart-empty muted">No budget caps are set. Add daily or monthly caps under [budget] in the config.</div>
      ) : (
        <ul class="caps">
          {caps.map((c) => {
            const pct = Math.max(0, Math.round(c.percent ?? (c.limit ? (c.used / c.limit) * 100 : 0)));
            const state = c.state === 'exceeded' || c.state === 'warning' ? c.state : 'ok';
            return (
              <li class={`cap cap-${state}`}>
                <div class="bar-label">
                  <span class="bar-key">
                    {periodWord[c.period] ?? c.period} {metricWord[c.metric] ?? c.metric}
                    {state === 'exceeded' && <span class="tag bad">reached</span>}
                    {state === 'warning' && <span class="tag warn">over {b.warn_percent ?? 80} %</span>}
                  </span>
                  <span class="bar-val">
                    {capValue(c, c.used)} of {capValue(c, c.limit)} · {pct} %
                  </span>
                </div>
                <div class="bar-track" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.min(100, pct)}>
                  <div class="bar-fill" style={{ width: `${Math.min(100, Math.max(2, pct))}%` }} />
                </div>
                <div class="cap-note muted">{resetsIn(c.resets, now)}</div>
              </li>
            );
          })}
        </ul>
      )}
      {caps.some((c) => c.state === 'exceeded') && (
        <p class="muted small">
          Chat turns stop at a reached cap and offer “Continue over budget” for that one turn; background work stays stopped until the cap resets.
        </p>
      )}
    </div>
  );
}

function Stat({ label, value, note }: { label: string; value: string; note?: string }) {
  return (
    <div class="stat">
      <div class="stat-label">{label}</div>
      <div class="stat-value">{value}</div>
      {note && <div class="stat-note">{note}</div>}
    </div>
  );
}
