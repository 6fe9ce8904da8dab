// Edit forms generated from a tool's JSON schema. The form keeps track of
// which fields are present: an optional field the model left out stays out
// of the edited arguments unless the user fills it in, because "absent"
// and "empty string" mean different things to a tool.
import type { JSONSchema } from '../api/types';

export type Kind = 'string' | 'text' | 'integer' | 'number' | 'boolean' | 'enum' | 'list' | 'json';

export interface Field {
  name: string;
  schema: JSONSchema;
  required: boolean;
  kind: Kind;
  label: string;
}

export interface FormState {
  values: Record<string, string | boolean>;
  present: Record<string, boolean>;
}

function typeOf(s: JSONSchema): string | undefined {
  if (Array.isArray(s.type)) return s.type.find((t) => t !== 'null');
  return s.type;
}

const longNames = /^(content|body|text|message|note|description|markdown|html|query_text|script|command)$/;

export function kindOf(name: string, s: JSONSchema, value?: unknown): Kind {
  if (s.enum && s.enum.every((v) => typeof v === 'string')) return 'enum';
  switch (typeOf(s)) {
    case 'string':
      if (longNames.test(name) || (typeof value === 'string' && (value.includes('\n') || value.length > 80))) {
        return 'text';
      }
      return 'string';
    case 'integer':
      return 'integer';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return s.items && typeOf(s.items) === 'string' && !s.items.enum ? 'list' : 'json';
    default:
      return 'json';
  }
}

export function fieldsOf(schema: JSONSchema | undefined, args: Record<string, unknown>): Field[] {
  const props = schema?.properties ?? {};
  const req = new Set(schema?.required ?? []);
  const fields: Field[] = Object.entries(props).map(([name, s]) => ({
    name,
    schema: s,
    required: req.has(name),
    kind: kindOf(name, s, args[name]),
    label: s.title || humanize(name),
  }));
  // Arguments the schema does not describe are still shown (as JSON) so the
  // user sees and can edit exactly what will run.
  for (const name of Object.keys(args)) {
    if (!(name in props)) {
      fields.push({ name, schema: {}, required: false, kind: 'json', label: humanize(name) });
    }
  }
  return fields;
}

export function humanize(name: string): string {
  const s = name.replace(/[_-]+/g, ' ').trim();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export function initialForm(fields: Field[], args: Record<string, unknown>): FormState {
  const values: FormState['values'] = {};
  const present: FormState['present'] = {};
  for (const f of fields) {
    const has = Object.prototype.hasOwnProperty.call(args, f.name);
    present[f.name] = has || f.required;
    values[f.name] = toInput(f.kind, has ? args[f.name] : undefined);
  }
  return { values, present };
}

function toInput(kind: Kind, v: unknown): string | boolean {
  if (kind === 'boolean') return v === true;
  if (v === undefined || v === null) return '';
  switch (kind) {
    case 'list':
      return Array.isArray(v) ? v.map(String).join('\n') : String(v);
    case 'json':
      return JSON.stringify(v, null, 2);
    default:
      return String(v);
  }
}

export interface BuildResult {
  args: Record<string, unknown>;
  errors: Record<string, string>;
}

/** The complete replacement arguments, or errors by field name. */
export function buildArgs(fields: Field[], form: FormState): BuildResult {
  const args: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const f of fields) {
    if (!form.present[f.name]) continue;
    const raw = form.values[f.name];
    try {
      args[f.name] = fromInput(f, raw);
    } catch (e) {
      errors[f.name] = (e as Error).message;
    }
  }
  return { args, errors };
}

function fromInput(f: Field, raw: string | boolean): unknown {
  if (f.kind === 'boolean') return raw === true;
  const s = String(raw);
  switch (f.kind) {
    case 'integer': {
      if (!/^-?\d+$/.test(s.trim())) throw new Error('must be a whole number');
      return check(f, Number(s));
    }
    case 'number': {
      const n = Number(s);
      if (s.trim() === '' || !Number.isFinite(n)) throw new Error('must be a number');
      return check(f, n);
    }
    case 'list':
      return s
        .split('\n')
        .map((x) => x.trim())
        .filter(Boolean);
    case 'json': {
      if (s.trim() === '') throw new Error('must be JSON');
      try {
        return JSON.parse(s);
      } catch {
        throw new Error('is not valid JSON');
      }
    }
    case 'enum':
      if (f.schema.enum && !f.schema.enum.includes(s)) throw new Error('choose one of the options');
      return s;
    default:
      if (f.required && s === '' && typeOf(f.schema) === 'string') {
        // An empty required string is legal JSON but almost never meant.
        throw new Error('is required');
      }
      return s;
  }
}

function check(f: Field, n: number): number {
  if (f.schema.minimum !== undefined && n < f.schema.minimum) throw new Error(`must be at least ${f.schema.minimum}`);
  if (f.schema.maximum !== undefined && n > f.schema.maximum) throw new Error(`must be at most ${f.schema.maximum}`);
  return n;
}
