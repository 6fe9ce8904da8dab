import { fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import { AppContext } from '../src/context';
import { addDays, layoutDays, repeatText, weekStart, type Instance } from '../src/lib/calendar';
import { AgendaPage } from '../src/pages/Agenda';
import { ContactsPage } from '../src/pages/Contacts';
import { parseRoute } from '../src/router';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens, tick } from './helpers';

const inst = (p: Partial<Instance>): Instance => ({ id: 1, calendar: 'work', uid: 'u', summary: 'x', start: '', end: '', ...p });

describe('calendar helpers', () => {
  it('routes /agenda and /contacts', () => {
    expect(parseRoute('/agenda')).toEqual({ name: 'agenda' });
    expect(parseRoute('/contacts/')).toEqual({ name: 'contacts' });
  });

  it('does date arithmetic without zones', () => {
    expect(addDays('2026-03-29', 1)).toBe('2026-03-30'); // the DST change in Europe
    expect(addDays('2026-03-01', -1)).toBe('2026-02-28');
    expect(weekStart('2026-03-05')).toBe('2026-03-02'); // a Thursday → its Monday
    expect(weekStart('2026-03-08')).toBe('2026-03-02'); // Sunday belongs to the week before
    expect(weekStart('2026-03-02')).toBe('2026-03-02');
  });

  it('puts all-day events on their own dates whatever the viewer’s zone', () => {
    const ev = inst({ summary: 'Holiday', all_day: true, start: '2026-03-05T00:00:00+01:00', end: '2026-03-07T00:00:00+01:00' });
    for (const zone of ['America/Los_Angeles', 'Europe/Rome', 'Pacific/Auckland']) {
      const days = layoutDays([ev], '2026-03-04', 4, zone);
      expect(days.map((d) => d.items.length)).toEqual([0, 1, 1, 0]);
      expect(days[1].items[0].time).toBe('All day');
    }
    // A zero-length all-day event still takes its day.
    const one = layoutDays([inst({ all_day: true, start: '2026-03-05T00:00:00Z', end: '2026-03-05T00:00:00Z' })], '2026-03-05', 1, 'UTC');
    expect(one[0].items).toHaveLength(1);
  });

  it('shows timed events in the viewer’s zone with the event’s own time beside', () => {
    // 09:00 in New York is 15:00 in Rome (both on standard time).
    const ev = inst({ summary: 'Call NY', start: '2026-03-03T09:00:00-05:00', end: '2026-03-03T10:00:00-05:00', zone: 'America/New_York' });
    const [day] = layoutDays([ev], '2026-03-03', 1, 'Europe/Rome');
    expect(day.items[0].time).toBe('15:00–16:00');
    expect(day.items[0].own).toBe('09:00 New York');
    // Same zone as the viewer: no second time.
    const [same] = layoutDays([ev], '2026-03-03', 1, 'America/New_York');
    expect(same.items[0].time).toBe('09:00–10:00');
    expect(same.items[0].own).toBeUndefined();
  });

  it('splits events over midnight and keeps one ending at midnight on its day', () => {
    const late = inst({ summary: 'Night train', start: '2026-03-03T22:00:00+01:00', end: '2026-03-04T06:30:00+01:00' });
    const toMidnight = inst({ summary: 'Party', start: '2026-03-03T20:00:00+01:00', end: '2026-03-04T00:00:00+01:00' });
    const days = layoutDays([late, toMidnight], '2026-03-03', 2, 'Europe/Rome');
    expect(days[0].items.map((i) => `${i.time} ${i.inst.summary}`)).toEqual(['20:00–00:00 Party', 'from 22:00 Night train']);
    expect(days[1].items.map((i) => `${i.time} ${i.inst.summary}`)).toEqual(['until 06:30 Night train']);
  });

  it('names the repeat frequency', () => {
    expect(repeatText('FREQ=WEEKLY;BYDAY=MO')).toBe('repeats weekly');
    expect(repeatText(undefined)).toBe('repeats');
  });
});

describe('Agenda page', () => {
  it('shows a week of events, moves by week and day, and finds free time', async () => {
    const week = [
      inst({ id: 1, uid: 'standup', summary: 'Standup', start: '2026-03-02T09:30:00+01:00', end: '2026-03-02T10:00:00+01:00', recurring: true, rrule: 'FREQ=WEEKLY;BYDAY=MO', zone: 'Europe/Rome' }),
      inst({ id: 2, uid: 'trip', summary: 'Lisbon trip', all_day: true, start: '2026-03-05T00:00:00+01:00', end: '2026-03-07T00:00:00+01:00' }),
      inst({ id: 3, uid: 'ny', summary: 'Call NY', start: '2026-03-05T09:00:00-05:00', end: '2026-03-05T10:00:00-05:00', zone: 'America/New_York', location: 'Zoom', attendees: [{ name: 'Ana', email: 'ana@example.org' }] }),
    ];
    const ff = fakeFetch({
      'GET /api/calendar/agenda': (req) => {
        const from = new URL(req.url).searchParams.get('from');
        return json({ from, to: from, instances: from! < '2026-03-09' ? week : [] });
      },
      'GET /api/calendar/free': () =>
        json({ free: [{ start: '2026-03-05T09:00:00+01:00', end: '2026-03-05T15:00:00+01:00' }, { start: '2026-03-05T16:00:00+01:00', end: '2026-03-05T18:00:00+01:00' }], busy: [] }),
      'GET /api/tasks': () => json({ tasks: [], lists: [] }),
    });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    render(
      <AppContext.Provider value={app}>
        <AgendaPage zone="Europe/Rome" today="2026-03-05" />
      </AppContext.Provider>,
    );
    await screen.findByText('Standup');
    expect(new URL(ff.calls.find((c) => c.url.includes('/agenda'))!.url).search).toBe('?from=2026-03-02&to=2026-03-09&limit=1000');
    expect(screen.getByText('repeats weekly')).toBeTruthy();
    expect(screen.getAllByText('Lisbon trip')).toHaveLength(2); // Thursday and Friday
    expect(screen.getByText('15:00–16:00')).toBeTruthy();
    expect(screen.getByText('09:00 New York')).toBeTruthy();
    const thursday = screen.getByRole('region', { name: /Thursday/ });
    expect(thursday.textContent).toContain('today');
    expect(thursday.textContent).toContain('Call NY');

    fireEvent.click(screen.getByText('Call NY'));
    expect(screen.getByText('Zoom')).toBeTruthy();
    expect(screen.getByText('Ana <ana@example.org>')).toBeTruthy();
    expect(screen.getByText('America/New_York')).toBeTruthy();

    fireEvent.input(screen.getByLabelText('Minimum minutes'), { target: { value: '45' } });
    fireEvent.click(screen.getByText('Find free time'));
    await screen.findByText('Free 09:00–15:00, 16:00–18:00');
    expect(new URL(ff.calls.at(-1)!.url).search).toBe('?from=2026-03-02&to=2026-03-09&min=45');
    expect(screen.getByRole('region', { name: /Monday/ }).textContent).toContain('No free slot');

    fireEvent.click(screen.getByLabelText('Next week'));
    await waitFor(() => expect(new URL(ff.calls.at(-1)!.url).search).toBe('?from=2026-03-09&to=2026-03-16&limit=1000'));
    await waitFor(() => expect(screen.getAllByText('Nothing planned.')).toHaveLength(7));

    fireEvent.click(screen.getByText('Today'));
    fireEvent.click(screen.getByText('Day'));
    await screen.findByText('Call NY');
    expect(new URL(ff.calls.at(-1)!.url).search).toBe('?from=2026-03-05&to=2026-03-06&limit=1000');
    fireEvent.click(screen.getByLabelText('Previous day'));
    await waitFor(() => expect(new URL(ff.calls.at(-1)!.url).search).toBe('?from=2026-03-04&to=2026-03-05&limit=1000'));
  });

  it('shows the daemon’s error for a bad window', async () => {
    const ff = fakeFetch({
      'GET /api/calendar/agenda': () => json({ error: { code: 'bad_query', message: 'bad calendar query: the window needs from before to' } }, 400),
      'GET /api/tasks': () => json({ tasks: [], lists: ['home'] }),
    });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    render(
      <AppContext.Provider value={app}>
        <AgendaPage zone="UTC" today="2026-03-05" />
      </AppContext.Provider>,
    );
    expect((await screen.findByRole('alert')).textContent).toContain('the window needs from before to');
  });
});

describe('Contacts page', () => {
  it('searches, opens a person and shows their mail history', async () => {
    const marco = { name: 'Marco Rossi', emails: ['marco@example.org', 'm.rossi@polimi.it'], phones: ['+39 02 1234 5678'], org: 'Polimi', title: 'Researcher', nicknames: ['Marchino'], books: ['personal', 'work'], cards: 2 };
    const ff = fakeFetch({
      'GET /api/contacts': () => json({ people: [], next: 0 }),
      'GET /api/contacts/search': (req) =>
        json({
          people:
            new URL(req.url).searchParams.get('q') === 'zz'
              ? []
              : [
                  marco,
                  { name: 'Marta Bianchi', emails: ['marta@example.net'], books: ['personal'], cards: 1 },
                  { name: 'Giulia Neri', emails: ['giulia@example.com'], books: [], cards: 0, seen_in_mail: true, mail: { sent: 2, received: 5 } },
                ],
        }),
      'GET /api/contacts/resolve': () =>
        json({
          query: 'Marco Rossi',
          status: 'ambiguous',
          note: '',
          candidates: [
            { name: 'Marco Verdi', email: 'mverdi@example.com', score: 1, evidence: { card: false, mailed: 9, received: 1, matched: 'name' } },
            { name: 'Marco Rossi', email: 'm.rossi@polimi.it', score: 2, evidence: { card: true, mailed: 4, received: 7, last_contact: new Date(Date.now() - 3 * 86400_000).toISOString(), matched: 'full name' } },
          ],
        }),
    });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    render(
      <AppContext.Provider value={app}>
        <ContactsPage />
      </AppContext.Provider>,
    );
    fireEvent.input(screen.getByLabelText('Search contacts'), { target: { value: 'mar' } });
    fireEvent.click(screen.getByText('Search'));
    fireEvent.click(await screen.findByText('Marco Rossi'));
    const card = screen.getByRole('article', { name: 'Contact Marco Rossi' });
    expect(card.textContent).toContain('Researcher, Polimi');
    expect(card.textContent).toContain('personal, work (2 cards merged)');
    expect(card.textContent).toContain('Marchino');
    expect(screen.getByText('m.rossi@polimi.it').getAttribute('href')).toBe('mailto:m.rossi@polimi.it');
    expect(screen.getByText('+39 02 1234 5678').getAttribute('href')).toBe('tel:+390212345678');
    fireEvent.click(screen.getByText('Show mail history'));
    // The candidate with one of this person's addresses, not the other Marco.
    await screen.findByText(/4 sent to, 7 received from; last 3 d ago/);
    expect(new URL(ff.calls.at(-1)!.url).searchParams.get('name')).toBe('Marco Rossi');

    // A correspondent known only from mail: marked, counts from the search.
    const calls = ff.calls.length;
    fireEvent.click(screen.getByText('Giulia Neri'));
    const giulia = screen.getByRole('article', { name: 'Contact Giulia Neri' });
    expect(giulia.textContent).toContain('none: seen in mail only');
    expect(giulia.textContent).toContain('2 sent to, 5 received from');
    expect(screen.getAllByText('seen in mail')).toHaveLength(1);
    expect(ff.calls.length).toBe(calls);

    fireEvent.input(screen.getByLabelText('Search contacts'), { target: { value: 'zz' } });
    fireEvent.click(screen.getByText('Search'));
    await screen.findByText('Nobody matches “zz”.');
    expect(screen.queryByRole('article')).toBeNull();
  });

  it('shows a bad query as an error and lists everyone for blank input', async () => {
    const ff = fakeFetch({
      'GET /api/contacts': () => json({ people: [], next: 0 }),
      'GET /api/contacts/search': () => json({ error: { code: 'bad_query', message: 'bad contacts query: give a name, an address or an organisation' } }, 400),
    });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    render(
      <AppContext.Provider value={app}>
        <ContactsPage />
      </AppContext.Provider>,
    );
    await screen.findByText(/No contacts yet/);
    fireEvent.click(screen.getByText('Search'));
    await tick();
    expect(ff.calls.filter((c) => new URL(c.url).pathname === '/api/contacts/search')).toHaveLength(0);
    fireEvent.input(screen.getByLabelText('Search contacts'), { target: { value: '"' } });
    fireEvent.click(screen.getByText('Search'));
    expect((await screen.findByRole('alert')).textContent).toContain('give a name, an address or an organisation');
  });
});

describe('Contacts browsing', () => {
  it('lists everyone by name without a search, page by page', async () => {
    const ff = fakeFetch({
      'GET /api/contacts': (req) =>
        new URL(req.url).searchParams.get('offset') === '50'
          ? json({ people: [{ name: 'Zoe Last', emails: ['z@example.org'], books: ['home'], cards: 1 }], next: 0 })
          : json({ people: [{ name: 'Anna First', emails: ['a@example.org'], books: ['home'], cards: 1 }], next: 50 }),
    });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    render(
      <AppContext.Provider value={app}>
        <ContactsPage />
      </AppContext.Provider>,
    );
    await screen.findByText('Anna First');
    fireEvent.click(screen.getByText('More'));
    await screen.findByText('Zoe Last');
    expect(screen.getByText('Anna First')).toBeTruthy();
    expect(screen.queryByText('More')).toBeNull();
  });
});

describe('Agenda empty state', () => {
  it('points at Setup and hestia cal import when no calendar exists', async () => {
    const ff = fakeFetch({
      'GET /api/calendar/agenda': () => json({ instances: [] }),
      'GET /api/calendar/calendars': () => json({ calendars: [] }),
    });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    render(
      <AppContext.Provider value={app}>
        <AgendaPage zone="UTC" today="2026-03-05" />
      </AppContext.Provider>,
    );
    const note = await screen.findByRole('note', { name: 'No calendars' });
    expect(note.querySelector('a')?.getAttribute('href')).toBe('/setup');
    expect(note.textContent).toContain('hestia cal import');
  });

  it('says nothing when calendars exist', async () => {
    const ff = fakeFetch({
      'GET /api/calendar/agenda': () => json({ instances: [] }),
      'GET /api/calendar/calendars': () => json({ calendars: [{ name: 'home' }] }),
    });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    render(
      <AppContext.Provider value={app}>
        <AgendaPage zone="UTC" today="2026-03-05" />
      </AppContext.Provider>,
    );
    await waitFor(() => expect(ff.calls.some((c) => c.url.includes('/calendars'))).toBe(true));
    await screen.findAllByText('Nothing planned.');
    expect(screen.queryByRole('note', { name: 'No calendars' })).toBeNull();
  });
});
