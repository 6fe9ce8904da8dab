// Browser tests of the Settings page: screenshots against the fixture
// daemon (settings routes answered here with page.route), and the real flow
// against the test daemon: connection test on the scripted model server,
// a saved threshold landing in config.toml, a refused budget with the CLI's
// error, and a trust rule checked with the dry run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFixtures } from './fixtures.mjs';
import { assert, newPage, shot, test, viewports } from './lib.mjs';

const fxView = {
  file: '/home/sam/.config/hestia/config.toml', file_exists: true, model_ready: true,
  llm: { base_url: '', model: '', api_key_set: false },
  providers: [
    { name: 'ollama', kind: 'openai', base_url: 'http://127.0.0.1:11434/v1', api_key_set: false },
    { name: 'claude', kind: 'anthropic', base_url: '', api_key_set: true },
  ],
  tiers: { 'tier-1': ['ollama/qwen3:4b'], 'tier-5': ['claude/claude-sonnet-4-5', 'ollama/qwen3:30b'] },
  tier_names: ['tier-1', 'tier-2', 'tier-3', 'tier-4', 'tier-5', 'tier-6', 'local-embed'], agent_tier: 'tier-5',
  file_roots: ['~/notes', '~/Documents/taxes'], file_roots_default: '~ (your home folder)', auto_approve: 'low',
  budget: { daily_cost_usd: 2, monthly_cost_usd: 30, daily_tokens: 0, monthly_tokens: 0, warn_percent: 80 },
  mail_accounts: [{ name: 'personal', address: 'sam@example.org', imap_host: 'imap.example.org', imap_port: 993, smtp_host: 'smtp.example.org', smtp_port: 465 }],
  env_overrides: {}, pending_restart: [],
};
const fxRules = [{ id: 'r1', tool: 'write_file', pattern: '', path_scope: '/home/sam/notes', decision: 'allow', priority: 100, note: '' }, { id: 'r2', tool: 'mail_send', pattern: '*@example.org', path_scope: '', decision: 'gate', priority: 100, note: '' }];

async function routeSettings(page) {
  await page.route('**/api/{settings,settings/**,policy/**}', (route) => {
    const p = new URL(route.request().url()).pathname;
    const body = p === '/api/settings' ? fxView
      : p === '/api/settings/local-models' ? { found: [{ name: 'ollama', product: 'Ollama', base_url: 'http://127.0.0.1:11434/v1', models: ['qwen3:4b', 'qwen3:30b', 'bge-m3'] }], looked_at: [] }
      : p === '/api/policy/rules' ? { rules: fxRules }
      : undefined;
    if (!body) return route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":{"code":"not_found","message":"no such route"}}' });
    return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });
  });
}

export async function runSettingsShots(browser) {
  const fx = await startFixtures();
  try {
    for (const mode of [
      { name: 'desktop', viewport: viewports.desktop },
      { name: 'dark', viewport: viewports.desktop, dark: true },
      { name: 'phone', viewport: viewports.phone, mobile: true },
    ]) {
      await test(`fixtures: settings page renders (${mode.name})`, async () => {
        const { ctx, page, errors } = await newPage(browser, { ...mode, token: 'fixture-token' });
        try {
          await routeSettings(page);
          await page.goto(fx.url + '/settings');
          await page.getByRole('button', { name: 'Use qwen3:30b' }).waitFor();
          await page.getByText('*@example.org').waitFor();
          await shot(page, `${mode.name}-settings`);
          if (mode.mobile) {
            const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
            assert(!overflow, 'settings page scrolls horizontally on a phone');
          }
          assert(errors.length === 0, 'console errors: ' + errors.join('; '));
        } finally {
          await ctx.close();
        }
      });
    }
  } finally {
    await fx.close();
  }
}

export async function runSettingsFlow({ page, daemon, waitFor }) {
  await test('daemon: settings test the model connection, save to config.toml and refuse bad values with the CLI error', async () => {
    await page.goto(daemon.url + '/settings');
    const models = page.getByRole('region', { name: 'Model providers and tiers' });
    await models.getByText(/Set by the environment \(HESTIA_LLM_BASE_URL/).waitFor();
    await models.getByRole('button', { name: 'Test connection' }).first().click();
    await models.getByText(/Connected\. 1 model/).waitFor();
    assert(await models.getByText('llmtest-model').isVisible(), 'model list missing');

    const approvals = page.getByRole('region', { name: 'Approvals' });
    await approvals.getByLabel('Auto-approve threshold').selectOption('medium');
    await approvals.getByRole('button', { name: 'Save' }).click();
    // The threshold applies at once: no restart note, and the running
    // policy (the dry run) already lets a medium-risk write through.
    await page.getByText(/applied now: auto-approve threshold/).waitFor();
    // (The note may still list server.addr: the test daemon runs with --addr.)
    const note = (await page.locator('.restart-note').count()) ? await page.locator('.restart-note').textContent() : '';
    assert(!note.includes('auto_approve'), `the live threshold is listed as waiting for a restart: ${note}`);
    const token = await page.evaluate(() => localStorage.getItem('hestia.token'));
    const { file } = await (await fetch(daemon.url + '/api/settings', { headers: { Authorization: `Bearer ${token}` } })).json();
    assert(readFileSync(file, 'utf8').includes('auto_approve = "medium"'), `config.toml lacks the threshold:\n${readFileSync(file, 'utf8')}`);
    const dry = async (want) => {
      await approvals.getByLabel('Tool', { exact: true }).last().fill('write_file');
      await approvals.getByLabel('Arguments (JSON)').fill(JSON.stringify({ path: join(daemon.home, 'y.txt'), content: 'y' }));
      await approvals.getByRole('button', { name: 'Try it' }).click();
      await approvals.locator('.dry-result strong', { hasText: new RegExp(`^${want}$`) }).waitFor();
    };
    await dry('Runs');
    // Back to low (later scenarios expect writes to ask), again live.
    await approvals.getByLabel('Auto-approve threshold').selectOption('low');
    await approvals.getByRole('button', { name: 'Save' }).click();
    await dry('Asks you');
    // Folders are read once at start: saving them says a restart is needed.
    const folders = page.getByRole('region', { name: 'Folders Hestia may read and write' });
    await folders.getByLabel('Allowed folders').fill(daemon.home);
    await folders.getByRole('button', { name: 'Save' }).click();
    await page.locator('.restart-note', { hasText: 'agent.file_roots' }).waitFor();

    const budgets = page.getByRole('region', { name: 'Budgets' });
    await budgets.getByLabel('Daily cost (USD)').fill('-5');
    await budgets.getByRole('button', { name: 'Save' }).click();
    await budgets.getByText('invalid value "-5" for budget.daily_cost_usd: a dollar amount from 0 (no cap) to 1000000').waitFor();
    assert(!readFileSync(file, 'utf8').includes('daily_cost_usd'), 'a refused budget reached config.toml');
    await shot(page, 'e2e-settings');
  }, page);

  await test('daemon: a trust rule from Settings changes the dry run', async () => {
    const approvals = page.getByRole('region', { name: 'Approvals' });
    await approvals.getByPlaceholder('write_file or mail_*').fill('write_file');
    await approvals.getByPlaceholder('/home/me/notes').fill(daemon.home);
    await approvals.getByLabel('Decision').selectOption('deny');
    await approvals.getByRole('button', { name: 'Add rule' }).click();
    await approvals.locator('tr', { hasText: daemon.home }).waitFor();
    await approvals.getByLabel('Tool', { exact: true }).last().fill('write_file');
    await approvals.getByLabel('Arguments (JSON)').fill(JSON.stringify({ path: join(daemon.home, 'x.txt'), content: 'x' }));
    await approvals.getByRole('button', { name: 'Try it' }).click();
    await approvals.locator('.dry-result', { hasText: 'Blocked' }).waitFor();
    await shot(page, 'e2e-settings-rules');
    await approvals.getByLabel('Delete rule for write_file').click();
    await waitFor(async () => (await approvals.locator('tr', { hasText: daemon.home }).count()) === 0, 'the rule to be deleted');
  }, page);
}
