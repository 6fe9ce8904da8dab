import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import { AppContext } from '../src/context';
import { taskChanges, taskDraft, zoneOffset, type Task } from '../src/lib/tasks';
import { TasksSection } from '../src/pages/AgendaTasks';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

const task = (p: Partial<Task>): Task => ({ id: 1, list: 'home', uid: 'u', summary: 'x', ...p });

describe('task edit helpers', () => {
  it('finds a zone’s offset at a wall-clock time, across DST', () => {
    expect(zoneOffset('2026-03-20', '18:30', 'Europe/Rome')).toBe('+01:00');
    expect(zoneOffset('2026-03-30', '18:00', 'Europe/Rome')).toBe('+02:00');
    expect(zoneOffset('2026-07-01', '09:00', 'America/New_York')).toBe('-04:00');
    expect(zoneOffset('2026-01-01', '00:00', 'Asia/Kolkata')).toBe('+05:30');
    expect(zoneOffset('2026-01-01', '00:00', 'UTC')).toBe('+00:00');
  });

  it('starts from the task as the viewer sees it', () => {
    expect(taskDraft(task({ summary: 'Call', due: '2026-03-20T17:00:00+01:00', priority: 2, description: 'n' }), 'Europe/Rome')).toEqual({
      summary: 'Call', date: '2026-03-20', time: '17:00', priority: 2, notes: 'n',
    });
    // 17:00 in Rome is 12:00 in New York.
    expect(taskDraft(task({ due: '2026-03-20T17:00:00+01:00' }), 'America/New_York').time).toBe('12:00');
    expect(taskDraft(task({ due: '2026-03-18T00:00:00+01:00', due_date: true }), 'America/New_York')).toMatchObject({ date: '2026-03-18', time: '' });
    expect(taskDraft(task({}), 'UTC')).toEqual({ summary: 'x', date: '', time: '', priority: 0, notes: '' });
  });

  it('sends only what changed', () => {
    const before = taskDraft(task({ summary: 'Rent', due: '2026-03-18T00:00:00+01:00', due_date: true, priority: 1, description: 'old' }), 'Europe/Rome');
    expect(taskChanges(before, { ...before }, 'Europe/Rome')).toBeNull();
    expect(taskChanges(before, { ...before, summary: '  Rent  ' }, 'Europe/Rome')).toBeNull();
    expect(taskChanges(before, { ...before, summary: ' March rent ' }, 'Europe/Rome')).toEqual({ summary: 'March rent' });
    expect(taskChanges(before, { ...before, date: '' }, 'Europe/Rome')).toEqual({ due: 'none' });
    expect(taskChanges(before, { ...before, date: '2026-03-24' }, 'Europe/Rome')).toEqual({ due: '2026-03-24' });
    expect(taskChanges(before, { ...before, time: '09:15' }, 'Europe/Rome')).toEqual({ due: '2026-03-18T09:15:00+01:00' });
    expect(taskChanges(before, { ...before, priority: 0, notes: '' }, 'Europe/Rome')).toEqual({ priority: 0, notes: '' });
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

const input = (form: HTMLElement, label: string) => within(form).getByLabelText(label) as HTMLInputElement;

describe('Tasks section: edit and delete', () => {
  it('edits a task inline and saves only the changes', async () => {
    let tasks: Task[] = [
      task({ uid: 'rent', summary: 'Pay the rent', due: '2026-03-18T00:00:00+01:00', due_date: true, overdue: true, priority: 1, description: 'by transfer' }),
      task({ uid: 'call', summary: 'Call the plumber', due: '2026-03-20T17:00:00+01:00' }),
    ];
    const posted: unknown[] = [];
    renderSection({
      'GET /api/tasks': () => json({ tasks, lists: ['home'] }),
      'POST /api/tasks/update': async (req) => {
        const body = await req.json();
        posted.push(body);
        if (body.uid === 'call') return json({ error: { code: 'failed', message: 'task write failed: the list changed' } }, 409);
        tasks = tasks.map((t) => (t.uid === body.uid ? { ...t, summary: body.summary ?? t.summary, priority: body.priority } : t));
        return json({ operation: { id: 4, kind: 'task_update', state: 'done' } });
      },
    });
    fireEvent.click(await screen.findByRole('button', { name: 'Edit “Pay the rent”' }));
    const form = screen.getByRole('form', { name: 'Edit “Pay the rent”' });
    expect(input(form, 'Title').value).toBe('Pay the rent');
    expect(input(form, 'Due date').value).toBe('2026-03-18');
    expect(input(form, 'Time').value).toBe('');
    expect(input(form, 'Time').disabled).toBe(false);
    expect((within(form).getByLabelText('Priority') as HTMLSelectElement).value).toBe('1');
    expect((within(form).getByLabelText('Notes') as HTMLTextAreaElement).value).toBe('by transfer');
    const save = within(form).getByRole('button', { name: 'Save' }) as HTMLButtonElement;
    expect(save.disabled).toBe(true); // nothing changed yet

    // An empty title is said, and cannot be saved.
    fireEvent.input(input(form, 'Title'), { target: { value: '  ' } });
    expect(within(form).getByText('A task needs a title.')).toBeTruthy();
    expect(save.disabled).toBe(true);

    fireEvent.input(input(form, 'Title'), { target: { value: 'Pay the March rent' } });
    fireEvent.input(input(form, 'Due date'), { target: { value: '2026-03-24' } });
    fireEvent.change(within(form).getByLabelText('Priority'), { target: { value: '3' } });
    expect(save.disabled).toBe(false);
    fireEvent.click(save);
    await screen.findByText('Saved: Pay the rent');
    expect(posted[0]).toEqual({ uid: 'rent', list: 'home', summary: 'Pay the March rent', due: '2026-03-24', priority: 3 });
    await waitFor(() => expect(screen.getByText('Pay the March rent')).toBeTruthy());
    expect(screen.queryByRole('form')).toBeNull();

    // A timed task: the time is sent with the viewer's offset; a refusal
    // is said and the form stays open with what was typed.
    fireEvent.click(screen.getByRole('button', { name: 'Edit “Call the plumber”' }));
    const call = screen.getByRole('form', { name: 'Edit “Call the plumber”' });
    expect(input(call, 'Time').value).toBe('17:00');
    fireEvent.input(input(call, 'Time'), { target: { value: '18:30' } });
    fireEvent.input(within(call).getByLabelText('Notes'), { target: { value: 'ring twice' } });
    fireEvent.submit(call);
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('Could not change “Call the plumber”');
    expect(alert.textContent).toContain('the list changed');
    expect(posted[1]).toEqual({ uid: 'call', list: 'home', due: '2026-03-20T18:30:00+01:00', notes: 'ring twice' });
    expect(input(screen.getByRole('form', { name: 'Edit “Call the plumber”' }), 'Time').value).toBe('18:30');

    // Cancel closes without a request; clearing the date clears the due.
    fireEvent.click(within(call).getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('form')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Edit “Call the plumber”' }));
    const again = screen.getByRole('form', { name: 'Edit “Call the plumber”' });
    expect(input(again, 'Time').value).toBe('17:00'); // starts afresh from the task
    fireEvent.input(input(again, 'Due date'), { target: { value: '' } });
    expect(input(again, 'Time').disabled).toBe(true);
    fireEvent.submit(again);
    await waitFor(() => expect(posted).toHaveLength(3));
    expect(posted[2]).toEqual({ uid: 'call', list: 'home', due: 'none' });
  });

  it('says a repeating task changes as a series', async () => {
    renderSection({
      'GET /api/tasks': () => json({ tasks: [task({ uid: 'plants', summary: 'Water the plants', due: '2026-03-23T18:00:00+01:00', recurring: true })], lists: ['home'] }),
    });
    fireEvent.click(await screen.findByRole('button', { name: 'Edit “Water the plants”' }));
    expect(screen.getByRole('form').textContent).toContain('the change applies to the whole series');
  });

  it('deletes a task after a confirmation, a repeating one as a series', async () => {
    let tasks: Task[] = [
      task({ uid: 'milk', summary: 'Buy milk' }),
      task({ uid: 'plants', summary: 'Water the plants', due: '2026-03-23T18:00:00+01:00', recurring: true, list: 'garden' }),
      task({ uid: 'boss', summary: 'Boss’s task', list: 'shared' }),
    ];
    const posted: unknown[] = [];
    renderSection({
      'GET /api/tasks': () => json({ tasks, lists: ['garden', 'home', 'shared'] }),
      'POST /api/tasks/delete': async (req) => {
        const body = await req.json();
        posted.push(body);
        if (body.uid === 'boss') return json({ error: { code: 'failed', message: 'task write failed: task list "shared": read-only' } }, 409);
        tasks = tasks.filter((t) => t.uid !== body.uid);
        return json({ operation: { id: 5, kind: 'task_delete', state: 'done' } });
      },
    });
    // Asking first; cancel sends nothing.
    fireEvent.click(await screen.findByRole('button', { name: 'Delete “Buy milk”' }));
    let ask = screen.getByRole('alertdialog', { name: 'Delete “Buy milk”?' });
    expect(ask.textContent).toContain('Delete Buy milk from home?');
    fireEvent.click(within(ask).getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(posted).toHaveLength(0);

    fireEvent.click(screen.getByRole('button', { name: 'Delete “Buy milk”' }));
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Delete' }));
    await screen.findByText('Deleted: Buy milk');
    expect(posted[0]).toEqual({ uid: 'milk', list: 'home' });
    await waitFor(() => expect(screen.queryByText('Buy milk')).toBeNull());

    // A repeating task: every occurrence, said and sent as a series.
    fireEvent.click(screen.getByRole('button', { name: 'Delete “Water the plants”' }));
    ask = screen.getByRole('alertdialog');
    expect(ask.textContent).toContain('every occurrence');
    fireEvent.click(within(ask).getByRole('button', { name: 'Delete' }));
    await screen.findByText('Deleted: Water the plants');
    expect(posted[1]).toEqual({ uid: 'plants', list: 'garden', series: true });

    // A refusal is said; the task stays.
    fireEvent.click(screen.getByRole('button', { name: 'Delete “Boss’s task”' }));
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Delete' }));
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('Could not delete “Boss’s task”');
    expect(alert.textContent).toContain('read-only');
    expect(screen.getByLabelText('Mark “Boss’s task” done')).toBeTruthy();
  });

  it('opens one task at a time', async () => {
    renderSection({ 'GET /api/tasks': () => json({ tasks: [task({ uid: 'a', summary: 'A' }), task({ uid: 'b', summary: 'B' })], lists: ['home'] }) });
    fireEvent.click(await screen.findByRole('button', { name: 'Edit “A”' }));
    expect(screen.getByRole('button', { name: 'Edit “A”' }).getAttribute('aria-expanded')).toBe('true');
    fireEvent.click(screen.getByRole('button', { name: 'Delete “B”' }));
    expect(screen.queryByRole('form')).toBeNull();
    expect(screen.getByRole('alertdialog', { name: 'Delete “B”?' })).toBeTruthy();
  });
});
