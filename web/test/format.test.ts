import { describe, expect, it } from 'vitest';
import { when } from '../src/lib/format';

describe('when', () => {
  it('shows a time as the local date and time', () => {
    const iso = '2026-03-04T05:06:07Z';
    expect(when(iso)).toBe(new Date(iso).toLocaleString());
    expect(when(iso, 'never')).toBe(new Date(iso).toLocaleString());
  });

  it.each([undefined, ''])('shows a dash for no time (%j)', (v) => {
    expect(when(v)).toBe('—');
  });

  it('shows the given text for no time', () => {
    expect(when(undefined, 'never')).toBe('never');
    expect(when('', 'never')).toBe('never');
  });
});
