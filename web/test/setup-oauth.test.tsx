import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import { AppContext } from '../src/context';
import type { SetupStatus } from '../src/lib/setup';
import { SetupPage } from '../src/pages/Setup';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

const status: SetupStatus = {
  needed: true,
  model_ready: false,
  dismissed: false,
  steps: ['model', 'mail', 'calendar'],
  mail_presets: [
    { id: 'gmail', name: 'Gmail', imap_host: 'imap.gmail.com', imap_port: 993, imap_security: 'tls', smtp_host: 'smtp.gmail.com', smtp_port: 465, smtp_security: 'tls', save_sent: false, password_help: 'Use an app password.', oauth_provider: 'google', oauth_help: 'Register a Desktop app client.' },
    { id: 'microsoft365', name: 'Microsoft 365', imap_host: 'outlook.office365.com', imap_port: 993, imap_security: 'tls', smtp_host: 'smtp.office365.com', smtp_port: 587, smtp_security: 'starttls', save_sent: false, password_help: 'Passwords are off.', oauth_provider: 'microsoft', oauth_help: 'Register an app at Entra ID.' },
    { id: 'fastmail', name: 'Fastmail', imap_host: 'imap.fastmail.com', imap_port: 993, imap_security: 'tls', smtp_host: 'smtp.fastmail.com', smtp_port: 465, smtp_security: 'tls', save_sent: true, password_help: 'An app password.' },
  ],
  dav_presets: [{ id: 'google', name: 'Google', caldav_url: 'https://apidata.googleusercontent.com/caldav/v2/', carddav_url: 'https://www.googleapis.com/carddav/v1/principals/EMAIL/lists/default/', password_help: 'OAuth.', oauth_provider: 'google', oauth_help: 'Use the Gmail sign-in.' }],
  secrets_dir: '/home/me/.config/hestia/secrets',
  configured: {},
};

function setup(step: (body: any) => Response) {
  const ff = fakeFetch({
    'GET /api/setup': () => json(status),
    'GET /api/settings/local-models': () => json({ found: [] }),
    'POST /api/setup/mail': async (r) => step(await r.json()),
    'POST /api/setup/calendar': async (r) => step(await r.json()),
  });
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  render(
    <AppContext.Provider value={app}>
      <SetupPage />
    </AppContext.Provider>,
  );
  return ff.calls;
}

describe('setup with OAuth presets', () => {
  it('Microsoft 365 connects with Microsoft: no password field, the client id sent, the connect command shown', async () => {
    const bodies: any[] = [];
    setup((b) => {
      bodies.push(b);
      return json({ ok: true, tested: false, connect: 'hestia accounts connect me', note: 'not tested' });
    });
    fireEvent.click(await screen.findByRole('button', { name: 'Skip this step' })); // model
    const card = await screen.findByLabelText('Mail');
    fireEvent.change(within(card).getByRole('combobox', { name: 'Provider' }), { target: { value: 'microsoft365' } });
    expect(within(card).queryByLabelText('Password (app password)')).toBeNull();
    const connect = within(card).getByLabelText('Connect with Microsoft');
    expect(connect.textContent).toContain('Register an app at Entra ID.');
    expect(connect.textContent).toContain('hestia accounts connect');
    fireEvent.input(within(card).getByLabelText('Email address'), { target: { value: 'me@contoso.example' } });
    fireEvent.input(within(card).getByLabelText('OAuth client id (only for a new OAuth account)'), { target: { value: 'app-id' } });
    fireEvent.click(within(card).getByRole('button', { name: 'Test and save' }));
    await waitFor(() => expect(within(card).getByRole('status').textContent).toContain('run hestia accounts connect me'));
    expect(bodies[0]).toMatchObject({ auth: 'oauth2', oauth_provider: 'microsoft', client_id: 'app-id', address: 'me@contoso.example', smtp_host: 'smtp.office365.com', smtp_port: 587, smtp_security: 'starttls' });
    expect(bodies[0]).not.toHaveProperty('password');
    expect(within(card).getByRole('button', { name: 'Next' })).toBeTruthy();
  });

  it('Gmail can go back to an app password', async () => {
    setup(() => json({ ok: true, mailboxes: 1 }));
    fireEvent.click(await screen.findByRole('button', { name: 'Skip this step' }));
    const card = screen.getByLabelText('Mail');
    fireEvent.change(within(card).getByRole('combobox', { name: 'Provider' }), { target: { value: 'gmail' } });
    expect(within(card).getByLabelText('OAuth client secret (Google)')).toBeTruthy();
    fireEvent.change(within(card).getByRole('combobox', { name: 'Sign in' }), { target: { value: 'password' } });
    expect(within(card).getByLabelText('Password (app password)')).toBeTruthy();
    expect(within(card).queryByLabelText('Connect with Google')).toBeNull();
    expect(card.textContent).toContain('Use an app password.');
  });

  it('the Google calendar preset signs in with a bearer token', async () => {
    const bodies: any[] = [];
    setup((b) => {
      bodies.push(b);
      return json({ ok: true, url: 'x', oauth_account: 'gmail' });
    });
    fireEvent.click(await screen.findByRole('button', { name: 'Skip this step' }));
    fireEvent.click(await screen.findByRole('button', { name: 'Skip this step' }));
    const card = await screen.findByLabelText('Calendar');
    fireEvent.click(within(card).getByRole('button', { name: 'Google' }));
    fireEvent.input(within(card).getByLabelText('Your Google address'), { target: { value: 'me@gmail.com' } });
    fireEvent.input(within(card).getByLabelText('OAuth account name'), { target: { value: 'gmail' } });
    fireEvent.click(within(card).getByRole('button', { name: 'Test and save' }));
    await waitFor(() => expect(bodies.length).toBe(1));
    expect(bodies[0]).toMatchObject({ auth: 'oauth2', oauth_provider: 'google', oauth_account: 'gmail', url: 'https://apidata.googleusercontent.com/caldav/v2/', username: 'me@gmail.com' });
  });
});
