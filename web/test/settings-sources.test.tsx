import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import { AppContext } from '../src/context';
import type { SettingsView, SourcesView } from '../src/lib/settings';
import { Sources } from '../src/pages/settings/Sources';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

const base: SettingsView = {
  file: '/home/me/.config/hestia/config.toml',
  file_exists: true,
  model_ready: true,
  llm: { base_url: '', model: '', api_key_set: false },
  providers: [],
  tiers: {},
  tier_names: [],
  agent_tier: 'tier-5',
  file_roots: [],
  file_roots_default: '~',
  auto_approve: 'low',
  budget: { daily_cost_usd: 0, monthly_cost_usd: 0, daily_tokens: 0, monthly_tokens: 0, warn_percent: 80 },
  mail_accounts: [],
  env_overrides: {},
  pending_restart: [],
};

const full: SourcesView = {
  calendars: [{ name: 'personal', path: '/home/me/.calendars/personal', read_only: false }],
  caldav: [{ name: 'fastmail', url: 'https://caldav.example.org/dav/', username: 'me', read_only: false, password_set: true, password_file_set: true }],
  contacts: [{ name: 'book', path: '/home/me/.contacts', read_only: true }],
  carddav: [{ name: 'work', url: 'https://carddav.example.org/', read_only: true, password_set: false, password_file_set: false }],
  telegram: { enabled: true, token_file_set: true, owner_id: 4242, contacts: ['77:chat+read'] },
  channels: [
    { name: 'slack', enabled: true, owners: ['U0OWNER'], contacts: ['U0PAL:chat'] },
    { name: 'discord', enabled: false, owners: [], contacts: [] },
  ],
  accounts: [
    { name: 'personal', provider: 'google', state: 'ok', expiry: '2026-12-06T12:00:00Z' },
    { name: 'work', provider: 'microsoft', state: 'reconnect needed', detail: 'the sign-in was revoked (invalid_grant)' },
  ],
  mcp_servers: [
    { name: 'files', command: 'mcp-files', disabled: false },
    { name: 'remote', url: 'https://mcp.example.org/mcp', disabled: true },
  ],
  mail_sources: [
    { path: '/mail/a', account: 'local' },
    { path: '/mail/c', from_config: true },
  ],
};

const region = (name: string) => screen.getByRole('region', { name });

/** Renders the sections with a daemon answering the connection tests. */
function show(view: SettingsView, routes: Parameters<typeof fakeFetch>[0] = {}) {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  render(
    <AppContext.Provider value={app}>
      <Sources view={view} />
    </AppContext.Provider>,
  );
  return ff.calls;
}

describe('Settings sources sections', () => {
  it('lists what is configured, with no secret and an Edit in setup link where setup edits it', () => {
    show({ ...base, sources: full });
    const cal = region('Calendars');
    expect(within(cal).getByRole('list', { name: 'Calendar folders' }).textContent).toContain('/home/me/.calendars/personal');
    expect(within(cal).getByRole('list', { name: 'CalDAV accounts' }).textContent).toContain('password file set');
    expect(within(cal).getByRole('link', { name: 'Edit in setup' }).getAttribute('href')).toBe('/setup');
    const con = region('Contacts');
    expect(within(con).getByRole('list', { name: 'Contact folders' }).textContent).toContain('read-only');
    expect(within(con).getByRole('list', { name: 'CardDAV accounts' }).textContent).toContain('no password set');
    const tg = region('Telegram');
    expect(tg.textContent).toContain('4242');
    expect(tg.textContent).toContain('77:chat+read');
    expect(tg.textContent).toContain('token file set');
    expect(within(tg).getByRole('link', { name: 'Edit in setup' })).toBeTruthy();
    const ch = region('Channels');
    expect(within(ch).getByRole('list', { name: 'Channels' }).textContent).toContain('Slack');
    expect(ch.textContent).toContain('U0OWNER');
    expect(ch.textContent).toContain('trusted: U0PAL:chat');
    expect(ch.textContent).not.toContain('Discord');
    const acc = region('Accounts');
    expect(within(acc).getByRole('list', { name: 'Accounts' }).textContent).toContain('personal');
    expect(acc.textContent).toContain('reconnect needed');
    expect(acc.textContent).toContain('hestia accounts connect work');
    expect(acc.textContent).not.toContain('hestia accounts connect personal');
    const mcp = region('MCP servers');
    expect(mcp.textContent).toContain('mcp-files');
    expect(mcp.textContent).toContain('https://mcp.example.org/mcp');
    expect(mcp.textContent).toContain('disabled');
    expect(within(mcp).queryByRole('link', { name: 'Edit in setup' })).toBeNull();
    const mail = region('Mail folders');
    expect(within(mail).getByRole('list', { name: 'Mail folders' }).textContent).toContain('/mail/a');
    expect(mail.textContent).toContain('config.toml');
    expect(mail.textContent).toContain('hestia mail sources remove PATH');
  });

  it('says what to do when nothing is configured (and when an older daemon sends no sources)', () => {
    show(base);
    expect(region('Calendars').textContent).toContain('No calendars. Add a calendar folder or a CalDAV account in setup');
    expect(region('Contacts').textContent).toContain('No address books.');
    expect(region('Telegram').textContent).toContain('Telegram is off. Set a bot token in setup');
    expect(region('Accounts').textContent).toContain('No accounts. Add an [[oauth.accounts]] entry');
    expect(region('Channels').textContent).toContain('No channels are on. Add a [channels.slack]');
    expect(region('MCP servers').textContent).toContain('No MCP servers. Add a [mcp.servers.NAME] table');
    expect(region('Mail folders').textContent).toContain('No mail folders. Import one from a terminal with hestia mail import PATH');
    expect(screen.getAllByRole('link', { name: 'Edit in setup' })).toHaveLength(3);
    expect(screen.queryByRole('button', { name: /Test connection/ })).toBeNull();
  });

  it('shows why the mail folders could not be listed', () => {
    show({ ...base, sources: { ...full, mail_sources: [], mail_sources_error: 'mail store closed' } });
    expect(within(region('Mail folders')).getByRole('alert').textContent).toContain('mail store closed');
  });

  it('tests the connection of each channel that is on and says what the daemon found', async () => {
    const calls = show(
      { ...base, sources: full },
      {
        'POST /api/settings/channels/slack/test': () => json({ ok: true, who: '@hestia (U0BOT) in Acme, Socket Mode' }),
        'POST /api/settings/channels/telegram/test': () =>
          json({ ok: false, error: 'telegram getMe: 401 Unauthorized: the bot token was refused; check telegram.token (or token_file)' }),
      },
    );
    const ch = region('Channels');
    // Only Slack is on: Discord gets no button.
    expect(within(ch).getAllByRole('button', { name: /Test connection/ })).toHaveLength(1);
    const status = within(ch).getByRole('status');
    expect(status.getAttribute('aria-live')).toBe('polite');
    expect(status.textContent).toBe('');
    fireEvent.click(within(ch).getByRole('button', { name: 'Test connection to Slack' }));
    await waitFor(() => expect(status.textContent).toBe('Connected as @hestia (U0BOT) in Acme, Socket Mode'));
    expect(status.closest('.channel-test')?.className).toContain('channel-test-ok');
    const req = calls.find((r) => r.url.endsWith('/api/settings/channels/slack/test'));
    expect(req?.method).toBe('POST');
    expect(req?.headers.get('Authorization')).toBe('Bearer tok');

    const tg = region('Telegram');
    fireEvent.click(within(tg).getByRole('button', { name: 'Test connection to Telegram' }));
    const tgStatus = within(tg).getByRole('status');
    await waitFor(() => expect(tgStatus.textContent).toContain('Failed: telegram getMe: 401 Unauthorized'));
    expect(tgStatus.textContent).toContain('check telegram.token');
    expect(tgStatus.closest('.channel-test')?.className).toContain('channel-test-fail');
  });

  it('shows the daemon refusing the test (a device without the admin scope) and a daemon out of reach', async () => {
    let reachable = true;
    show(
      { ...base, sources: full },
      {
        'POST /api/settings/channels/slack/test': () => {
          if (!reachable) throw new TypeError('Failed to fetch');
          return json({ error: { code: 'forbidden', message: 'device "phone" lacks the admin scope to change settings' } }, 403);
        },
      },
    );
    const ch = region('Channels');
    const button = within(ch).getByRole('button', { name: 'Test connection to Slack' });
    const status = within(ch).getByRole('status');
    fireEvent.click(button);
    await waitFor(() => expect(status.textContent).toBe('Failed: device "phone" lacks the admin scope to change settings'));
    reachable = false;
    fireEvent.click(button);
    await waitFor(() => expect(status.textContent).toBe('Failed: Cannot reach the Hestia daemon. Is it running?'));
    expect((button as HTMLButtonElement).disabled).toBe(false);
  });
});
