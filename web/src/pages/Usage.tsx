import { useEffect, useState } from 'preact/hooks';
import { Bars, DayChart } from '../components/Charts';
import { Alert } from '../components/icons';
import { useApp } from '../context';
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
  const load = () => {
    setErr(null);
    app.client.usage(period).then((r) => setData(normaliseUsage(r)), setErr);
  };
  useEffect(load, [period]);

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

function Stat({ label, value, note }: { label: string; value: string; note?: string }) {
  return (
    <div class="stat">
      <div class="stat-label">{label}</div>
      <div class="stat-value">{value}</div>
      {note && <div class="stat-note">{note}</div>}
    </div>
  );
}
