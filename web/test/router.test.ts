import { describe, expect, it } from 'vitest';
import { hrefFor, parseRoute } from '../src/router';
import { titleFrom } from '../src/state/app';

describe('router', () => {
  it.each([
    ['/', '', { name: 'home' }],
    ['/c/c_12', '', { name: 'chat', id: 'c_12' }],
    ['/c/c%2F1/', '', { name: 'chat', id: 'c/1' }],
    ['/usage', '', { name: 'usage' }],
    ['/audit/', '', { name: 'audit' }],
    ['/system', '', { name: 'system' }],
    ['/pair', '#code=ABCD2345', { name: 'pair', code: 'ABCD2345' }],
    ['/pair', '', { name: 'pair' }],
    ['/nonsense/x', '', { name: 'home' }],
  ])('%s%s', (path, hash, want) => {
    expect(parseRoute(path, hash)).toEqual(want);
  });

  it('builds links that parse back', () => {
    expect(parseRoute(hrefFor({ name: 'chat', id: 'c/ü' }))).toEqual({ name: 'chat', id: 'c/ü' });
  });

  it('titles a new chat from its first line', () => {
    expect(titleFrom('  Plan the   trip\nmore')).toBe('Plan the trip');
    expect(titleFrom('x'.repeat(100))).toHaveLength(58);
  });
});
