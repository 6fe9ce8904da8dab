import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import { AppContext } from '../src/context';
import { dueLabel, groupTasks, type Task } from '../src/lib/tasks';
import { AgendaPage } from '../src/pages/Agenda';
import { TasksSection } from '../src/pages/AgendaTasks';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

const task = (p: Partial<Task>): Task => ({ id: 1, list: 'home', uid: 'u', summary: 'x', ...p });

describe('task helpers', () => {
  it('groups by due day in the viewer’s zone, overdue first', () => {
    const ts = [
      task({ uid: 'rent', summary: 'Pay the rent', due: '2026-03-18T00:00:00+01:00', due_date: true, overdue: true }),
      // 23:30 in New York on the 19th is the 20th in Rome.
      task({ uid: 'call', summary: 'Call NY', due: '2026-03-19T23:30:00-04:00' }),
      task({ uid: 'trip', summary: 'Plan the trip', due: '2026-03-25T00:00:00+01:00', due_date: true }),
      task({ uid: 'tax', summary: 'Taxes', due: '2026-04-30T00:00:00+02:00', due_date: true }),
      task({ uid: 'milk', summary: 'Buy milk' }),
      task({ uid: 'done', summary: 'Old', done: true }),
    ];
    const g = groupTasks(ts, '2026-03-20', 'Europe/Rome');
    expect(g.map((x) => `${x.key}:${x.tasks.map((t) => t.uid).join(',')}`)).toEqual(['overdue:rent', 'today:call', 'week:trip', 'later:tax', 'undated:milk']);
    // In New York the call is due on the 19th: overdue there by day.
    expect(groupTasks(ts, '2026-03-20', 'America/New_York')[0].tasks.map((t) => t.uid)).toEqual(['rent', 'call']);
  });

  it('labels the due time', () => {
    expect(dueLabel(task({ due: '2026-03-20T17:00:00+01:00' }), '2026-03-20', 'Europe/Rome')).toBe('17:00');
    expect(dueLabel(task({ due: '2026-03-20T00:00:00+01:00', due_date: true }), '2026-03-20', 'Europe/Rome')).toBe('today');
    expect(dueLabel(task({ due: '2026-03-21T00:00:00+01:00', due_date: true }), '2026-03-20', 'UTC')).toBe('tomorrow');
    expect(dueLabel(task({ due: '2026-03-25T00:00:00+01:00', due_date: true }), '2026-03-20', 'Europe/Rome')).toBe('Wed 25 Mar');
    expect(dueLabel(task({ due: '2027-01-05T09:00:00Z' }), '2026-03-20', 'UTC')).toBe('Tue 5 Jan 2027 09:00');
    expect(dueLabel(task({}), '2026-03-20', 'UTC')).toBe('');
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

describe('Tasks section', () => {
  it('lists open tasks, overdue in a warning group, and completes one by its box', async () => {
    let tasks: Task[] = [
      task({ uid: 'rent', summary: 'Pay the rent', due: '2026-03-18T00:00:00+01:00', due_date: true, overdue: true, priority: 1 }),
      task({ uid: 'inv', summary: 'Send the invoice', due: '2026-03-20T17:00:00+01:00', status: 'IN-PROCESS', percent: 50 }),
      task({ uid: 'plants', summary: 'Water the plants', due: '2026-03-23T18:00:00+01:00', recurring: true, list: 'garden' }),
      task({ uid: 'milk', summary: 'Buy milk' }),
    ];
    const posted: unknown[] = [];
    const ff = renderSection({
      'GET /api/tasks': () => json({ tasks, lists: ['garden', 'home'] }),
      'POST /api/tasks/complete': async (req) => {
        const body = await req.json();
        posted.push(body);
        if (body.uid === 'milk') return json({ error: { code: 'failed', message: 'task write failed: the list changed' } }, 409);
        tasks = tasks.filter((t) => t.uid !== body.uid);
        return json({ operation: { id: 3, kind: 'task_complete', state: 'done' } });
      },
    });
    const overdue = await screen.findByRole('group', { name: 'Overdue' });
    expect(overdue.className).toContain('tasks-overdue');
    expect(within(overdue).getByText('Pay the rent')).toBeTruthy();
    expect(within(overdue).getByText('Wed 18 Mar')).toBeTruthy();
    expect(within(overdue).getByText('!1')).toBeTruthy();
    const today = screen.getByRole('group', { name: 'Today' });
    expect(today.textContent).toContain('17:00');
    expect(today.textContent).toContain('50%');
    expect(screen.getByRole('group', { name: 'Next 7 days' }).textContent).toContain('repeats');
    expect(screen.getByRole('group', { name: 'No due date' }).textContent).toContain('Buy milk');
    expect(screen.getByText('4 open, 1 overdue')).toBeTruthy();
    expect(new URL(ff.calls[0].url).search).toBe('?limit=300');

    fireEvent.click(screen.getByLabelText('Mark “Pay the rent” done'));
    await screen.findByText('Done: Pay the rent');
    expect(posted[0]).toEqual({ uid: 'rent', list: 'home' });
    await waitFor(() => expect(screen.queryByText('Pay the rent')).toBeNull());
    expect(screen.queryByRole('group', { name: 'Overdue' })).toBeNull();

    // A refusal is said, and the task stays unticked.
    fireEvent.click(screen.getByLabelText('Mark “Buy milk” done'));
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('Could not complete “Buy milk”');
    expect(alert.textContent).toContain('the list changed');
    expect((screen.getByLabelText('Mark “Buy milk” done') as HTMLInputElement).checked).toBe(false);
  });

  it('tells how to add a task list when there is none, and when nothing is left', async () => {
    renderSection({ 'GET /api/tasks': () => json({ tasks: [], lists: [] }) });
    const note = await screen.findByRole('note', { name: 'No task lists' });
    expect(note.textContent).toContain('hestia cal import PATH');
    expect(note.textContent).toContain('Google Tasks is not CalDAV');
  });

  it('says when every task is done', async () => {
    renderSection({ 'GET /api/tasks': () => json({ tasks: [], lists: ['home'] }) });
    expect((await screen.findByText(/Nothing to do/)).textContent).toContain('hestia tasks add');
  });

  it('shows the daemon’s error', async () => {
    renderSection({ 'GET /api/tasks': () => json({ error: { code: 'internal', message: 'listing tasks failed (error 1a2b)' } }, 500) });
    expect((await screen.findByRole('alert')).textContent).toContain('listing tasks failed');
  });

  it('is part of the Agenda page', async () => {
    const ff = fakeFetch({
      'GET /api/calendar/calendars': () => json({ calendars: [{ name: 'home' }] }),
      'GET /api/calendar/agenda': () => json({ from: '2026-03-16', to: '2026-03-23', instances: [] }),
      'GET /api/tasks': () => json({ tasks: [task({ uid: 'milk', summary: 'Buy milk' })], lists: ['home'] }),
    });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    render(
      <AppContext.Provider value={app}>
        <AgendaPage zone="Europe/Rome" today="2026-03-20" />
      </AppContext.Provider>,
    );
    const section = await screen.findByRole('region', { name: 'Tasks' });
    await waitFor(() => expect(section.textContent).toContain('Buy milk'));
  });
});
