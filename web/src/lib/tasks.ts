// Tasks (VTODOs of the user's calendars): the daemon's answer shape and the
// pure helpers the Agenda page's Tasks section uses to group them by when
// they are due, in the viewer's zone, and to nest subtasks under their
// parent (the daemon lists each subtask right after its parent, with its
// depth).
import { addDays, dateIn, timeIn } from './calendar';

export interface Task {
  id: number;
  list: string;
  uid: string;
  summary: string;
  description?: string;
  status?: string;
  done?: boolean;
  /** 1 (highest) to 9; absent for none. */
  priority?: number;
  percent?: number;
  /** RFC 3339; with due_date set, only its date counts (due by that day's end). */
  due?: string;
  due_date?: boolean;
  start?: string;
  completed?: string;
  categories?: string[];
  /** The UID of the task (in the same list) this one is a subtask of; absent at top level. */
  parent?: string;
  /** The parent's title: says where a subtask belongs when it is listed without its parent. */
  parent_summary?: string;
  /** How many subtasks the task has, and how many of them are done. */
  subtasks?: number;
  subtasks_done?: number;
  /** Levels below the task shown above it that it is a subtask of; absent at top level. */
  depth?: number;
  /** A recurring task is shown at one occurrence (the one to do next). */
  recurring?: boolean;
  rrule?: string;
  occurrence?: string;
  overdue?: boolean;
  warnings?: string[];
}

export interface TaskReply {
  tasks: Task[];
  /** Every task list (collection holding tasks); empty when none is set up. */
  lists: string[];
  truncated?: boolean;
}

/** The day a task is due, YYYY-MM-DD: a due date as written, a due time in the viewer's zone. */
export function dueDay(t: Task, zone: string): string | undefined {
  if (!t.due) return undefined;
  if (t.due_date) return t.due.slice(0, 10);
  return dateIn(new Date(t.due), zone);
}

export type TaskGroupKey = 'overdue' | 'today' | 'week' | 'later' | 'undated';

export interface TaskGroup {
  key: TaskGroupKey;
  title: string;
  tasks: Task[];
}

/** The group a task's own due puts it in. */
function groupOf(t: Task, today: string, zone: string): TaskGroupKey {
  const day = dueDay(t, zone);
  if (t.overdue || (day !== undefined && day < today)) return 'overdue';
  if (day === undefined) return 'undated';
  if (day === today) return 'today';
  if (day < addDays(today, 7)) return 'week';
  return 'later';
}

const groupRank: Record<TaskGroupKey, number> = { overdue: 0, today: 1, week: 2, later: 3, undated: 4 };

/**
 * Groups open tasks for the Agenda page: overdue (the daemon decides, from
 * the due time or, for a due date, the day), due today, in the next 7
 * days, later, and without a due date. Order within a group is the
 * daemon's (by due, then priority). A task and its subtasks (the tasks
 * after it listed deeper) stay together, in the group of the most urgent
 * of them, so an overdue subtask is never hidden under a parent due later.
 * Empty groups are left out.
 */
export function groupTasks(tasks: Task[], today: string, zone: string): TaskGroup[] {
  const groups: TaskGroup[] = [
    { key: 'overdue', title: 'Overdue', tasks: [] },
    { key: 'today', title: 'Today', tasks: [] },
    { key: 'week', title: 'Next 7 days', tasks: [] },
    { key: 'later', title: 'Later', tasks: [] },
    { key: 'undated', title: 'No due date', tasks: [] },
  ];
  const by = new Map(groups.map((g) => [g.key, g]));
  for (let i = 0; i < tasks.length; ) {
    let j = i + 1;
    while (j < tasks.length && (tasks[j].depth ?? 0) > 0) j++;
    // Done tasks are left out; the open subtasks of a done one are listed
    // on their own (each says where it belongs).
    let tree = tasks.slice(i, j).filter((t) => !t.done);
    if (tasks[i].done) tree = tree.map((t) => ({ ...t, depth: 0 }));
    i = j;
    if (tree.length === 0) continue;
    let key = groupOf(tree[0], today, zone);
    for (const t of tree.slice(1)) {
      const k = groupOf(t, today, zone);
      if (groupRank[k] < groupRank[key]) key = k;
    }
    by.get(key)!.tasks.push(...tree);
  }
  return groups.filter((g) => g.tasks.length > 0);
}

/** A node of the tree the Tasks section renders: a task and its subtasks. */
export interface TaskNode {
  task: Task;
  children: TaskNode[];
}

/**
 * Nests a group's tasks (listed with their depth, each subtask after its
 * parent) as a tree. A depth that skips a level is taken as one level
 * below the task before it.
 */
export function taskTree(tasks: Task[]): TaskNode[] {
  const roots: TaskNode[] = [];
  const stack: TaskNode[] = [];
  for (const task of tasks) {
    const node: TaskNode = { task, children: [] };
    const depth = Math.min(task.depth ?? 0, stack.length);
    stack.length = depth;
    (depth === 0 ? roots : stack[depth - 1].children).push(node);
    stack.push(node);
  }
  return roots;
}

/** "1 of 3 done" for a task with subtasks, '' for one without. */
export function subtaskProgress(t: Task): string {
  return t.subtasks ? `${t.subtasks_done ?? 0} of ${t.subtasks} done` : '';
}

/** How many of a task's own subtasks are still open. */
export function openSubtasks(t: Task): number {
  return Math.max(0, (t.subtasks ?? 0) - (t.subtasks_done ?? 0));
}

/** A short due label: "17:00" today, "tomorrow", "Wed 25 Mar", with the time for a due time on another day. */
export function dueLabel(t: Task, today: string, zone: string): string {
  const day = dueDay(t, zone);
  if (!day || !t.due) return '';
  const time = t.due_date ? '' : timeIn(new Date(t.due), zone);
  if (day === today) return time || 'today';
  if (day === addDays(today, 1)) return time ? `tomorrow ${time}` : 'tomorrow';
  const [y, m, d] = day.split('-').map(Number);
  const parts = new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' }).formatToParts(
    new Date(Date.UTC(y, m - 1, d)),
  );
  const get = (k: string) => parts.find((p) => p.type === k)?.value ?? '';
  let label = `${get('weekday')} ${get('day')} ${get('month')}`;
  if (day.slice(0, 4) !== today.slice(0, 4)) label += ` ${y}`;
  return time ? `${label} ${time}` : label;
}

/** What the Agenda page's edit form holds: the fields as the user sees them, due in the viewer's zone. */
export interface TaskDraft {
  summary: string;
  /** YYYY-MM-DD, '' for no due date. */
  date: string;
  /** HH:MM, '' for a due date without a time. */
  time: string;
  /** 0 for none. */
  priority: number;
  notes: string;
}

/** The form's starting values for a task. */
export function taskDraft(t: Task, zone: string): TaskDraft {
  const date = dueDay(t, zone) ?? '';
  const time = t.due && !t.due_date ? timeIn(new Date(t.due), zone) : '';
  return { summary: t.summary ?? '', date, time, priority: t.priority ?? 0, notes: t.description ?? '' };
}

/**
 * The UTC offset ("+01:00") of a zone at a wall-clock time there. The guess
 * is corrected once by the offset found at it, which settles every time but
 * the hour a DST change skips.
 */
export function zoneOffset(date: string, time: string, zone: string): string {
  const [y, mo, d] = date.split('-').map(Number);
  const [h, mi] = time.split(':').map(Number);
  const wall = Date.UTC(y, mo - 1, d, h, mi);
  const offsetAt = (ms: number) => {
    const p = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
    }).formatToParts(new Date(ms));
    const n = (k: string) => Number(p.find((x) => x.type === k)?.value ?? 0);
    return (Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute')) - ms) / 60000;
  };
  let off = offsetAt(wall);
  off = offsetAt(wall - off * 60000);
  const sign = off < 0 ? '-' : '+';
  const a = Math.abs(off);
  const pad = (v: number) => String(v).padStart(2, '0');
  return `${sign}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

/** The arguments of tasks_update that the changes need, besides uid and list. */
export interface TaskChanges {
  summary?: string;
  /** YYYY-MM-DD, an RFC 3339 time, or "none". */
  due?: string;
  priority?: number;
  notes?: string;
}

/**
 * The changes from the form's starting values: only the fields the user
 * changed, so a change made elsewhere to another field is not undone. A
 * cleared date clears the due ("none"); a time is sent with the viewer's
 * offset, so the daemon's own zone cannot move it. null when nothing
 * changed.
 */
export function taskChanges(before: TaskDraft, after: TaskDraft, zone: string): TaskChanges | null {
  const c: TaskChanges = {};
  const summary = after.summary.trim();
  if (summary !== before.summary.trim()) c.summary = summary;
  if (after.date !== before.date || (after.date && after.time !== before.time)) {
    if (!after.date) c.due = 'none';
    else if (!after.time) c.due = after.date;
    else c.due = `${after.date}T${after.time}:00${zoneOffset(after.date, after.time, zone)}`;
  }
  if (after.priority !== before.priority) c.priority = after.priority;
  if (after.notes !== before.notes) c.notes = after.notes;
  return Object.keys(c).length ? c : null;
}
