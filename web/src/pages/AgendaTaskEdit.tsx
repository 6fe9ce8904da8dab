// The Agenda page's Tasks section: the inline form that changes one task
// (title, due date and time, priority, notes) and the confirmation before
// deleting one. Both only collect what the user wants; the section sends
// it through POST /api/tasks/update and /api/tasks/delete, which run
// tasks_update and tasks_delete through the authority as the user's own
// command. Task text may come from shared lists: it is only ever a value
// of an input or text, never markup.
import { useState } from 'preact/hooks';
import { taskChanges, taskDraft, type Task, type TaskChanges, type TaskDraft } from '../lib/tasks';

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

export function TaskDeleteConfirm({ task, busy, onDelete, onCancel }: { task: Task; busy: boolean; onDelete: () => void; onCancel: () => void }) {
  return (
    <div class="tasks-confirm" role="alertdialog" aria-label={`Delete “${title(task)}”?`}>
      <span class="small">
        {task.recurring ? (
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
