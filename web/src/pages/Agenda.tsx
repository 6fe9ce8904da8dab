// The Agenda page: a day or week of the user's calendars from the local
// index (recurring events expanded by the daemon), laid out in the viewer's
// zone with the event's own time beside it when its zone differs, and a
// free-slot finder over the days shown. Read-only: creating and changing
// events goes through the assistant and its approvals. Event text comes
// from other people's invitations, so it is only ever rendered as text.
// The Tasks section (AgendaTasks.tsx) lists open tasks and completes one
// when its box is ticked.
import { useEffect, useState } from 'preact/hooks';
import { useApp } from '../context';
import {
  addDays,
  dateIn,
  dayLabel,
  layoutDays,
  localZone,
  repeatText,
  timeIn,
  weekStart,
  type Agenda,
  type FreeResult,
} from '../lib/calendar';
import { TasksSection } from './AgendaTasks';
import { Failure, PageHeader } from './common';
import '../styles/calendar.css';

type View = 'day' | 'week';

/** A component of a calendar file that was skipped or repaired on import. */
interface FileWarning {
  calendar?: string;
  file: string;
  component: string;
  reason: string;
  skipped: boolean;
}

/** The agenda API also names the components its files lost or had repaired. */
type AgendaReply = Agenda & { warnings?: FileWarning[]; warnings_total?: number };

export function AgendaPage({ zone = localZone(), today }: { zone?: string; today?: string }) {
  const app = useApp();
  const todayDay = today ?? dateIn(new Date(), zone);
  const [view, setView] = useState<View>('week');
  const [anchor, setAnchor] = useState(todayDay);
  const [ag, setAg] = useState<AgendaReply | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [minutes, setMinutes] = useState(30);
  const [free, setFree] = useState<FreeResult | null>(null);
  const [freeErr, setFreeErr] = useState<unknown>(null);
  const [open, setOpen] = useState<string | null>(null);
  // Whether any calendar is set up: with none, an empty week says how to add one.
  const [noCalendars, setNoCalendars] = useState(false);
  useEffect(() => {
    app.client.request<{ calendars?: unknown[] }>('GET', '/api/calendar/calendars').then(
      (r) => setNoCalendars((r.calendars ?? []).length === 0),
      () => setNoCalendars(false),
    );
  }, []);

  const from = view === 'week' ? weekStart(anchor) : anchor;
  const days = view === 'week' ? 7 : 1;
  const to = addDays(from, days);

  const load = () => {
    setErr(null);
    setAg(null);
    setFree(null);
    setFreeErr(null);
    app.client
      .request<AgendaReply>('GET', `/api/calendar/agenda?from=${from}&to=${to}&limit=1000`)
      .then(setAg, setErr);
  };
  useEffect(load, [from, to]);

  const findFree = () => {
    setFreeErr(null);
    app.client.request<FreeResult>('GET', `/api/calendar/free?from=${from}&to=${to}&min=${minutes}`).then(setFree, setFreeErr);
  };
  const step = (n: number) => setAnchor(addDays(anchor, n * days));
  const laid = ag ? layoutDays(ag.instances ?? [], from, days, zone) : [];
  const title = view === 'week' ? `Week of ${dayLabel(from)}` : dayLabel(from);
  const freeByDay = new Map<string, string[]>();
  for (const iv of free?.free ?? []) {
    const s = new Date(iv.start);
    const e = new Date(iv.end);
    const d = dateIn(s, zone);
    freeByDay.set(d, [...(freeByDay.get(d) ?? []), `${timeIn(s, zone)}–${timeIn(e, zone)}`]);
  }

  return (
    <div class="page cal-page">
      <PageHeader title="Agenda" subtitle={`Your calendars, times in ${zone}`}>
        <div class="cal-tabs" role="group" aria-label="View">
          <button class={'btn small' + (view === 'day' ? ' primary' : '')} aria-pressed={view === 'day'} onClick={() => setView('day')}>
            Day
          </button>
          <button class={'btn small' + (view === 'week' ? ' primary' : '')} aria-pressed={view === 'week'} onClick={() => setView('week')}>
            Week
          </button>
        </div>
        <button class="btn small" onClick={() => step(-1)} aria-label={view === 'week' ? 'Previous week' : 'Previous day'}>
          ‹
        </button>
        <button class="btn small" onClick={() => setAnchor(todayDay)}>
          Today
        </button>
        <button class="btn small" onClick={() => step(1)} aria-label={view === 'week' ? 'Next week' : 'Next day'}>
          ›
        </button>
      </PageHeader>
      <h2 class="cal-title">{title}</h2>
      {noCalendars && (
        <div class="callout" role="note" aria-label="No calendars">
          <strong>No calendar yet.</strong> Add a CalDAV account or a folder of .ics files in{' '}
          <a href="/setup">Setup</a> (or Settings), or import one from a terminal:{' '}
          <code>hestia cal import PATH</code> (a folder, an .ics file or a vdir).
        </div>
      )}
      <TasksSection zone={zone} today={todayDay} />
      {err ? (
        <Failure err={err} retry={load} />
      ) : !ag ? (
        <div class="skeleton tall" />
      ) : (
        <>
          {(ag.warnings?.length ?? 0) > 0 && (
            <details class="callout" role="status">
              <summary>
                {ag.warnings_total ?? ag.warnings!.length} calendar entries were skipped or repaired on import
              </summary>
              <ul class="small">
                {ag.warnings!.map((w, i) => (
                  <li key={i}>
                    {w.calendar ? `${w.calendar}/` : ''}
                    {w.file}: {w.skipped ? 'skipped' : 'repaired'} {w.component} — {w.reason}
                  </li>
                ))}
              </ul>
            </details>
          )}
          {ag.truncated && (
            <p class="callout" role="status">
              Only part of this range is shown: it holds more events than one page.
            </p>
          )}
          <div class="cal-days">
            {laid.map(({ day, items }) => (
              <section class={'cal-day' + (day === todayDay ? ' today' : '')} key={day} aria-label={dayLabel(day)}>
                <h3>
                  {dayLabel(day)}
                  {day === todayDay && <span class="cal-today">today</span>}
                </h3>
                {items.length === 0 && <p class="muted small">Nothing planned.</p>}
                <ul class="cal-items">
                  {items.map((it) => {
                    const key = `${it.inst.calendar}|${it.inst.uid}|${it.inst.start}`;
                    const cancelled = it.inst.status?.toUpperCase() === 'CANCELLED';
                    return (
                      <li key={key} class={'cal-item' + (it.allDay ? ' all-day' : '') + (cancelled ? ' cancelled' : '')}>
                        <button class="cal-item-head" onClick={() => setOpen(open === key ? null : key)} aria-expanded={open === key}>
                          <span class="cal-time">{it.time}</span>
                          <span class="cal-summary">{it.inst.summary || '(no title)'}</span>
                          {it.own && <span class="cal-own" title="In the event's own time zone">{it.own}</span>}
                          {it.inst.recurring && <span class="cal-badge">{repeatText(it.inst.rrule)}</span>}
                          {it.inst.transp?.toUpperCase() === 'TRANSPARENT' && <span class="cal-badge">free</span>}
                          <span class="cal-cal muted">{it.inst.calendar}</span>
                        </button>
                        {open === key && (
                          <dl class="cal-detail">
                            {it.inst.location && (
                              <>
                                <dt>Where</dt>
                                <dd>{it.inst.location}</dd>
                              </>
                            )}
                            {it.inst.zone && (
                              <>
                                <dt>Time zone</dt>
                                <dd>{it.inst.zone}</dd>
                              </>
                            )}
                            {it.inst.organizer && (
                              <>
                                <dt>Organizer</dt>
                                <dd>{it.inst.organizer}</dd>
                              </>
                            )}
                            {it.inst.attendees?.length ? (
                              <>
                                <dt>Attendees</dt>
                                <dd>{it.inst.attendees.map((a) => (a.name ? `${a.name} <${a.email}>` : a.email)).join(', ')}</dd>
                              </>
                            ) : null}
                            {it.inst.description && (
                              <>
                                <dt>Notes</dt>
                                <dd class="cal-notes">{it.inst.description}</dd>
                              </>
                            )}
                            <dt>UID</dt>
                            <dd class="muted small">{it.inst.uid}</dd>
                          </dl>
                        )}
                      </li>
                    );
                  })}
                </ul>
                {free && (
                  <p class="cal-free small" aria-label={`Free on ${dayLabel(day)}`}>
                    {freeByDay.get(day)?.length ? `Free ${freeByDay.get(day)!.join(', ')}` : 'No free slot'}
                  </p>
                )}
              </section>
            ))}
          </div>
        </>
      )}
      <section class="card cal-finder" aria-label="Free time">
        <h2>Free time</h2>
        <div class="cal-finder-row">
          <label>
            At least{' '}
            <input
              type="number"
              min={5}
              max={1440}
              step={5}
              value={minutes}
              aria-label="Minimum minutes"
              onInput={(e) => setMinutes(Math.max(5, Number((e.target as HTMLInputElement).value) || 30))}
            />{' '}
            minutes, within working hours
          </label>
          <button class="btn primary small" onClick={findFree}>
            Find free time
          </button>
        </div>
        {freeErr ? <Failure err={freeErr} /> : null}
        {free && (
          <p class="muted small" role="status">
            {(free.free ?? []).length === 0
              ? `No free slot of ${minutes} minutes ${view === 'week' ? 'this week' : 'this day'}.`
              : `${(free.free ?? []).length} free slots of at least ${minutes} minutes, shown under each day.`}
            {free.truncated ? ' Some busy time may be missing (too many events).' : ''}
          </p>
        )}
      </section>
    </div>
  );
}
