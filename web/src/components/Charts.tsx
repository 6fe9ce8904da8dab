// Dependency-free charts: a column chart for series over days and
// horizontal bars for breakdowns. Values are labelled, not only drawn.
import type { Row } from '../lib/usage';

/** Fills the days without activity so a week always shows seven columns. */
export function fillDays(rows: Row[], days: number | undefined, today = new Date()): Row[] {
  if (!days) return rows;
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const out: Row[] = [];
  for (let i = days - 1; i >= 0; i--) {
    const key = new Date(today.getTime() - i * 86_400_000).toISOString().slice(0, 10);
    out.push(byKey.get(key) ?? { key, cost: 0, tokens: 0, calls: 0, errors: 0 });
  }
  return out;
}

export function DayChart({ rows: raw, metric, format, days }: { rows: Row[]; metric: 'cost' | 'tokens'; format: (n: number) => string; days?: number }) {
  const rows = fillDays(raw, days);
  const peak = Math.max(...rows.map((r) => r[metric]), 0);
  if (rows.length === 0 || peak === 0) {
    return <div class="chart-empty muted">{metric === 'cost' ? 'No priced spend in this period.' : 'No activity in this period.'}</div>;
  }
  const max = peak;
  const W = 100 / rows.length;
  return (
    <div class="daychart" role="img" aria-label={`${metric} by day`}>
      <svg viewBox="0 0 100 40" preserveAspectRatio="none">
        {rows.map((r, i) => {
          const h = (r[metric] / max) * 38;
          return (
            <rect x={i * W + W * 0.15} y={40 - h} width={W * 0.7} height={Math.max(h, r[metric] > 0 ? 0.6 : 0)} rx={0.6}>
              <title>
                {r.key}: {format(r[metric])}
              </title>
            </rect>
          );
        })}
      </svg>
      <div class="daychart-axis muted small">
        <span>{rows[0].key}</span>
        <span>peak {format(max)}</span>
        <span>{rows[rows.length - 1].key}</span>
      </div>
    </div>
  );
}

export function Bars({ rows, metric, format, empty = 'Nothing yet.' }: { rows: Row[]; metric: 'cost' | 'tokens' | 'calls'; format: (n: number) => string; empty?: string }) {
  const sorted = [...rows].filter((r) => r[metric] > 0).sort((a, b) => b[metric] - a[metric]).slice(0, 8);
  if (sorted.length === 0) return <div class="chart-empty muted">{empty}</div>;
  const max = sorted[0][metric] || 1;
  return (
    <ul class="bars">
      {sorted.map((r) => (
        <li class={r.key === 'unlabelled' ? 'unlabelled' : ''}>
          <div class="bar-label">
            <span class="bar-key">
              {r.key}
              {r.unpriced && <span class="tag">no rate</span>}
            </span>
            <span class="bar-val">{format(r[metric])}</span>
          </div>
          <div class="bar-track">
            <div class="bar-fill" style={{ width: `${Math.max(2, (r[metric] / max) * 100)}%` }} />
          </div>
        </li>
      ))}
    </ul>
  );
}
