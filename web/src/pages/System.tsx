// The system page: is the daemon healthy, are its stores intact, can it
// reach its models, which connectors are up, and what each tool may do.
import { useEffect, useState } from 'preact/hooks';
import type { ToolInfo } from '../api/types';
import { Refresh } from '../components/icons';
import { useApp } from '../context';
import { duration } from '../lib/format';
import { Failure, PageHeader } from './common';
import { RuntimeView } from './Runtime';
import { DevicesPanel } from './Devices';

type Obj = Record<string, any>;

export function SystemPage() {
  const app = useApp();
  const [sys, setSys] = useState<Obj | null>(null);
  const [sysErr, setSysErr] = useState<unknown>(null);
  const [tools, setTools] = useState<ToolInfo[] | null>(null);
  const [toolErr, setToolErr] = useState<unknown>(null);
  const load = () => {
    setSysErr(null);
    setToolErr(null);
    app.client.system().then((r) => setSys((r ?? {}) as Obj), setSysErr);
    app.client.tools().then(setTools, setToolErr);
  };
  useEffect(() => {
    load();
    const t = setInterval(() => app.client.system().then((r) => setSys((r ?? {}) as Obj), () => {}), 15_000);
    return () => clearInterval(t);
  }, []);

  return (
    <div class="page">
      <PageHeader title="System" subtitle="Live status of the daemon and everything it depends on.">
        <button class="btn" onClick={load}>
          <Refresh size={16} /> Refresh
        </button>
      </PageHeader>
      {/* Devices first: pairing a phone is what people come here for; the
          diagnostics below run to thousands of pixels and start closed. */}
      <DevicesPanel />
      {sysErr ? <Failure err={sysErr} retry={load} /> : !sys ? <div class="skeleton" /> : <SystemView sys={sys} />}
      <details class="panel diagnostics">
        <summary>
          <h2>Tools</h2>
          <span class="muted small">{tools ? `${tools.length} tools and what each may do` : 'what each tool may do'}</span>
        </summary>
        {toolErr ? <Failure err={toolErr} /> : !tools ? <div class="skeleton" /> : <ToolTable tools={tools} />}
      </details>
    </div>
  );
}

function asList(v: unknown): Obj[] {
  if (Array.isArray(v)) return v.filter((x) => x && typeof x === 'object');
  if (v && typeof v === 'object') return Object.entries(v).map(([name, x]) => ({ name, ...(typeof x === 'object' ? x : { status: x }) }));
  return [];
}

/** ok / warn / bad from the many ways a component can say it is fine. */
export function health(o: Obj): 'ok' | 'warn' | 'bad' {
  const s = String(o.status ?? o.state ?? o.integrity ?? '').toLowerCase();
  if (o.ok === false || o.reachable === false || o.healthy === false) return 'bad';
  if (/^(error|failed|fail|down|unreachable|corrupt|bad)/.test(s)) return 'bad';
  if (/^(warn|degraded|disabled|unconfigured|not configured|stale|skip|off)/.test(s) || o.configured === false || o.enabled === false) return 'warn';
  return 'ok';
}

function label(o: Obj, ...keys: string[]): string {
  for (const k of keys) if (o[k] !== undefined && o[k] !== '') return String(o[k]);
  return '';
}

/** Sorts health checks ("store.chat", "llm.endpoint", …) into the panels. */
export function groupChecks(sys: Obj): { stores: Obj[]; models: Obj[]; connectors: Obj[]; other: Obj[] } {
  const out = {
    stores: asList(sys.stores),
    models: asList(sys.models ?? sys.model_tiers ?? sys.tiers),
    connectors: asList(sys.connectors),
    other: [] as Obj[],
  };
  for (const c of asList(sys.checks)) {
    const name = String(c.name ?? '');
    const item = { ...c, name: name.replace(/^(store|llm|model|models|connector)\./, '') };
    if (/^store\./.test(name)) out.stores.push(item);
    else if (/^(llm|model|models|embed)/.test(name)) out.models.push(item);
    else if (/^connector\./.test(name) || /^(mail|calendar|contacts|docs|mcp|imap|caldav|carddav)/.test(name)) out.connectors.push(item);
    else out.other.push(c);
  }
  return out;
}

export function SystemView({ sys }: { sys: Obj }) {
  const d = (sys.daemon ?? sys) as Obj;
  const uptime = typeof d.uptime_s === 'number' ? d.uptime_s * 1000 : typeof d.uptime_seconds === 'number' ? d.uptime_seconds * 1000 : d.uptime_ms;
  const g = groupChecks(sys);
  const detailKeys = ['detail', 'model', 'provider', 'path', 'error'];
  const sections: [string, Obj[]][] = [
    ['Stores', g.stores],
    ['Models', g.models],
    ['Connectors', g.connectors],
  ];
  if (g.other.length) sections.push(['Host', g.other]);
  return (
    <>
      <div class="stats">
        <div class="stat">
          <div class="stat-label">Daemon</div>
          <div class="stat-value status-line">
            <span class="dot ok" /> Running
          </div>
          <div class="stat-note">{d.version ? `version ${d.version}` : ''}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Uptime</div>
          <div class="stat-value">{typeof uptime === 'number' ? duration(uptime) : String(d.uptime ?? '—')}</div>
          <div class="stat-note">{d.started_at ? `since ${new Date(d.started_at).toLocaleString()}` : ''}</div>
        </div>
        <div class="stat wide">
          <div class="stat-label">Data</div>
          <div class="stat-value small-value mono">{String(d.data_dir ?? d.home ?? '—')}</div>
        </div>
      </div>
      <div class={sections.length > 3 ? 'grid2' : 'grid3'}>
        {sections.map(([title, list]) => (
          <div class="panel">
            <h2>{title}</h2>
            {list.length === 0 ? (
              <div class="muted small">None reported.</div>
            ) : (
              <ul class="health-list">
                {list.map((o) => {
                  const h = health(o);
                  return (
                    <li>
                      <span class={`dot ${h}`} aria-label={h} />
                      <div>
                        <div class="hl-name">{label(o, 'name', 'tier', 'id')}</div>
                        <div class="muted small">{detailKeys.map((k) => label(o, k)).filter(Boolean).join(' · ')}</div>
                      </div>
                    </li>
                  );
                })}
              </ul>
            )}
          </div>
        ))}
      </div>
      {sys.runtime && typeof sys.runtime === 'object' ? (
        <details class="diagnostics">
          <summary>
            <h2>Diagnostics</h2>
            <span class="muted small">memory, event streams, workers, route latency</span>
          </summary>
          <RuntimeView rt={sys.runtime as Obj} />
        </details>
      ) : null}
    </>
  );
}

export function ToolTable({ tools }: { tools: ToolInfo[] }) {
  const [q, setQ] = useState('');
  const shown = tools.filter((t) => !q || t.name.includes(q.toLowerCase()) || (t.description ?? '').toLowerCase().includes(q.toLowerCase()));
  return (
    <>
      <input class="table-filter" type="search" placeholder="Filter tools" aria-label="Filter tools" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
      <div class="table-wrap">
        <table class="table tools-table">
          <thead>
            <tr>
              <th>Tool</th>
              <th>Risk</th>
              <th>Decision</th>
              <th class="hide-phone">Why</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((t) => (
              <tr class={t.available === false ? 'unavailable' : ''}>
                <td>
                  <div class="mono">{t.name}</div>
                  <div class="muted small">{t.available === false ? `Unavailable: ${t.unavailable_reason}` : t.description}</div>
                </td>
                <td>
                  <span class={`risk risk-${t.risk || 'unknown'}`}>{t.risk || 'unknown'}</span>
                </td>
                <td>
                  <span class={`decision d-${t.decision}`}>{t.decision === 'allow' ? 'Runs' : t.decision === 'gate' ? 'Asks you' : t.decision === 'deny' ? 'Blocked' : (t.decision ?? '—')}</span>
                </td>
                <td class="hide-phone muted small">{t.decision_source?.replace(/_/g, ' ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
