// The Agenda page's Tasks section: the open tasks of the user's task lists
// (VTODOs of their calendar folders and CalDAV accounts), overdue first in
// a warning style, then today, the next 7 days, later and undated ones.
// Subtasks are nested, indented under their parent, whose row says how
// many are done; a subtask listed without its parent says where it
// belongs. Ticking a task's box completes it through the daemon's POST
// /api/tasks/complete (a task with open subtasks asks first, then sends
// with_subtasks); its plus opens a form that adds a subtask under it (POST
// /api/tasks with parent); its pencil opens an inline form that changes
// it (POST /api/tasks/update) and its bin asks, then deletes it (POST
// /api/tasks/delete, with series for a repeating one, with_subtasks for
// one with subtasks). Each runs the task
// tool through the authority as the user's own command (journaled and
// confirmed like the assistant's writes; the user's deny prefixes and
// trust rules still apply). Task text may come from shared lists, so it
// is only ever rendered as text.
import { useEffect, useState } from 'preact/hooks';
import { Pencil, Plus, Trash } from '../components/icons';
import { useApp } from '../context';
import { errText } from '../lib/errors';
import { dueLabel, groupTasks, openSubtasks, subtaskProgress, taskTree, type Task, type TaskChanges, type TaskNode, type TaskReply } from '../lib/tasks';
import { TaskCompleteConfirm, TaskDeleteConfirm, TaskEditForm, TaskSubtaskForm } from './AgendaTaskEdit';
import { Failure } from './common';
import '../styles/tasks.css';

/** How many open tasks the section asks for. */
const TASKS_LIMIT = 300;
/** Subtasks nest at most this many levels below a top-level task (the daemon refuses deeper). */
const MAX_SUBTASK_DEPTH = 4;

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

  // The one task being edited, given a subtask, or confirmed for
  // deletion or completion with its subtasks, by key.
  const [acting, setActing] = useState<{ key: string; mode: 'edit' | 'delete' | 'subtask' | 'complete' } | null>(null);

  const key = (t: Task) => `${t.list}|${t.uid}`;
  const title = (t: Task) => t.summary || '(no title)';
  /** Runs one task write; done says what happened, failed how it is named when it did not. */
  const write = (t: Task, path: string, body: object, done: string, failed: string, after?: () => void, doneTitle = title(t)) => {
    const k = key(t);
    setBusy((b) => new Set(b).add(k));
    setNote(null);
    const idle = () =>
      setBusy((b) => {
        const n = new Set(b);
        n.delete(k);
        return n;
      });
    app.client.request<unknown>('POST', path, body).then(
      () => {
        setNote({ text: `${done}: ${doneTitle}`, error: false });
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
  const id = (t: Task) => ({ uid: t.uid, list: t.list });
  // A task with open subtasks asks first; confirmed, they go with it.
  const complete = (t: Task, withSubtasks = false) => {
    if (!withSubtasks && openSubtasks(t) > 0) {
      setActing({ key: key(t), mode: 'complete' });
      return;
    }
    if (withSubtasks) write(t, '/api/tasks/complete', { ...id(t), with_subtasks: true }, 'Done, with its subtasks', 'complete', () => setActing(null));
    else write(t, '/api/tasks/complete', id(t), 'Done', 'complete');
  };
  const save = (t: Task, c: TaskChanges) => write(t, '/api/tasks/update', { ...id(t), ...c }, 'Saved', 'change', () => setActing(null));
  const remove = (t: Task) =>
    write(
      t,
      '/api/tasks/delete',
      { ...id(t), ...(t.recurring ? { series: true } : {}), ...(t.subtasks ? { with_subtasks: true } : {}) },
      'Deleted',
      'delete',
      () => setActing(null),
    );
  const addSubtask = (t: Task, summary: string) =>
    write(t, '/api/tasks', { summary, parent: t.uid, list: t.list }, 'Added', `add a subtask to`, () => setActing(null), `${summary} — in ${title(t)}`);

  /** One task's row, its subtasks nested in a list inside it. */
  const row = (n: TaskNode) => {
    const t = n.task;
    const k = key(t);
    const label = dueLabel(t, today, zone);
    const mode = acting?.key === k ? acting.mode : null;
    const progress = subtaskProgress(t);
    const depth = t.depth ?? 0;
    return (
      <li
        key={k}
        class={'tasks-item' + (t.overdue ? ' overdue' : '') + (mode ? ' active' : '') + (depth > 0 ? ' tasks-subtask' : '')}
        aria-label={t.parent && depth > 0 ? `${title(t)}, a subtask of ${t.parent_summary || 'the task above'}` : undefined}
      >
        <label class="tasks-check">
          <input
            type="checkbox"
            checked={busy.has(k)}
            disabled={busy.has(k)}
            aria-label={`Mark “${title(t)}” done`}
            onChange={(e) => {
              e.currentTarget.checked = busy.has(k);
              complete(t);
            }}
          />
          <span class="tasks-summary">{title(t)}</span>
          {depth === 0 && t.parent_summary && <span class="muted small tasks-context">— in {t.parent_summary}</span>}
        </label>
        <span class="tasks-meta">
          {progress && (
            <span class={'cal-badge tasks-progress' + (openSubtasks(t) === 0 ? ' all-done' : '')} title="Subtasks done">
              {progress}
            </span>
          )}
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
            {depth < MAX_SUBTASK_DEPTH && (
              <button
                type="button"
                class="icon-btn small"
                title="Add subtask"
                aria-label={`Add subtask to “${title(t)}”`}
                aria-expanded={mode === 'subtask'}
                disabled={busy.has(k)}
                onClick={() => setActing(mode === 'subtask' ? null : { key: k, mode: 'subtask' })}
              >
                <Plus size={15} />
              </button>
            )}
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
        {mode === 'edit' && <TaskEditForm task={t} zone={zone} busy={busy.has(k)} onSave={(c) => save(t, c)} onCancel={() => setActing(null)} />}
        {mode === 'subtask' && (
          <TaskSubtaskForm task={t} busy={busy.has(k)} onAdd={(summary) => addSubtask(t, summary)} onCancel={() => setActing(null)} />
        )}
        {mode === 'delete' && <TaskDeleteConfirm task={t} busy={busy.has(k)} onDelete={() => remove(t)} onCancel={() => setActing(null)} />}
        {mode === 'complete' && (
          <TaskCompleteConfirm task={t} busy={busy.has(k)} onComplete={() => complete(t, true)} onCancel={() => setActing(null)} />
        )}
        {n.children.length > 0 && (
          <ul class="tasks-items tasks-subitems" aria-label={`Subtasks of “${title(t)}”`}>
            {n.children.map(row)}
          </ul>
        )}
      </li>
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
            <ul class="tasks-items">{taskTree(g.tasks).map(row)}</ul>
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
