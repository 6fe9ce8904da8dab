import { useEffect, useState } from 'preact/hooks';
import { jobsApi, scheduleText, type Job, type JobRun } from '../api/background';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { when } from '../lib/format';
import { Failure, PageHeader } from './common';
import '../styles/background.css';

export function JobsPage() {
  const app = useApp();
  const api = jobsApi(app.client);
  const [jobs, setJobs] = useState<Job[] | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [runs, setRuns] = useState<JobRun[]>([]);
  const [note, setNote] = useState('');
  const load = () => {
    setErr(null);
    api.list().then(setJobs, setErr);
  };
  useEffect(load, []);
  useEffect(() => {
    if (open) api.runs(open).then(setRuns, () => setRuns([]));
  }, [open, jobs]);
  // While a run is going, follow it until it ends (status and history).
  useEffect(() => {
    if (!jobs?.some((j) => j.running)) return;
    const t = setTimeout(load, 1500);
    return () => clearTimeout(t);
  }, [jobs]);
  const runNow = (name: string) =>
    api.run(name).then(
      (r) => {
        setNote(`Started run ${r.run_id} of ${name}.`);
        setOpen(name);
        setTimeout(load, 800);
      },
      (e) => setNote(errText(e)),
    );

  return (
    <div class="page bg-page">
      <PageHeader title="Jobs" subtitle="Scheduled work: built-in upkeep and your own recurring requests.">
        <button class="btn small" onClick={load}>
          Refresh
        </button>
      </PageHeader>
      {note && (
        <p class="muted" role="status">
          {note}
        </p>
      )}
      {err ? (
        <Failure err={err} retry={load} />
      ) : !jobs ? (
        <div class="skeleton tall" />
      ) : (
        <>
          {jobs.length === 0 ? (
            <p class="muted">No jobs yet.</p>
          ) : (
            <table class="bg-table" aria-label="Jobs">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Schedule</th>
                  <th>Next run</th>
                  <th>Last run</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {jobs.map((j) => (
                  <tr key={j.name}>
                    <td>
                      <button class="bg-link" onClick={() => setOpen(open === j.name ? null : j.name)} aria-expanded={open === j.name}>
                        {j.name}
                      </button>
                      <div class="bg-sub">{j.builtin ? 'built-in' : j.prompt}</div>
                    </td>
                    <td>{scheduleText(j.schedule)}</td>
                    <td>{j.enabled ? when(j.next_run) : 'paused'}</td>
                    <td>
                      {j.running ? (
                        <span class="bg-badge">running</span>
                      ) : j.last_run ? (
                        <span class={'bg-badge ' + (j.last_run.status === 'ok' ? 'ok' : 'bad')} title={j.last_run.error}>
                          {j.last_run.status}
                        </span>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td>
                      <button class="btn small" disabled={j.running} onClick={() => runNow(j.name)}>
                        Run now
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {open && <History name={open} runs={runs} />}
          <NewJobForm onAdded={load} />
        </>
      )}
    </div>
  );
}

function History({ name, runs }: { name: string; runs: JobRun[] }) {
  return (
    <section class="bg-card" aria-label={`History of ${name}`}>
      <h2>History of {name}</h2>
      {runs.length === 0 ? (
        <p class="muted">No runs yet.</p>
      ) : (
        <ul class="bg-list">
          {runs.map((r) => (
            <li key={r.id}>
              {when(r.started_at)} · {r.trigger} · <strong>{r.status}</strong>
              {r.duration_ms !== undefined && ` · ${(r.duration_ms / 1000).toFixed(1)} s`}
              {r.error && <div class="bg-sub">{r.error}</div>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function NewJobForm({ onAdded }: { onAdded: () => void }) {
  const app = useApp();
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'cron' | 'every'>('cron');
  const [spec, setSpec] = useState('0 8 * * 1-5');
  const [prompt, setPrompt] = useState('');
  const [err, setErr] = useState('');
  const submit = (e: Event) => {
    e.preventDefault();
    setErr('');
    jobsApi(app.client)
      .add({ name, prompt, [kind]: spec })
      .then(() => {
        setName('');
        setPrompt('');
        onAdded();
      }, (e) => setErr(errText(e)));
  };
  return (
    <form class="bg-card" onSubmit={submit} aria-label="New job">
      <h2>New job</h2>
      <label>
        Name
        <input value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} placeholder="morning-briefing" />
      </label>
      <label>
        When
        <select value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value as 'cron' | 'every')}>
          <option value="cron">cron expression</option>
          <option value="every">interval</option>
        </select>
        <input value={spec} onInput={(e) => setSpec((e.target as HTMLInputElement).value)} aria-label="Schedule" />
      </label>
      <label>
        What should the assistant do?
        <textarea value={prompt} onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)} placeholder="Give me a briefing of today's mail" />
      </label>
      {err && (
        <div class="callout error" role="alert">
          {err}
        </div>
      )}
      <button class="btn" type="submit">
        Add job
      </button>
    </form>
  );
}
