// The Agenda page's Tasks section: the inline form that changes one task
// (title, due date and time, priority, notes), the one that adds a subtask
// under it, the confirmation before deleting one and before completing one
// with open subtasks. They only collect what the user wants; the section
// sends it through POST /api/tasks/update, /api/tasks, /api/tasks/delete
// and /api/tasks/complete, which run the task tools through the authority
// as the user's own command. Task text may come from shared lists: it is
// only ever a value of an input or text, never markup.
import { useState } from 'preact/hooks';
import { openSubtasks, taskChanges, taskDraft, type Task, type TaskChanges, type TaskDraft } from '../lib/tasks';

const title = (t: Task) => t.summary || '(no title)';

export function TaskEditForm({
  task,
  zone,
  busy,
  onSave,
  onCancel,
}: {
  task: Task;
  zone: string;
  busy: boolean;
  onSave: (c: TaskChanges) => void;
  onCancel: () => void;
}) {
  const [before] = useState<TaskDraft>(() => taskDraft(task, zone));
  const [d, setD] = useState<TaskDraft>(before);
  const set = <K extends keyof TaskDraft>(k: K, v: TaskDraft[K]) => setD((x) => ({ ...x, [k]: v }));
  const changes = taskChanges(before, d, zone);
  const empty = !d.summary.trim();
  return (
    <form
      class="tasks-edit"
      aria-label={`Edit “${title(task)}”`}
      onSubmit={(e) => {
        e.preventDefault();
        if (changes && !empty && !busy) onSave(changes);
      }}
      onKeyDown={(e) => {
        if (e.key === 'Escape') onCancel();
      }}
    >
      <label class="tasks-edit-title">
        Title
        <input type="text" value={d.summary} maxLength={500} autoFocus onInput={(e) => set('summary', e.currentTarget.value)} />
      </label>
      <label>
        Due date
        <input type="date" value={d.date} onInput={(e) => set('date', e.currentTarget.value)} />
      </label>
      <label>
        Time
        <input type="time" value={d.time} disabled={!d.date} onInput={(e) => set('time', e.currentTarget.value)} />
      </label>
      <label class="tasks-edit-priority">
        Priority
        <select value={String(d.priority)} onChange={(e) => set('priority', Number(e.currentTarget.value))}>
          <option value="0">None</option>
          {[1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => (
            <option key={n} value={String(n)}>
              {n === 1 ? '1 (highest)' : n === 9 ? '9 (lowest)' : String(n)}
            </option>
          ))}
        </select>
      </label>
      <label class="tasks-edit-notes">
        Notes
        <textarea rows={3} maxLength={4000} value={d.notes} onInput={(e) => set('notes', e.currentTarget.value)} />
      </label>
      {task.recurring && (
        <p class="muted small tasks-edit-hint">
          A repeating task: the change applies to the whole series, and a new due date moves the series.
        </p>
      )}
      <div class="tasks-edit-buttons">
        {empty && <span class="small tasks-error">A task needs a title.</span>}
        <button type="button" class="btn small" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" class="btn small primary" disabled={busy || empty || !changes}>
          {busy ? 'Saving…' : 'Save'}
        </button>
      </div>
    </form>
  );
}

/** How a task's subtasks are named in a confirmation: "its 2 subtasks". */
const subtasksText = (n: number, what = 'subtask') => (n === 1 ? `its ${what}` : `its ${n} ${what}s`);

export function TaskDeleteConfirm({ task, busy, onDelete, onCancel }: { task: Task; busy: boolean; onDelete: () => void; onCancel: () => void }) {
  const subs = task.subtasks ?? 0;
  return (
    <div class="tasks-confirm" role="alertdialog" aria-label={`Delete “${title(task)}”?`}>
      <span class="small">
        {subs > 0 ? (
          <>
            Delete <strong>{title(task)}</strong> and {subtasksText(subs)} (with theirs)?
            {task.recurring ? ' It repeats: every occurrence goes.' : ''}
          </>
        ) : task.recurring ? (
          <>
            Delete the repeating task <strong>{title(task)}</strong> and every occurrence of it?
          </>
        ) : (
          <>
            Delete <strong>{title(task)}</strong> from {task.list}?
          </>
        )}
      </span>
      <span class="tasks-confirm-buttons">
        <button type="button" class="btn small" onClick={onCancel} autoFocus>
          Cancel
        </button>
        <button type="button" class="btn small danger" disabled={busy} onClick={onDelete}>
          {busy ? 'Deleting…' : 'Delete'}
        </button>
      </span>
    </div>
  );
}

/** Asks before completing a task whose subtasks are not all done: they are completed with it. */
export function TaskCompleteConfirm({ task, busy, onComplete, onCancel }: { task: Task; busy: boolean; onComplete: () => void; onCancel: () => void }) {
  const open = openSubtasks(task);
  return (
    <div class="tasks-confirm tasks-confirm-complete" role="alertdialog" aria-label={`Complete “${title(task)}” and its subtasks?`}>
      <span class="small">
        <strong>{title(task)}</strong> has {open === 1 ? '1 open subtask' : `${open} open subtasks`}. Complete {open === 1 ? 'it' : 'them'} too?
      </span>
      <span class="tasks-confirm-buttons">
        <button type="button" class="btn small" onClick={onCancel} autoFocus>
          Cancel
        </button>
        <button type="button" class="btn small primary" disabled={busy} onClick={onComplete}>
          {busy ? 'Completing…' : 'Complete all'}
        </button>
      </span>
    </div>
  );
}

/** The inline form that adds a subtask under a task (in its list). */
export function TaskSubtaskForm({ task, busy, onAdd, onCancel }: { task: Task; busy: boolean; onAdd: (summary: string) => void; onCancel: () => void }) {
  const [summary, setSummary] = useState('');
  const text = summary.trim();
  return (
    <form
      class="tasks-subtask-form"
      aria-label={`Add a subtask to “${title(task)}”`}
      onSubmit={(e) => {
        e.preventDefault();
        if (text && !busy) onAdd(text);
      }}
      onKeyDown={(e) => {
        if (e.key === 'Escape') onCancel();
      }}
    >
      <label>
        Subtask
        <input type="text" value={summary} maxLength={500} autoFocus placeholder="What needs doing" onInput={(e) => setSummary(e.currentTarget.value)} />
      </label>
      <span class="tasks-edit-buttons">
        <button type="button" class="btn small" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" class="btn small primary" disabled={busy || !text}>
          {busy ? 'Adding…' : 'Add'}
        </button>
      </span>
    </form>
  );
}
