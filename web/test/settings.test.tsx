import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import { AppContext } from '../src/context';
import { budgetChanges, mailEditChange, mailForm, splitList, useLocalChanges, type SettingsView } from '../src/lib/settings';
import { SettingsPage } from '../src/pages/Settings';
import { parseRoute } from '../src/router';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

const view: SettingsView = {
  file: '/home/me/.config/hestia/config.toml',
  file_exists: false,
  model_ready: false,
  llm: { base_url: '', model: '', api_key_set: false },
  providers: [],
  tiers: {},
  tier_names: ['tier-1', 'tier-5', 'local-embed'],
  agent_tier: 'tier-5',
  file_roots: [],
  file_roots_default: '~ (your home folder)',
  auto_approve: 'low',
  budget: { daily_cost_usd: 0, monthly_cost_usd: 0, daily_tokens: 0, monthly_tokens: 0, warn_percent: 80 },
  mail_accounts: [],
  env_overrides: {},
  pending_restart: [],
};

function setup(patch: (body: any) => Response, initial: SettingsView = view) {
  const ff = fakeFetch({
    'GET /api/settings': () => json(initial),
    'PATCH /api/settings': async (r) => patch(await r.json()),
    'GET /api/settings/local-models': () => json({ found: [{ name: 'ollama', product: 'Ollama', base_url: 'http://127.0.0.1:11434/v1', models: ['qwen3:4b'] }], looked_at: [] }),
    'GET /api/policy/rules': () => json({ rules: [] }),
    'POST /api/policy/rules': () => json({ id: 'r1' }),
    'POST /api/policy/test': () => json({ decision: 'gate', source: 'threshold', reason: 'risk medium is above the auto-approve threshold low', risk: 'medium' }),
    'POST /api/settings/test-provider': () => json({ ok: false, error: 'cannot connect to http://127.0.0.1:9/v1: connection refused', models: [] }),
  });
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  render(
    <AppContext.Provider value={app}>
      <SettingsPage />
    </AppContext.Provider>,
  );
  return { app, calls: ff.calls };
}

describe('settings helpers', () => {
  it('splits lists, builds one-click local changes and checks budget numbers', () => {
    expect(splitList(' ~/a,\n~/b ,, ')).toEqual(['~/a', '~/b']);
    expect(useLocalChanges({ name: 'ollama', product: 'Ollama', base_url: 'http://127.0.0.1:11434/v1' }, 'qwen3:4b', 'tier-5')).toEqual([
      { key: 'llm.providers.ollama', value: { kind: 'openai', base_url: 'http://127.0.0.1:11434/v1' } },
      { key: 'llm.tiers.tier-5', value: ['ollama/qwen3:4b'] },
    ]);
    expect(budgetChanges({ daily_cost_usd: '2', monthly_cost_usd: '', daily_tokens: '', monthly_tokens: '', warn_percent: '80' }).changes[0]).toEqual({ key: 'budget.daily_cost_usd', value: 2 });
    expect(budgetChanges({ daily_cost_usd: 'two', monthly_cost_usd: '', daily_tokens: '', monthly_tokens: '', warn_percent: '' }).error).toMatch(/“two” is not a number/);
    expect(parseRoute('/settings')).toEqual({ name: 'settings' });
  });
});

describe('SettingsPage', () => {
  it('says no model is configured and uses a detected local server in one click', async () => {
    const { calls } = setup(() => json({ settings: { ...view, model_ready: true, pending_restart: ['llm.tiers.tier-5'] }, applied_live: [] }));
    await screen.findByText('No model is configured yet.');
    fireEvent.click(await screen.findByRole('button', { name: 'Use qwen3:4b' }));
    await screen.findByText(/restart Hestia to apply them/);
    const patch = calls.find((c) => c.method === 'PATCH')!;
    expect((await patch.clone().json()).changes).toEqual([
      { key: 'llm.providers.ollama', value: { kind: 'openai', base_url: 'http://127.0.0.1:11434/v1' } },
      { key: 'llm.tiers.tier-5', value: ['ollama/qwen3:4b'] },
    ]);
    expect(screen.queryByText('No model is configured yet.')).toBeNull();
  });

  it('shows the daemon’s validation error where the user saved', async () => {
    setup(() => json({ error: { code: 'invalid_config', message: 'invalid value "-5" for budget.daily_cost_usd: a dollar amount from 0 (no cap) to 1000000' } }, 400));
    fireEvent.input(await screen.findByLabelText('Daily cost (USD)'), { target: { value: '-5' } });
    const section = screen.getByRole('region', { name: 'Budgets' });
    fireEvent.click(section.querySelector('.btn.primary')!);
    await waitFor(() => expect(section.textContent).toContain('invalid value "-5" for budget.daily_cost_usd'));
  });

  it('tests a connection, adds a rule and dry-runs a call', async () => {
    const { calls } = setup(() => json({ settings: view, applied_live: [] }));
    fireEvent.input((await screen.findAllByLabelText('Base URL'))[0], { target: { value: 'http://127.0.0.1:9/v1' } });
    fireEvent.click(screen.getAllByRole('button', { name: 'Test connection' })[0]);
    await screen.findByText(/connection refused/);
    fireEvent.input(screen.getByPlaceholderText('write_file or mail_*'), { target: { value: 'write_file' } });
    fireEvent.input(screen.getByPlaceholderText('/home/me/notes'), { target: { value: '/home/me/notes' } });
    fireEvent.click(screen.getByRole('button', { name: 'Add rule' }));
    await waitFor(() => expect(calls.some((c) => c.method === 'POST' && c.url.endsWith('/api/policy/rules'))).toBe(true));
    const rule = await calls.find((c) => c.method === 'POST' && c.url.endsWith('/api/policy/rules'))!.clone().json();
    expect(rule).toEqual({ tool: 'write_file', pattern: '', path_scope: '/home/me/notes', decision: 'allow' });
    fireEvent.click(screen.getByRole('button', { name: 'Try it' }));
    await screen.findByText(/risk medium is above the auto-approve threshold low/);
    expect(screen.getByText('Asks you')).toBeTruthy();
  });
});

describe('no model configured', () => {
  it('the chat shows how to configure one and does not send', async () => {
    const ff = fakeFetch({ 'GET /api/settings': () => json({ ...view, model_ready: false }) });
    const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
    await app.checkModel();
    const { ChatPage } = await import('../src/pages/Chat');
    render(
      <AppContext.Provider value={app}>
        <ChatPage />
      </AppContext.Provider>,
    );
    expect(screen.getByText(/No model is configured yet/)).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Settings' }).getAttribute('href')).toBe('/settings');
    expect(screen.getAllByText('HESTIA_LLM_BASE_URL').length).toBeGreaterThan(0);
    const box = screen.getByLabelText('Message');
    fireEvent.input(box, { target: { value: 'hello' } });
    expect((screen.getByLabelText('Send') as HTMLButtonElement).disabled).toBe(true);
    fireEvent.keyDown(box, { key: 'Enter' });
    expect(ff.calls.some((c) => c.method === 'POST')).toBe(false);
  });
});

describe('mail accounts edited in place', () => {
  const work = { name: 'work', address: 'me@work.example', username: 'me', password_env: 'WORK_PW', imap_host: 'imap.work.example', imap_port: 993, imap_security: 'tls' };
  it('sends only the changed fields, an emptied one as ""', () => {
    const f = mailForm(work);
    expect(mailEditChange(work, f)).toBeNull();
    expect(mailEditChange(work, { ...f, imap_port: ' 1993 ', username: '' })).toEqual({ key: 'mail.accounts', edit: 'work', value: { imap_port: 1993, username: '' } });
    // A port that is not a number goes as typed, for the daemon to name it.
    expect(mailEditChange(work, { ...f, imap_port: '99x' })!.value).toEqual({ imap_port: '99x' });
  });

  it('edits from the list and shows the daemon’s error naming the field', async () => {
    let n = 0;
    const { calls } = setup(() =>
      ++n === 1
        ? json({ error: { code: 'invalid_config', message: 'invalid value "abc" for mail.accounts[0].imap_port: a port from 1 to 65535' } }, 400)
        : json({ settings: { ...view, mail_accounts: [{ ...work, imap_port: 1993 }] }, applied_live: [] }),
      { ...view, mail_accounts: [work] },
    );
    fireEvent.click(await screen.findByRole('button', { name: 'Edit mail account work' }));
    const form = screen.getByRole('form', { name: 'Edit mail account work' });
    const port = within(form).getByLabelText('IMAP port') as HTMLInputElement;
    expect(port.value).toBe('993');
    fireEvent.input(port, { target: { value: 'abc' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(form.textContent).toContain('mail.accounts[0].imap_port'));
    fireEvent.input(port, { target: { value: '1993' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(screen.queryByRole('form', { name: 'Edit mail account work' })).toBeNull());
    const bodies = await Promise.all(calls.filter((c) => c.method === 'PATCH').map((c) => c.clone().json()));
    expect(bodies.map((b) => b.changes)).toEqual([
      [{ key: 'mail.accounts', edit: 'work', value: { imap_port: 'abc' } }],
      [{ key: 'mail.accounts', edit: 'work', value: { imap_port: 1993 } }],
    ]);
    expect(await screen.findByText(/IMAP imap.work.example:1993/)).toBeTruthy();
  });

  it('says which settings apply at once and which need a restart', async () => {
    setup(() => json({ settings: view, applied_live: [] }));
    const note = await screen.findByText(/Applied at once when saved/);
    expect(note.textContent).toContain('Need a restart: file roots, mail accounts');
  });
});
