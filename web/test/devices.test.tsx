import { fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import { encode } from 'uqr';
import { AppContext } from '../src/context';
import { DevicesPanel, pairLink, qrSVG } from '../src/pages/Devices';
import { App } from '../src/state/app';
import { fakeFetch, json, memTokens } from './helpers';

function withApp(routes: Parameters<typeof fakeFetch>[0]) {
  const ff = fakeFetch(routes);
  const app = new App({ tokens: memTokens('tok'), fetch: ff.fetch });
  const wrap = (node: any) => render(<AppContext.Provider value={app}>{node}</AppContext.Provider>);
  return { app, wrap, calls: ff.calls };
}

const phone = { id: 'd_1', name: 'Anna phone', kind: 'browser', scopes: ['chat', 'read'], created_at: '2026-12-03T08:00:00Z', last_seen_at: '2026-12-03T09:00:00Z' };
const tgUser = { id: 'tg_4242', name: 'Telegram @anna (4242)', kind: 'telegram', scopes: ['chat', 'approve', 'read'], created_at: '2026-12-03T08:00:00Z', managed: 'config' };
const old = { id: 'd_0', name: 'Old tablet', kind: 'browser', scopes: ['read'], created_at: '2026-11-01T08:00:00Z', revoked_at: '2026-11-02T08:00:00Z' };

describe('pairing QR code', () => {
  it('encodes the one-time link of this daemon', () => {
    const link = pairLink('https://hestia.example:4317/', 'ABCD2345EF');
    expect(link).toBe('https://hestia.example:4317/pair#code=ABCD2345EF');
    // With remote access on, the daemon's LAN address and certificate.
    expect(pairLink('http://127.0.0.1:4317', 'ABCD2345EF', { url: 'https://192.168.1.20:4318', fingerprint: 'AB:CD:EF' })).toBe(
      'https://192.168.1.20:4318/pair#code=ABCD2345EF&fp=ABCDEF',
    );
    expect(pairLink('http://127.0.0.1:4317', 'ABCD2345EF', {})).toBe('http://127.0.0.1:4317/pair#code=ABCD2345EF');
    const svg = qrSVG(link);
    expect(svg.startsWith('<svg')).toBe(true);
    // The matrix the SVG draws is a real QR symbol of the link.
    const m = encode(link, { ecc: 'M', border: 0 });
    expect(m.size).toBeGreaterThanOrEqual(21);
    expect((m.size - 21) % 4).toBe(0);
  });
});

describe('DevicesPanel', () => {
  it('shows Telegram users with their scopes, managed in config', async () => {
    const { wrap } = withApp({ 'GET /api/devices': () => json({ devices: [phone, tgUser] }) });
    wrap(<DevicesPanel />);
    await screen.findByText('Telegram @anna (4242)');
    expect(screen.getByText('chat, approve, read')).toBeTruthy();
    expect(screen.getByText('Allowed in config.toml')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Revoke Telegram @anna (4242)' })).toBeNull();
    expect(screen.getByRole('button', { name: 'Revoke Anna phone' })).toBeTruthy();
  });

  it('lists devices and revokes one', async () => {
    let revoked = false;
    const { wrap, calls } = withApp({
      'GET /api/devices': () => json({ devices: revoked ? [{ ...phone, revoked_at: '2026-12-03T09:30:00Z' }, old] : [phone, old] }),
      'DELETE /api/devices/d_1': () => {
        revoked = true;
        return json({ device: phone });
      },
    });
    (window as any).confirm = () => true;
    wrap(<DevicesPanel />);
    await screen.findByText('Anna phone');
    expect(screen.getByText('chat, read')).toBeTruthy();
    expect(screen.getAllByText(/Revoked/).length).toBe(1);
    fireEvent.click(screen.getByRole('button', { name: 'Revoke Anna phone' }));
    await waitFor(() => expect(screen.getAllByText(/Revoked/).length).toBe(2));
    expect(calls.some((c) => c.method === 'DELETE')).toBe(true);
  });

  it('creates a code with the chosen scopes and shows its QR code', async () => {
    const { wrap, calls } = withApp({
      'GET /api/devices': () => json({ devices: [] }),
      'POST /api/pair/codes': () => json({ code: 'ABCD2345EF', expires_at: new Date(Date.now() + 300_000).toISOString() }),
    });
    wrap(<DevicesPanel />);
    fireEvent.click(await screen.findByRole('button', { name: 'Pair a device' }));
    fireEvent.input(screen.getByPlaceholderText('My phone'), { target: { value: 'Kitchen tablet' } });
    fireEvent.click(screen.getByLabelText(/Approve actions/));
    fireEvent.click(screen.getByRole('button', { name: 'Show pairing code' }));
    await screen.findByText('ABCD2345EF');
    const img = screen.getByRole('img', { name: /QR code/ });
    expect(img.innerHTML).toContain('<svg');
    const body = await calls.find((c) => c.method === 'POST')!.clone().json();
    expect(body).toEqual({ name: 'Kitchen tablet', scopes: ['chat', 'read'] });
  });

  it('tells a device without admin that it may not manage devices', async () => {
    const { wrap } = withApp({ 'GET /api/devices': () => json({ error: { code: 'forbidden', message: 'lacks admin' } }, 403) });
    wrap(<DevicesPanel />);
    await screen.findByText(/may not manage devices/);
    expect(screen.queryByRole('button', { name: 'Pair a device' })).toBeNull();
  });
});
