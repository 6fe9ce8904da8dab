import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppContext } from '../src/context';
import type { AccountAttempt, AccountStatus, SourcesView } from '../src/lib/settings';
import { Accounts } from '../src/pages/settings/Accounts';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

const sources = (accounts: SourcesView['accounts']): SourcesView => ({
  calendars: [],
  caldav: [],
  contacts: [],
  carddav: [],
  telegram: { enabled: false, token_file_set: false, owner_id: 0, contacts: [] },
  accounts,
  mcp_servers: [],
  mail_sources: [],
});

const attempt = (state: AccountAttempt['state'], error?: string): AccountAttempt => ({
  account: 'work',
  state,
  error,
  started_at: '2030-01-01T00:00:00Z',
  deadline: '2030-01-01T00:05:00Z',
  finished_at: state === 'waiting' ? undefined : '2030-01-01T00:01:00Z',
});

const status = (state: string, connect?: AccountAttempt): AccountStatus => ({ account: 'work', provider: 'custom', scopes: ['mail'], state, connect });

const AUTH = 'http://127.0.0.1:9000/authorize?client_id=hestia-test&state=abc';

/** A stand-in for the tab window.open gives. */
function fakeTab() {
  return { opener: {} as unknown, location: { href: '' }, close: vi.fn() };
}

function show(s: SourcesView, routes: Parameters<typeof fakeFetch>[0]) {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  render(
    <AppContext.Provider value={app}>
      <Accounts s={s} pollMs={5} />
    </AppContext.Provider>,
  );
  return ff.calls;
}

const section = () => screen.getByRole('region', { name: 'Accounts' });

describe('Settings accounts: connect from the web app', () => {
  let open: ReturnType<typeof vi.fn>;
  beforeEach(() => {
    open = vi.fn();
    vi.stubGlobal('open', open);
  });
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('opens the provider in a new tab cut off from the page, polls the sign-in and shows the account connected', async () => {
    const tab = fakeTab();
    open.mockReturnValue(tab);
    const polls = [status('not connected', attempt('waiting')), status('ok', attempt('waiting')), status('ok', attempt('connected'))];
    const calls = show(sources([{ name: 'work', provider: 'custom', state: 'not connected' }]), {
      'POST /api/accounts/work/connect': () => json({ auth_url: AUTH, account: status('not connected', attempt('waiting')) }),
      'GET /api/accounts/work': () => json(polls.length > 1 ? polls.shift() : polls[0]),
    });
    const sec = section();
    expect(sec.textContent).toContain('works only in a browser on the machine Hestia runs on');
    expect(sec.textContent).toContain('hestia accounts connect NAME --device');
    const st = within(sec).getByRole('status');
    expect(st.getAttribute('aria-live')).toBe('polite');
    expect(st.textContent).toBe('');
    expect(within(sec).queryByRole('button', { name: 'Disconnect work' })).toBeNull();
    fireEvent.click(within(sec).getByRole('button', { name: 'Connect work' }));
    expect(open).toHaveBeenCalledWith('', '_blank');
    await waitFor(() => expect(tab.location.href).toBe(AUTH));
    expect(tab.opener).toBeNull();
    await waitFor(() => expect(st.textContent).toContain('Waiting for you to sign in to work in the new tab'));
    expect(within(sec).queryByRole('button', { name: 'Connect work' })).toBeNull();
    expect((within(sec).getByRole('button', { name: 'Open the sign-in page for work again' }) as HTMLButtonElement).disabled).toBe(false);
    expect(within(sec).getByRole('link', { name: 'Open the sign-in page' }).getAttribute('href')).toBe(AUTH);
    await waitFor(() => expect(st.textContent).toBe('Connected work.'));
    expect(st.closest('.account-connect')?.className).toContain('account-connect-ok');
    expect(within(sec).getByText('ok', { selector: '.tag' })).toBeTruthy();
    expect(within(sec).getByRole('button', { name: 'Reconnect work' })).toBeTruthy();
    expect(within(sec).getByRole('button', { name: 'Disconnect work' })).toBeTruthy();
    expect(sec.textContent).not.toContain('hestia accounts connect work');
    const post = calls.find((r) => r.method === 'POST');
    expect(post?.url).toMatch(/\/api\/accounts\/work\/connect$/);
    expect(post?.headers.get('Authorization')).toBe('Bearer tok');
    // Polling stopped once the sign-in ended.
    const n = calls.length;
    await new Promise((r) => setTimeout(r, 40));
    expect(calls.length).toBe(n);
  });

  it("shows the provider's refusal and lets the user try again", async () => {
    open.mockReturnValue(fakeTab());
    show(sources([{ name: 'work', provider: 'custom', state: 'not connected' }]), {
      'POST /api/accounts/work/connect': () => json({ auth_url: AUTH, account: status('not connected', attempt('waiting')) }),
      'GET /api/accounts/work': () =>
        json(status('not connected', attempt('failed', 'connecting work: the sign-in was denied: the provider refused: access_denied (the user said no)'))),
    });
    const sec = section();
    fireEvent.click(within(sec).getByRole('button', { name: 'Connect work' }));
    const st = within(sec).getByRole('status');
    await waitFor(() => expect(st.textContent).toBe('Sign-in failed: connecting work: the sign-in was denied: the provider refused: access_denied (the user said no)'));
    expect(st.closest('.account-connect')?.className).toContain('account-connect-fail');
    expect((within(sec).getByRole('button', { name: 'Connect work' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it('gives a link to open by hand when the new tab was blocked', async () => {
    open.mockReturnValue(null);
    show(sources([{ name: 'work', provider: 'custom', state: 'reconnect needed', detail: 'invalid_grant' }]), {
      'POST /api/accounts/work/connect': () => json({ auth_url: AUTH, account: status('reconnect needed', attempt('waiting')) }),
      'GET /api/accounts/work': () => json(status('reconnect needed', attempt('waiting'))),
    });
    const sec = section();
    fireEvent.click(within(sec).getByRole('button', { name: 'Reconnect work' }));
    const link = await within(sec).findByRole('link', { name: 'Open the sign-in page' });
    expect(link.getAttribute('href')).toBe(AUTH);
    expect(link.getAttribute('rel')).toContain('noopener');
    expect(link.getAttribute('target')).toBe('_blank');
  });

  it('closes the tab and says why when the daemon refuses to start (a device without admin)', async () => {
    const tab = fakeTab();
    open.mockReturnValue(tab);
    show(sources([{ name: 'work', provider: 'custom', state: 'not connected' }]), {
      'POST /api/accounts/work/connect': () =>
        json({ error: { code: 'forbidden', message: 'device "phone" lacks the admin scope to connect an account' } }, 403),
    });
    const sec = section();
    fireEvent.click(within(sec).getByRole('button', { name: 'Connect work' }));
    const st = within(sec).getByRole('status');
    await waitFor(() => expect(st.textContent).toBe('Could not start the sign-in: device "phone" lacks the admin scope to connect an account'));
    expect(tab.close).toHaveBeenCalled();
    expect(tab.location.href).toBe('');
  });

  it('picks up a sign-in still waiting after a reload, and keeps polling through a daemon out of reach', async () => {
    let reachable = false;
    show(sources([{ name: 'work', provider: 'custom', state: 'not connected', connect: attempt('waiting') }]), {
      'GET /api/accounts/work': () => {
        if (!reachable) throw new TypeError('Failed to fetch');
        return json(status('ok', attempt('connected')));
      },
    });
    const st = within(section()).getByRole('status');
    await waitFor(() => expect(st.textContent).toContain('Cannot reach the Hestia daemon'));
    expect(st.textContent).toContain('trying again');
    // A page reloaded mid-sign-in has no address to offer.
    expect(within(section()).queryByRole('link', { name: 'Open the sign-in page' })).toBeNull();
    expect(within(section()).getByRole('button', { name: 'Cancel the sign-in of work' })).toBeTruthy();
    reachable = true;
    await waitFor(() => expect(st.textContent).toBe('Connected work.'));
  });

  it('opens the page of a sign-in still waiting again (the daemon answers the same address)', async () => {
    const tab = fakeTab();
    open.mockReturnValue(tab);
    const calls = show(sources([{ name: 'work', provider: 'custom', state: 'not connected', connect: attempt('waiting') }]), {
      'POST /api/accounts/work/connect': () => json({ auth_url: AUTH, account: status('not connected', attempt('waiting')) }),
      'GET /api/accounts/work': () => json(status('not connected', attempt('waiting'))),
    });
    fireEvent.click(within(section()).getByRole('button', { name: 'Open the sign-in page for work again' }));
    await waitFor(() => expect(tab.location.href).toBe(AUTH));
    expect(calls.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('disconnects after a confirmation and says what the provider did', async () => {
    const ask = vi.fn(() => false);
    vi.stubGlobal('confirm', ask);
    const calls = show(sources([{ name: 'work', provider: 'microsoft', state: 'ok' }]), {
      'POST /api/accounts/work/disconnect': () =>
        json({ revoked: false, cancelled: false, manage_url: 'https://myaccount.microsoft.com', account: status('not connected') }),
    });
    const sec = section();
    fireEvent.click(within(sec).getByRole('button', { name: 'Disconnect work' }));
    expect(ask).toHaveBeenCalled();
    expect(calls).toHaveLength(0);
    ask.mockReturnValue(true);
    fireEvent.click(within(sec).getByRole('button', { name: 'Disconnect work' }));
    const st = within(sec).getByRole('status');
    await waitFor(() => expect(st.textContent).toContain('Disconnected: the tokens are deleted.'));
    expect(within(sec).getByRole('link', { name: 'https://myaccount.microsoft.com' })).toBeTruthy();
    expect(within(sec).getByText('not connected', { selector: '.tag' })).toBeTruthy();
    expect(within(sec).getByRole('button', { name: 'Connect work' })).toBeTruthy();
    expect(within(sec).queryByRole('button', { name: 'Disconnect work' })).toBeNull();
    expect(calls[0].method).toBe('POST');
  });

  it('warns when the page is not open on a loopback address', () => {
    const loc = window.location;
    vi.stubGlobal('location', { ...loc, hostname: 'hestia.lan' });
    show(sources([{ name: 'work', provider: 'custom', state: 'not connected' }]), {});
    expect(within(section()).getByRole('note').textContent).toContain('This page is not open at 127.0.0.1 or localhost');
  });
});
