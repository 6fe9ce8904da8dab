// The Agenda page's Tasks section: the open tasks of the user's task lists
// (VTODOs of their calendar folders and CalDAV accounts), overdue first in
// a warning style, then today, the next 7 days, later and undated ones.
// Ticking a task's box completes it through the daemon's POST
// /api/tasks/complete, which runs tasks_complete through the authority as
// the user's own command (journaled and confirmed like the assistant's
// writes; the user's deny prefixes and trust rules still apply). Task text
// may come from shared lists, so it is only ever rendered as text.
import { useEffect, useState } from 'preact/hooks';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { dueLabel, groupTasks, type Task, type TaskReply } from '../lib/tasks';
import { Failure } from './common';
import '../styles/tasks.css';

/** How many open tasks the section asks for. */
const TASKS_LIMIT = 300;

export function TasksSection({ zone, today }: { zone: string; today: string }) {
  const app = useApp();
  const [reply, setReply] = useState<TaskReply | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState<Set<string>>(new Set());
  const [note, setNote] = useState<{ text: string; error: boolean } | null>(null);

  const load = () => {
    setErr(null);
    app.client.request<TaskReply>('GET', `/api/tasks?limit=${TASKS_LIMIT}`).then(setReply, setErr);
  };
  useEffect(load, []);

  const key = (t: Task) => `${t.list}|${t.uid}`;
  const complete = (t: Task) => {
    const k = key(t);
    setBusy((b) => new Set(b).add(k));
    setNote(null);
    app.client.request<unknown>('POST', '/api/tasks/complete', { uid: t.uid, list: t.list }).then(
      () => {
        setNote({ text: `Done: ${t.summary || '(no title)'}`, error: false });
        setBusy((b) => {
          const n = new Set(b);
          n.delete(k);
          return n;
        });
        load();
      },
      (e) => {
        setNote({ text: `Could not complete “${t.summary || '(no title)'}”: ${errText(e)}`, error: true });
        setBusy((b) => {
          const n = new Set(b);
          n.delete(k);
          return n;
        });
      },
    );
  };

  const groups = reply ? groupTasks(reply.tasks ?? [], today, zone) : [];
  const open = groups.reduce((n, g) => n + g.tasks.length, 0);
  const overdue = groups.find((g) => g.key === 'overdue')?.tasks.length ?? 0;

  return (
    <section class="card tasks-section" aria-label="Tasks">
      <h2>
        Tasks
        {reply && open > 0 && (
          <span class="tasks-count muted small">
            {open} open{overdue > 0 ? `, ${overdue} overdue` : ''}
          </span>
        )}
      </h2>
      {err ? (
        <Failure err={err} retry={load} />
      ) : !reply ? (
        <div class="skeleton" />
      ) : (reply.lists ?? []).length === 0 ? (
        <div class="callout" role="note" aria-label="No task lists">
          <strong>No task list yet.</strong> Tasks come from CalDAV task lists (Nextcloud, Radicale, iCloud Reminders) and from
          folders of .ics files holding to-dos: add the account or folder in <a href="/setup">Setup</a> (or Settings), or from a
          terminal run <code>hestia cal import PATH</code>. Google Tasks is not CalDAV and is not read. Then ask the assistant to
          add a task, or run <code>hestia tasks add "text"</code>.
        </div>
      ) : open === 0 ? (
        <p class="muted small">
          Nothing to do. Ask the assistant to add a task, or run <code>hestia tasks add "text"</code>.
        </p>
      ) : (
        groups.map((g) => (
          <div class={`tasks-group tasks-${g.key}`} key={g.key} role="group" aria-label={g.title}>
            <h3>{g.title}</h3>
            <ul class="tasks-items">
              {g.tasks.map((t) => {
                const k = key(t);
                const label = dueLabel(t, today, zone);
                return (
                  <li key={k} class={'tasks-item' + (t.overdue ? ' overdue' : '')}>
                    <label class="tasks-check">
                      <input
                        type="checkbox"
                        checked={busy.has(k)}
                        disabled={busy.has(k)}
                        aria-label={`Mark “${t.summary || '(no title)'}” done`}
                        onChange={() => complete(t)}
                      />
                      <span class="tasks-summary">{t.summary || '(no title)'}</span>
                    </label>
                    <span class="tasks-meta">
                      {label && <span class={'tasks-due' + (t.overdue ? ' overdue' : '')}>{label}</span>}
                      {t.priority && t.priority <= 4 ? (
                        <span class="cal-badge tasks-prio" title={`Priority ${t.priority}`}>
                          !{t.priority}
                        </span>
                      ) : null}
                      {t.recurring && (
                        <span class="cal-badge" title="A recurring task: its next occurrence is shown">
                          repeats
                        </span>
                      )}
                      {t.status === 'IN-PROCESS' && t.percent ? <span class="cal-badge">{t.percent}%</span> : null}
                      <span class="muted tasks-list">{t.list}</span>
                    </span>
                  </li>
                );
              })}
            </ul>
          </div>
        ))
      )}
      {reply?.truncated && <p class="muted small">Only the first {TASKS_LIMIT} open tasks are shown.</p>}
      {note && (
        <p class={'small ' + (note.error ? 'tasks-error' : 'muted')} role={note.error ? 'alert' : 'status'}>
          {note.text}
        </p>
      )}
    </section>
  );
}
