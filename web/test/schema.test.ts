import { describe, expect, it } from 'vitest';
import type { JSONSchema } from '../src/api/types';
import { buildArgs, fieldsOf, initialForm } from '../src/lib/schema';

const schema: JSONSchema = {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'Where' },
    content: { type: 'string' },
    append: { type: 'boolean' },
    mode: { type: 'string', enum: ['create', 'overwrite'] },
    max: { type: 'integer', minimum: 1, maximum: 10 },
    tags: { type: 'array', items: { type: 'string' } },
    meta: { type: 'object' },
  },
  required: ['path', 'content'],
};

describe('schema form', () => {
  it('round-trips the original arguments unchanged, absent fields stay absent', () => {
    const args = { path: 'a.txt', content: 'hi\nthere', tags: ['x', 'y'] };
    const fields = fieldsOf(schema, args);
    const form = initialForm(fields, args);
    const r = buildArgs(fields, form);
    expect(r.errors).toEqual({});
    expect(r.args).toEqual(args);
    expect('append' in r.args).toBe(false);
    expect('mode' in r.args).toBe(false);
  });

  it('includes an optional field only once the user sets it', () => {
    const args = { path: 'a.txt', content: 'hi' };
    const fields = fieldsOf(schema, args);
    const form = initialForm(fields, args);
    form.values.max = '3';
    form.present.max = true;
    form.values.append = false;
    form.present.append = true;
    expect(buildArgs(fields, form).args).toEqual({ path: 'a.txt', content: 'hi', max: 3, append: false });
  });

  it('removing an optional field drops it', () => {
    const args = { path: 'a', content: 'b', mode: 'create' };
    const fields = fieldsOf(schema, args);
    const form = initialForm(fields, args);
    form.present.mode = false;
    expect(buildArgs(fields, form).args).toEqual({ path: 'a', content: 'b' });
  });

  it('names what is wrong with bad input', () => {
    const args = { path: '', content: 'b', max: 2, meta: { a: 1 } };
    const fields = fieldsOf(schema, args);
    const form = initialForm(fields, args);
    form.values.max = '2.5';
    form.values.meta = '{nope';
    const r = buildArgs(fields, form);
    expect(r.errors).toEqual({ path: 'is required', max: 'must be a whole number', meta: 'is not valid JSON' });
    form.values.max = '11';
    expect(buildArgs(fields, form).errors.max).toBe('must be at most 10');
  });

  it('keeps arguments the schema does not describe', () => {
    const args = { path: 'a', content: 'b', extra: { deep: [1] } };
    const fields = fieldsOf(schema, args);
    expect(fields.find((f) => f.name === 'extra')?.kind).toBe('json');
    expect(buildArgs(fields, initialForm(fields, args)).args).toEqual(args);
  });

  it('picks sensible inputs', () => {
    const kinds = Object.fromEntries(fieldsOf(schema, {}).map((f) => [f.name, f.kind]));
    expect(kinds).toEqual({ path: 'string', content: 'text', append: 'boolean', mode: 'enum', max: 'integer', tags: 'list', meta: 'json' });
  });
});
