// The Agenda page's Tasks section: the open tasks of the user's task lists
// (VTODOs of their calendar folders and CalDAV accounts), overdue first in
// a warning style, then today, the next 7 days, later and undated ones.
// Ticking a task's box completes it through the daemon's POST
// /api/tasks/complete; its pencil opens an inline form that changes it
// (POST /api/tasks/update) and its bin asks, then deletes it (POST
// /api/tasks/delete, with series for a repeating one). Each runs the task
// tool through the authority as the user's own command (journaled and
// confirmed like the assistant's writes; the user's deny prefixes and
// trust rules still apply). Task text may come from shared lists, so it
// is only ever rendered as text.
import { useEffect, useState } from 'preact/hooks';
import { Pencil, Trash } from '../components/icons';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { dueLabel, groupTasks, type Task, type TaskChanges, type TaskReply } from '../lib/tasks';
import { TaskDeleteConfirm, TaskEditForm } from './AgendaTaskEdit';
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

  // The one task being edited or confirmed for deletion, by key.
  const [acting, setActing] = useState<{ key: string; mode: 'edit' | 'delete' } | null>(null);

  const key = (t: Task) => `${t.list}|${t.uid}`;
  const title = (t: Task) => t.summary || '(no title)';
  /** Runs one task write; done says what happened, failed how it is named when it did not. */
  const write = (t: Task, path: string, body: object, done: string, failed: string, after?: () => void) => {
    const k = key(t);
    setBusy((b) => new Set(b).add(k));
    setNote(null);
    const idle = () =>
      setBusy((b) => {
        const n = new Set(b);
        n.delete(k);
        return n;
      });
    app.client.request<unknown>('POST', path, { uid: t.uid, list: t.list, ...body }).then(
      () => {
        setNote({ text: `${done}: ${title(t)}`, error: false });
        idle();
        after?.();
        load();
      },
      (e) => {
        setNote({ text: `Could not ${failed} “${title(t)}”: ${errText(e)}`, error: true });
        idle();
      },
    );
  };
  const complete = (t: Task) => write(t, '/api/tasks/complete', {}, 'Done', 'complete');
  const save = (t: Task, c: TaskChanges) => write(t, '/api/tasks/update', c, 'Saved', 'change', () => setActing(null));
  const remove = (t: Task) =>
    write(t, '/api/tasks/delete', t.recurring ? { series: true } : {}, 'Deleted', 'delete', () => setActing(null));

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
                const mode = acting?.key === k ? acting.mode : null;
                return (
                  <li key={k} class={'tasks-item' + (t.overdue ? ' overdue' : '') + (mode ? ' active' : '')}>
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
                      <span class="tasks-actions">
                        <button
                          type="button"
                          class="icon-btn small"
                          title="Edit"
                          aria-label={`Edit “${title(t)}”`}
                          aria-expanded={mode === 'edit'}
                          disabled={busy.has(k)}
                          onClick={() => setActing(mode === 'edit' ? null : { key: k, mode: 'edit' })}
                        >
                          <Pencil size={15} />
                        </button>
                        <button
                          type="button"
                          class="icon-btn small danger-hover"
                          title="Delete"
                          aria-label={`Delete “${title(t)}”`}
                          disabled={busy.has(k)}
                          onClick={() => setActing({ key: k, mode: 'delete' })}
                        >
                          <Trash size={15} />
                        </button>
                      </span>
                    </span>
                    {mode === 'edit' && (
                      <TaskEditForm task={t} zone={zone} busy={busy.has(k)} onSave={(c) => save(t, c)} onCancel={() => setActing(null)} />
                    )}
                    {mode === 'delete' && (
                      <TaskDeleteConfirm task={t} busy={busy.has(k)} onDelete={() => remove(t)} onCancel={() => setActing(null)} />
                    )}
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
