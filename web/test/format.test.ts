import { describe, expect, it } from 'vitest';
import { toolOutput, when } from '../src/lib/format';

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

describe('toolOutput', () => {
  it('unwraps outside content and pretty-prints JSON without HTML escapes', () => {
    const wrapped = '<untrusted_content source="calendar_list" boundary="b123">\n{"events":[{"title":"Tom \\u003cBoss\\u003e \\u0026 me"}]}\n[hestia: removed from this content: 1 bidi]\n</untrusted_content boundary="b123">';
    const o = toolOutput(wrapped);
    expect(o.outside).toBe('calendar_list');
    expect(o.note).toBe('removed from this content: 1 bidi');
    expect(o.text).toBe('{\n  "events": [\n    {\n      "title": "Tom <Boss> & me"\n    }\n  ]\n}');
    expect(o.text).not.toContain('untrusted_content');
  });

  it('leaves plain text, broken JSON and a lone tag alone', () => {
    expect(toolOutput('wrote 2 bytes')).toEqual({ text: 'wrote 2 bytes' });
    expect(toolOutput('{"cut": "at the li')).toEqual({ text: '{"cut": "at the li' });
    expect(toolOutput(undefined)).toEqual({ text: '' });
    const forged = '<untrusted_content source="x" boundary="b">\nno close';
    expect(toolOutput(forged).outside).toBeUndefined();
  });
});
