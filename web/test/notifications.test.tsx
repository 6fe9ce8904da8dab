import { readFileSync } from 'node:fs';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { constraintText, noticeHref, ruleText } from '../src/api/notify';
import { AppContext } from '../src/context';
import { NotificationsPage } from '../src/pages/Notifications';
import { hrefFor, parseRoute } from '../src/router';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

const t0 = '2026-03-09T07:55:00Z';

function daemon() {
  let notes = [
    { id: 2, kind: 'job', title: 'Job briefing error', body: 'model exploded', url: '/jobs', created_at: t0, push_state: 'no_device', attempts: 0 },
    { id: 1, kind: 'approval', title: 'Approval needed: write_file', url: '/c/c_1', chat_id: 'c_1', created_at: t0, read_at: t0, push_state: 'delivered', attempts: 1 },
  ] as any[];
  let watches = [
    {
      id: 'w_1',
      source: 'train',
      ref: 'S01700/9544/1767571200000',
      instruction: 'Tell Ann when my train arrives',
      state: 'active',
      expires_at: t0,
      created_at: t0,
      last_poll: t0,
      last_event_at: t0,
      events: 3,
      rules: [
        {
          id: 'arr',
          event: 'train.arrived',
          once: true,
          grants: [{ tool: 'mail_send', args: { to: { exact: ['ann@example.org'] }, subject: { template: 'Train {{event.train}} arrived' } }, max: 1 }],
        },
      ],
    },
  ] as any[];
  let settings = { quiet_start: '', quiet_end: '', rate_limit: 10 };
  const ff = fakeFetch({
    'GET /api/notifications': (req) => {
      const unread = new URL(req.url).searchParams.get('unread') === '1';
      const list = unread ? notes.filter((n) => !n.read_at) : notes;
      return json({ notifications: list, unread: notes.filter((n) => !n.read_at).length });
    },
    'POST /api/notifications/2/read': () => {
      notes = notes.map((n) => (n.id === 2 ? { ...n, read_at: t0 } : n));
      return json({ read: 2 });
    },
    'POST /api/notifications/read-all': () => {
      notes = notes.map((n) => ({ ...n, read_at: t0 }));
      return json({ read: 'all' });
    },
    'GET /api/notifications/settings': () => json(settings),
    'PUT /api/notifications/settings': async (req) => {
      const b = await req.json();
      if (b.quiet_start && b.quiet_start === b.quiet_end) return json({ error: { code: 'bad_request', message: 'quiet_end: must differ from quiet_start' } }, 400);
      settings = b;
      return json(settings);
    },
    'GET /api/push/subscriptions': () => json({ subscriptions: [{ id: 1, endpoint: 'https://push.example/1', device: 'Phone', created_at: t0, failures: 0 }] }),
    'DELETE /api/push/subscriptions': () => json({ removed: true }),
    'GET /api/watches': () =>
      json({ watches, sources: ['file', 'train', 'url'], events: { file: ['file.changed', 'file.deleted'], train: ['train.arrived'], url: ['url.changed'] } }),
    'POST /api/watches/w_1/pause': () => {
      watches = watches.map((w) => ({ ...w, state: 'paused' }));
      return json(watches[0]);
    },
    'DELETE /api/watches/w_1': () => {
      watches = [];
      return json({ deleted: 'w_1' });
    },
    'POST /api/watches': async (req) => {
      const b = await req.json();
      if (!b.instruction) return json({ error: { code: 'bad_watch', message: 'instruction: is required: the user\u2019s own words for what to do' } }, 400);
      const w = { id: 'w_2', ...b, state: 'active', created_at: t0, events: 0 };
      watches = [w, ...watches];
      return json(w, 201);
    },
  });
  return { ff, get watches() { return watches; } };
}

function renderPage(fetch: typeof globalThis.fetch) {
  const app = new App({ tokens: memTokens('tok'), fetch });
  render(
    <AppContext.Provider value={app}>
      <NotificationsPage />
    </AppContext.Provider>,
  );
  return app;
}

afterEach(() => {
  vi.restoreAllMocks();
  history.replaceState(null, '', '/');
});

describe('Notifications page', () => {
  it('routes /notifications', () => {
    expect(parseRoute('/notifications')).toEqual({ name: 'notifications' });
    expect(hrefFor({ name: 'notifications' })).toBe('/notifications');
  });

  it('lists the inbox, marks read, filters unread and opens the linked page', async () => {
    const d = daemon();
    renderPage(d.ff.fetch);
    const inbox = await screen.findByRole('region', { name: 'Inbox' });
    await within(inbox).findByText('Job briefing error');
    expect(within(inbox).getByText('1 unread')).toBeTruthy();
    expect(within(inbox).getByText('model exploded')).toBeTruthy();
    fireEvent.click(within(inbox).getByRole('tab', { name: 'Unread' }));
    await waitFor(() => expect(within(inbox).queryByText('Approval needed: write_file')).toBeNull());
    fireEvent.click(within(inbox).getByRole('button', { name: 'Mark read: Job briefing error' }));
    await within(inbox).findByText('Nothing unread.');
    fireEvent.click(within(inbox).getByRole('tab', { name: 'All' }));
    const approval = await within(inbox).findByRole('listitem', { name: 'Approval needed: write_file' });
    fireEvent.click(within(approval).getByRole('link', { name: 'Open' }));
    await waitFor(() => expect(location.pathname).toBe('/c/c_1'));
  });

  it('saves quiet hours and shows the daemon’s error naming the field', async () => {
    const d = daemon();
    renderPage(d.ff.fetch);
    const box = await screen.findByRole('region', { name: 'Notification settings' });
    fireEvent.click(await within(box).findByLabelText('Quiet hours'));
    fireEvent.input(within(box).getByLabelText('Quiet from'), { target: { value: '07:00' } });
    fireEvent.input(within(box).getByLabelText('Quiet until'), { target: { value: '07:00' } });
    fireEvent.click(within(box).getByRole('button', { name: 'Save' }));
    expect((await within(box).findByRole('alert')).textContent).toContain('quiet_end');
    fireEvent.input(within(box).getByLabelText('Quiet from'), { target: { value: '22:00' } });
    fireEvent.click(within(box).getByRole('button', { name: 'Save' }));
    await within(box).findByText('Saved.');
    const put = d.ff.calls.filter((c) => c.method === 'PUT').at(-1)!;
    expect(await put.clone().json()).toEqual({ quiet_start: '22:00', quiet_end: '07:00', rate_limit: 10 });
    expect(within(box).getByText('Phone')).toBeTruthy();
    fireEvent.click(within(box).getByRole('button', { name: 'Remove Phone' }));
    await waitFor(() => expect(d.ff.calls.some((c) => c.method === 'DELETE' && c.url.endsWith('/api/push/subscriptions'))).toBe(true));
    const del = d.ff.calls.find((c) => c.method === 'DELETE')!;
    expect(await del.clone().json()).toEqual({ endpoint: 'https://push.example/1' });
  });

  it('shows watches with their grants, pauses, deletes and creates one', async () => {
    const d = daemon();
    renderPage(d.ff.fetch);
    const box = await screen.findByRole('region', { name: 'Watches' });
    const item = await within(box).findByRole('listitem', { name: 'Watch train S01700/9544/1767571200000' });
    expect(within(item).getByText('active')).toBeTruthy();
    expect(within(item).getByText('mail_send')).toBeTruthy();
    expect(item.textContent).toContain('to = ["ann@example.org"]');
    expect(item.textContent).toContain('(3 events)');
    fireEvent.click(within(item).getByRole('button', { name: 'Pause' }));
    await within(box).findByText('Paused.');
    await within(box).findByRole('button', { name: 'Resume' });
    (window as any).confirm = () => true;
    // Delete is a red-text ghost button: the page once painted .btn.danger's
    // red background with red text.
    expect(within(box).getByRole('button', { name: 'Delete' }).className).toContain('danger-ghost');
    fireEvent.click(within(box).getByRole('button', { name: 'Delete' }));
    await within(box).findByText(/No watches yet/);

    const form = within(box).getByRole('form', { name: 'New watch' });
    fireEvent.input(within(form).getByLabelText('Resource'), { target: { value: '/home/me/notes.txt' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Add watch' }));
    expect((await within(form).findByRole('alert')).textContent).toContain('instruction');
    fireEvent.input(within(form).getByLabelText('Instruction'), { target: { value: 'Tell me when my notes change' } });
    fireEvent.change(within(form).getByLabelText('Event'), { target: { value: 'file.deleted' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Add watch' }));
    await within(box).findByText('Watching file /home/me/notes.txt.');
    const post = d.ff.calls.filter((c) => c.method === 'POST' && c.url.endsWith('/api/watches')).at(-1)!;
    const body = await post.clone().json();
    expect(body.source).toBe('file');
    expect(body.rules).toEqual([{ event: 'file.deleted' }]);
    expect(Date.parse(body.expires_at)).toBeGreaterThan(Date.now() + 6 * 86400e3);

    fireEvent.input(within(form).getByLabelText('Resource'), { target: { value: '/x' } });
    fireEvent.input(within(form).getByLabelText('Instruction'), { target: { value: 'x' } });
    fireEvent.input(within(form).getByLabelText('Rules JSON'), { target: { value: '[{"event": ' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Add watch' }));
    expect((await within(form).findByRole('alert')).textContent).toContain('rules: not valid JSON');
  });

  it('shows a failure with Retry when the daemon errors', async () => {
    const ff = fakeFetch({
      'GET /api/notifications': () => json({ error: { code: 'internal', message: 'disk full' } }, 500),
      'GET /api/notifications/settings': () => json({ quiet_start: '', quiet_end: '', rate_limit: 0 }),
      'GET /api/push/subscriptions': () => json({ subscriptions: [] }),
      'GET /api/watches': () => json({ watches: [], sources: [] }),
    });
    renderPage(ff.fetch);
    const inbox = await screen.findByRole('region', { name: 'Inbox' });
    expect((await within(inbox).findByRole('alert')).textContent).toContain('disk full');
    expect(within(inbox).getByRole('button', { name: 'Retry' })).toBeTruthy();
    await screen.findByText(/No device receives pushes/);
    await screen.findByText(/No watches yet/);
  });
});

describe('mail watch preview', () => {
  // A daemon with a mail source whose preview answers from a tiny mirror:
  // from:anna matches three messages, from:nobody none, and a query the
  // parser refuses is a 400 naming the ref.
  function mailDaemon() {
    const hits = [
      { id: 3, thread_id: 3, subject: 'Roof quote v2', from: 'Anna <anna@example.org>', date: '2026-03-08T10:00:00Z' },
      { id: 2, thread_id: 2, subject: '', from: 'Anna <anna@example.org>', date: '2026-03-07T10:00:00Z' },
    ];
    return fakeFetch({
      'GET /api/notifications': () => json({ notifications: [], unread: 0 }),
      'GET /api/notifications/settings': () => json({ quiet_start: '', quiet_end: '', rate_limit: 0 }),
      'GET /api/push/subscriptions': () => json({ subscriptions: [] }),
      'GET /api/watches': () => json({ watches: [], sources: ['file', 'mail'], events: { file: ['file.changed'], mail: ['mail.received'] } }),
      'POST /api/watches/preview': async (req) => {
        const b = await req.json();
        if (b.source !== 'mail') return json({ error: { code: 'bad_watch', message: 'source: file watches have no preview' } }, 400);
        if (b.ref === 'from:') return json({ error: { code: 'bad_watch', message: 'ref: the mail search: from: needs a value' } }, 400);
        const note = 'messages already here never fire; the watch fires for matching mail that arrives after it is saved';
        if (b.ref.includes('anna')) return json({ source: 'mail', ref: b.ref, matches: hits, total: 3, note });
        return json({ source: 'mail', ref: b.ref, matches: [], total: 0, note });
      },
    });
  }

  async function mailForm(ff: ReturnType<typeof fakeFetch>) {
    renderPage(ff.fetch);
    const box = await screen.findByRole('region', { name: 'Watches' });
    const form = await within(box).findByRole('form', { name: 'New watch' });
    // A file watch has nothing to preview.
    expect(within(form).queryByRole('button', { name: 'Preview' })).toBeNull();
    fireEvent.change(within(form).getByLabelText('Source'), { target: { value: 'mail' } });
    return form;
  }

  it('shows the count and the newest matches, and drops them when the query changes', async () => {
    const ff = mailDaemon();
    const form = await mailForm(ff);
    const btn = within(form).getByRole('button', { name: 'Preview' }) as HTMLButtonElement;
    expect(btn.disabled).toBe(true);
    fireEvent.input(within(form).getByLabelText('Resource'), { target: { value: 'from:anna@example.org' } });
    fireEvent.click(btn);
    const box = await within(form).findByRole('region', { name: 'Preview' });
    await within(box).findByText('Roof quote v2');
    expect(box.textContent).toContain('3 messages match now; the newest 2:');
    expect(within(box).getByText('(no subject)')).toBeTruthy();
    expect(within(box).getAllByText(/anna@example\.org/)).toHaveLength(2);
    expect(box.textContent).toContain('never fire');
    const req = ff.calls.find((c) => c.url.endsWith('/api/watches/preview'))!;
    expect(await req.clone().json()).toEqual({ source: 'mail', ref: 'from:anna@example.org', limit: 5 });
    // The shown matches belong to the old query: editing it hides them.
    fireEvent.input(within(form).getByLabelText('Resource'), { target: { value: 'from:anna@example.org subject:roof' } });
    expect(within(form).queryByRole('region', { name: 'Preview' })).toBeNull();
  });

  it('says nothing matches yet when the search finds nothing', async () => {
    const form = await mailForm(mailDaemon());
    fireEvent.input(within(form).getByLabelText('Resource'), { target: { value: 'from:nobody@example.org' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Preview' }));
    const box = await within(form).findByRole('region', { name: 'Preview' });
    await within(box).findByText(/Nothing matches yet/);
    expect(within(box).queryByRole('list')).toBeNull();
  });

  it('shows the daemon’s error naming the bad query', async () => {
    const form = await mailForm(mailDaemon());
    fireEvent.input(within(form).getByLabelText('Resource'), { target: { value: 'from:' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Preview' }));
    const box = await within(form).findByRole('region', { name: 'Preview' });
    const alert = await within(box).findByRole('alert');
    expect(alert.textContent).toContain('ref: the mail search: from: needs a value');
    expect(within(box).queryByText(/Nothing matches yet/)).toBeNull();
  });
});

describe('notification helpers', () => {
  it('keeps links on this origin and describes rules and constraints', () => {
    const base = { id: 1, kind: 'watch', title: 't', created_at: t0, push_state: 'pending', attempts: 0 };
    expect(noticeHref({ ...base, url: '/actions' })).toBe('/actions');
    expect(noticeHref({ ...base, url: '//evil.example/x' })).toBeUndefined();
    expect(noticeHref({ ...base, url: 'https://evil.example/', chat_id: 'c 1' })).toBe('/c/c%201');
    expect(ruleText({ id: 'r', event: 'train.platform_changed', where: { station_id: 'S1' }, once: true })).toBe('train.platform_changed where station_id = "S1" (once)');
    expect(ruleText({ id: 'r', trigger: { field: 'arrival', before_minutes: 15 } })).toBe('15 min before arrival');
    expect(constraintText({ set: ['a', 'b'] })).toBe('one of ["a","b"]');
    expect(constraintText({ min: 1 })).toBe('1..∞');
  });
});

describe('watch buttons', () => {
  it('never set red text on a red button', () => {
    const css = readFileSync('src/styles/background.css', 'utf8');
    expect(css).not.toMatch(/\.btn\.danger\s*\{[^}]*color:\s*var\(--bad\)/);
  });
});
