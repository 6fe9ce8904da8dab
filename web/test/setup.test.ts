import { describe, expect, it } from 'vitest';
import { applyMailPreset, describeResult, setOAuth, stepBody, usesOAuth, type MailPreset } from '../src/lib/setup';

const gmail: MailPreset = {
  id: 'gmail', name: 'Gmail', imap_host: 'imap.gmail.com', imap_port: 993, imap_security: 'tls',
  smtp_host: 'smtp.gmail.com', smtp_port: 465, smtp_security: 'tls', save_sent: false, password_help: 'app password',
};

describe('setup helpers', () => {
  it('fills hosts, ports and security from a preset and keeps what was typed', () => {
    const f = applyMailPreset({ address: 'a@b.c', imap_host: 'old' }, gmail);
    expect(f).toMatchObject({ address: 'a@b.c', imap_host: 'imap.gmail.com', smtp_port: 465, save_sent: false });
    expect(applyMailPreset({ address: 'x' }, undefined)).toEqual({ address: 'x' });
  });
  it('sends numbers as numbers, splits file roots and drops empty fields', () => {
    expect(stepBody('mail', { imap_port: '993', password: '', address: 'a@b.c' })).toEqual({ imap_port: 993, address: 'a@b.c' });
    expect(stepBody('files', { file_roots: '~/Documents, ~/notes,\n/srv/x' })).toEqual({ file_roots: ['~/Documents', '~/notes', '/srv/x'] });
    expect(stepBody('telegram', { token: 't', owner_id: '42' })).toEqual({ token: 't', owner_id: 42 });
  });
  it('sends a URL as url and anything else as a vdir path', () => {
    expect(stepBody('calendar', { where: 'https://caldav.fastmail.com/dav/', name: 'w' })).toEqual({ url: 'https://caldav.fastmail.com/dav/', name: 'w' });
    expect(stepBody('contacts', { where: '/home/me/.contacts' })).toEqual({ path: '/home/me/.contacts' });
  });
  it('says what a passed test found', () => {
    expect(describeResult({ ok: true, models: ['a'] })).toBe('Connected: 1 model.');
    expect(describeResult({ ok: true, mailboxes: 3 })).toMatch(/IMAP login and SMTP AUTH work \(3 mailboxes\)/);
    expect(describeResult({ ok: true, bot: 'hb' })).toBe('Bot @hb answers.');
  });
  it('signs in with the preset’s OAuth provider, and back with a password', () => {
    const ms: MailPreset = { ...gmail, id: 'microsoft365', smtp_port: 587, smtp_security: 'starttls', oauth_provider: 'microsoft', oauth_scopes: ['https://outlook.office.com/IMAP.AccessAsUser.All'] };
    const f = applyMailPreset({ address: 'me@contoso.example', password: 'typed before' }, ms);
    expect(f).toMatchObject({ auth: 'oauth2', oauth_provider: 'microsoft', smtp_port: 587, smtp_security: 'starttls' });
    expect(f.password).toBeUndefined();
    expect(usesOAuth(f)).toBe(true);
    const back = setOAuth({ ...f, client_id: 'x', tenant: 'common' }, undefined);
    expect(usesOAuth(back)).toBe(false);
    expect(back).not.toHaveProperty('client_id');
    expect(back).not.toHaveProperty('oauth_provider');
    // A preset without OAuth leaves a password sign-in.
    expect(usesOAuth(applyMailPreset(f, gmail))).toBe(false);
  });
  it('says which command signs in when a step was saved untested', () => {
    expect(describeResult({ ok: true, tested: false, connect: 'hestia accounts connect work', note: '… then restart Hestia …' })).toBe(
      'Not tested yet: run hestia accounts connect work in a terminal to sign in, then restart Hestia (Settings → Restart now).',
    );
    expect(describeResult({ ok: true, mailboxes: 2 })).toMatch(/2 mailboxes/);
  });
});
