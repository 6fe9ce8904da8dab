// The runtime panel of the system page: what the daemon process is doing
// right now (goroutines, heap, event streams, workers) and how fast each
// route answers. Figures come from GET /api/system's "runtime" object; the
// same are served to Prometheus at /api/metrics.
import { bytes } from '../lib/format';

type Obj = Record<string, any>;

function ms(v: unknown): string {
  return typeof v === 'number' ? (v < 10 ? v.toFixed(1) : String(Math.round(v))) : '—';
}

export function RuntimeView({ rt }: { rt: Obj }) {
  const ev = (rt.events ?? {}) as Obj;
  const workers = (Array.isArray(rt.workers) ? rt.workers : []) as Obj[];
  const routes = (Array.isArray(rt.routes) ? rt.routes : []) as Obj[];
  return (
    <div class="panel runtime">
      <h2>Runtime</h2>
      <div class="stats">
        <div class="stat">
          <div class="stat-label">Goroutines</div>
          <div class="stat-value">{rt.goroutines ?? '—'}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Heap</div>
          <div class="stat-value">{bytes(rt.heap_alloc_bytes)}</div>
          <div class="stat-note">{`${bytes(rt.sys_bytes)} from the OS`}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Event streams</div>
          <div class="stat-value">{ev.subscribers ?? 0}</div>
          <div class="stat-note">{`${ev.approvers ?? 0} can approve · ${ev.shed_total ?? 0} dropped as too slow`}</div>
        </div>
      </div>
      <h3>Workers</h3>
      {workers.length === 0 ? (
        <div class="muted small">No background workers.</div>
      ) : (
        <ul class="health-list">
          {workers.map((w) => (
            <li>
              <span class={`dot ${w.state === 'running' ? 'ok' : w.state === 'restarting' ? 'bad' : 'warn'}`} aria-label={w.state} />
              <div>
                <div class="hl-name">{w.name}</div>
                <div class="muted small">
                  {[w.state, w.restarts ? `${w.restarts} restart${w.restarts === 1 ? '' : 's'}` : '', w.last_error].filter(Boolean).join(' · ')}
                </div>
              </div>
            </li>
          ))}
        </ul>
      )}
      <h3>Requests</h3>
      {routes.length === 0 ? (
        <div class="muted small">No requests recorded yet.</div>
      ) : (
        <div class="table-wrap">
          <table class="table routes-table">
            <thead>
              <tr>
                <th>Route</th>
                <th>Count</th>
                <th>Errors</th>
                <th>p50 ms</th>
                <th>p95 ms</th>
                <th class="hide-phone">max ms</th>
              </tr>
            </thead>
            <tbody>
              {routes.slice(0, 20).map((r) => (
                <tr>
                  <td class="mono">{r.route}</td>
                  <td>{r.count}</td>
                  <td>{r.errors}</td>
                  <td>{ms(r.p50_ms)}</td>
                  <td>{ms(r.p95_ms)}</td>
                  <td class="hide-phone">{ms(r.max_ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
