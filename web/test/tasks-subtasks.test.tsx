import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import { AppContext } from '../src/context';
import { groupTasks, openSubtasks, subtaskProgress, taskTree, type Task, type TaskNode } from '../src/lib/tasks';
import { TasksSection } from '../src/pages/AgendaTasks';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

const task = (p: Partial<Task>): Task => ({ id: 1, list: 'home', uid: 'u', summary: 'x', ...p });

// The daemon's answer for a move: the tree stands where its most urgent
// task (the van, due tomorrow) would, each subtask after its parent.
const moveHouse = (): Task[] => [
  task({ uid: 'move', summary: 'Move house', subtasks: 2, subtasks_done: 0 }),
  task({ uid: 'van', summary: 'Book the van', parent: 'move', parent_summary: 'Move house', depth: 1, due: '2026-03-21T00:00:00+01:00', due_date: true }),
  task({ uid: 'kitchen', summary: 'Pack the kitchen', parent: 'move', parent_summary: 'Move house', depth: 1, subtasks: 2, subtasks_done: 1 }),
  task({ uid: 'plates', summary: 'Wrap the plates', parent: 'kitchen', parent_summary: 'Pack the kitchen', depth: 2 }),
  task({ uid: 'milk', summary: 'Buy milk' }),
];

const outline = (ns: TaskNode[], depth = 0): string[] => ns.flatMap((n) => [`${'  '.repeat(depth)}${n.task.uid}`, ...outline(n.children, depth + 1)]);

describe('subtask helpers', () => {
  it('keeps a task and its subtasks together, in the group of the most urgent', () => {
    const g = groupTasks(moveHouse(), '2026-03-20', 'Europe/Rome');
    expect(g.map((x) => `${x.key}:${x.tasks.map((t) => t.uid).join(',')}`)).toEqual(['week:move,van,kitchen,plates', 'undated:milk']);
    // An overdue subtask brings its tree into Overdue.
    const late = moveHouse().map((t) => (t.uid === 'plates' ? { ...t, due: '2026-03-18T00:00:00+01:00', due_date: true, overdue: true } : t));
    expect(groupTasks(late, '2026-03-20', 'Europe/Rome')[0]).toMatchObject({ key: 'overdue' });
    // The open subtasks of a done task are listed on their own.
    const done = [task({ uid: 'p', done: true, subtasks: 1 }), task({ uid: 'c', parent: 'p', depth: 1 }), task({ uid: 'd' })];
    const dg = groupTasks(done, '2026-03-20', 'UTC');
    expect(dg[0].tasks.map((t) => `${t.uid}@${t.depth ?? 0}`)).toEqual(['c@0', 'd@0']);
  });

  it('nests a group as a tree', () => {
    expect(outline(taskTree(moveHouse()))).toEqual(['move', '  van', '  kitchen', '    plates', 'milk']);
    // A depth that skips a level hangs under the task before it.
    expect(outline(taskTree([task({ uid: 'a' }), task({ uid: 'b', depth: 3 })]))).toEqual(['a', '  b']);
    expect(outline(taskTree([task({ uid: 'orphan', depth: 2 })]))).toEqual(['orphan']);
  });

  it('says how many subtasks are done', () => {
    expect(subtaskProgress(task({ subtasks: 3, subtasks_done: 1 }))).toBe('1 of 3 done');
    expect(subtaskProgress(task({ subtasks: 2 }))).toBe('0 of 2 done');
    expect(subtaskProgress(task({}))).toBe('');
    expect(openSubtasks(task({ subtasks: 3, subtasks_done: 1 }))).toBe(2);
    expect(openSubtasks(task({}))).toBe(0);
  });
});

function renderSection(routes: Parameters<typeof fakeFetch>[0]) {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  render(
    <AppContext.Provider value={app}>
      <TasksSection zone="Europe/Rome" today="2026-03-20" />
    </AppContext.Provider>,
  );
  return ff;
}

describe('Tasks section: subtasks', () => {
  it('nests subtasks under their parent, which says how many are done', async () => {
    renderSection({ 'GET /api/tasks': () => json({ tasks: moveHouse(), lists: ['home'] }) });
    const week = await screen.findByRole('group', { name: 'Next 7 days' });
    const subs = within(week).getByRole('list', { name: 'Subtasks of “Move house”' });
    expect(within(subs).getByText('Book the van')).toBeTruthy();
    expect(within(subs).getByText('Pack the kitchen')).toBeTruthy();
    // The grandchild is nested one level further, inside the kitchen's row.
    const kitchen = within(subs).getByRole('list', { name: 'Subtasks of “Pack the kitchen”' });
    expect(within(kitchen).getByText('Wrap the plates')).toBeTruthy();
    // The parent's row holds its subtasks; the row says 0 of 2, the kitchen 1 of 2.
    const moveRow = subs.closest('li')!;
    expect(moveRow.querySelector('.tasks-summary')!.textContent).toBe('Move house');
    expect(within(moveRow).getByText('0 of 2 done')).toBeTruthy();
    expect(within(kitchen.closest('li')!).getByText('1 of 2 done').className).toContain('tasks-progress');
    expect(within(subs).getByText('Book the van').closest('li')!.className).toContain('tasks-subtask');
    // Nested tasks are not shown twice.
    expect(screen.getAllByText('Wrap the plates')).toHaveLength(1);
    expect(screen.getByRole('group', { name: 'No due date' }).textContent).toContain('Buy milk');
  });

  it('shows a subtask found without its parent with the parent’s title', async () => {
    renderSection({
      'GET /api/tasks': () =>
        json({ tasks: [task({ uid: 'kitchen', summary: 'Pack the kitchen', parent: 'move', parent_summary: 'Move house' })], lists: ['home'] }),
    });
    const row = (await screen.findByText('Pack the kitchen')).closest('li')!;
    expect(row.textContent).toContain('— in Move house');
    expect(row.className).not.toContain('tasks-subtask');
  });

  it('adds a subtask from a task’s row', async () => {
    let tasks = moveHouse();
    const posted: unknown[] = [];
    renderSection({
      'GET /api/tasks': () => json({ tasks, lists: ['home'] }),
      'POST /api/tasks': async (req) => {
        const body = await req.json();
        posted.push(body);
        if (body.summary === 'Too deep') return json({ error: { code: 'failed', message: 'task write failed: subtasks nest at most 5 levels' } }, 409);
        tasks = [tasks[0], task({ uid: 'boxes', summary: body.summary, parent: 'move', parent_summary: 'Move house', depth: 1 }), ...tasks.slice(1)];
        return json({ operation: { id: 7, kind: 'task_create', state: 'done' } });
      },
    });
    fireEvent.click(await screen.findByRole('button', { name: 'Add subtask to “Move house”' }));
    const form = screen.getByRole('form', { name: 'Add a subtask to “Move house”' });
    const add = within(form).getByRole('button', { name: 'Add' }) as HTMLButtonElement;
    expect(add.disabled).toBe(true);
    fireEvent.input(within(form).getByLabelText('Subtask'), { target: { value: '  Label the boxes ' } });
    fireEvent.click(add);
    await screen.findByText('Added: Label the boxes — in Move house');
    expect(posted[0]).toEqual({ summary: 'Label the boxes', parent: 'move', list: 'home' });
    await waitFor(() => expect(screen.queryByRole('form', { name: 'Add a subtask to “Move house”' })).toBeNull());
    const subs = screen.getByRole('list', { name: 'Subtasks of “Move house”' });
    await waitFor(() => expect(within(subs).getByText('Label the boxes')).toBeTruthy());
    // A refusal is said, the form stays.
    fireEvent.click(screen.getByRole('button', { name: 'Add subtask to “Wrap the plates”' }));
    const f2 = screen.getByRole('form', { name: 'Add a subtask to “Wrap the plates”' });
    fireEvent.input(within(f2).getByLabelText('Subtask'), { target: { value: 'Too deep' } });
    fireEvent.submit(f2);
    expect((await screen.findByRole('alert')).textContent).toContain('Could not add a subtask to “Wrap the plates”: task write failed: subtasks nest at most 5 levels');
    expect(screen.getByRole('form', { name: 'Add a subtask to “Wrap the plates”' })).toBeTruthy();
  });

  it('asks before completing a task with open subtasks, then completes them with it', async () => {
    let tasks = moveHouse();
    const posted: unknown[] = [];
    renderSection({
      'GET /api/tasks': () => json({ tasks, lists: ['home'] }),
      'POST /api/tasks/complete': async (req) => {
        const body = await req.json();
        posted.push(body);
        tasks = tasks.filter((t) => t.uid === 'milk');
        return json({ operation: { id: 9, kind: 'task_complete', state: 'done', subtasks: [{ id: 8, uid: 'van' }] } });
      },
    });
    fireEvent.click(await screen.findByLabelText('Mark “Move house” done'));
    const ask = screen.getByRole('alertdialog', { name: 'Complete “Move house” and its subtasks?' });
    expect(ask.textContent).toContain('Move house has 2 open subtasks. Complete them too?');
    expect(posted).toHaveLength(0);
    expect((screen.getByLabelText('Mark “Move house” done') as HTMLInputElement).checked).toBe(false);
    // Cancelled: nothing is sent.
    fireEvent.click(within(ask).getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('alertdialog')).toBeNull();
    fireEvent.click(screen.getByLabelText('Mark “Move house” done'));
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Complete all' }));
    await screen.findByText('Done, with its subtasks: Move house');
    expect(posted).toEqual([{ uid: 'move', list: 'home', with_subtasks: true }]);
    await waitFor(() => expect(screen.queryByText('Book the van')).toBeNull());
  });

  it('completes a subtask, and a task whose subtasks are done, at once', async () => {
    const posted: unknown[] = [];
    renderSection({
      'GET /api/tasks': () =>
        json({ tasks: [task({ uid: 'p', summary: 'Party', subtasks: 1, subtasks_done: 1 }), task({ uid: 'c', summary: 'Cake', parent: 'p', depth: 1 })], lists: ['home'] }),
      'POST /api/tasks/complete': async (req) => {
        posted.push(await req.json());
        return json({ operation: { id: 1, kind: 'task_complete', state: 'done' } });
      },
    });
    fireEvent.click(await screen.findByLabelText('Mark “Cake” done'));
    await screen.findByText('Done: Cake');
    fireEvent.click(screen.getByLabelText('Mark “Party” done'));
    await screen.findByText('Done: Party');
    expect(posted).toEqual([
      { uid: 'c', list: 'home' },
      { uid: 'p', list: 'home' },
    ]);
    expect(screen.queryByRole('alertdialog')).toBeNull();
  });

  it('deletes a task with its subtasks after saying so', async () => {
    const posted: unknown[] = [];
    renderSection({
      'GET /api/tasks': () => json({ tasks: moveHouse(), lists: ['home'] }),
      'POST /api/tasks/delete': async (req) => {
        posted.push(await req.json());
        return json({ operation: { id: 2, kind: 'task_delete', state: 'done' } });
      },
    });
    fireEvent.click(await screen.findByRole('button', { name: 'Delete “Move house”' }));
    const confirm = screen.getByRole('alertdialog', { name: 'Delete “Move house”?' });
    expect(confirm.textContent).toContain('Delete Move house and its 2 subtasks (with theirs)?');
    fireEvent.click(within(confirm).getByRole('button', { name: 'Delete' }));
    await screen.findByText('Deleted: Move house');
    expect(posted).toEqual([{ uid: 'move', list: 'home', with_subtasks: true }]);
  });
});
