import { describe, expect, it } from 'vitest';
import { applyMailPreset, describeResult, stepBody, type MailPreset } from '../src/lib/setup';

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
});
