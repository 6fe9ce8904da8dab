import type { Field, FormState } from '../lib/schema';

interface Props {
  idPrefix: string;
  fields: Field[];
  form: FormState;
  errors: Record<string, string>;
  onChange(f: FormState): void;
}

export function SchemaForm({ idPrefix, fields, form, errors, onChange }: Props) {
  const set = (name: string, value: string | boolean) =>
    onChange({ values: { ...form.values, [name]: value }, present: { ...form.present, [name]: true } });
  const clear = (name: string) =>
    onChange({
      values: { ...form.values, [name]: typeof form.values[name] === 'boolean' ? false : '' },
      present: { ...form.present, [name]: false },
    });

  return (
    <div class="schema-form">
      {fields.map((f) => {
        const id = `${idPrefix}-${f.name}`;
        const v = form.values[f.name];
        const present = form.present[f.name];
        const err = errors[f.name];
        const common = {
          id,
          name: f.name,
          'aria-invalid': err ? true : undefined,
          'aria-describedby': err ? `${id}-err` : undefined,
        };
        let input;
        switch (f.kind) {
          case 'boolean':
            input = (
              <label class="check">
                <input
                  {...common}
                  type="checkbox"
                  checked={v === true}
                  onChange={(e) => set(f.name, (e.target as HTMLInputElement).checked)}
                />
                <span>{present ? (v ? 'Yes' : 'No') : 'Not set'}</span>
              </label>
            );
            break;
          case 'enum':
            input = (
              <select {...common} value={String(v)} onChange={(e) => set(f.name, (e.target as HTMLSelectElement).value)}>
                {!present && <option value="">Not set</option>}
                {(f.schema.enum as string[]).map((o) => (
                  <option value={o}>{o}</option>
                ))}
              </select>
            );
            break;
          case 'text':
          case 'list':
          case 'json':
            input = (
              <textarea
                {...common}
                class={f.kind === 'json' ? 'mono' : undefined}
                rows={Math.min(12, Math.max(3, String(v).split('\n').length + 1))}
                placeholder={present ? undefined : 'Not set'}
                value={String(v)}
                onInput={(e) => set(f.name, (e.target as HTMLTextAreaElement).value)}
              />
            );
            break;
          default:
            input = (
              <input
                {...common}
                type={f.kind === 'integer' || f.kind === 'number' ? 'number' : 'text'}
                step={f.kind === 'integer' ? 1 : 'any'}
                placeholder={present ? undefined : 'Not set'}
                value={String(v)}
                onInput={(e) => set(f.name, (e.target as HTMLInputElement).value)}
              />
            );
        }
        return (
          <div class={'field' + (present ? '' : ' absent')}>
            <div class="field-head">
              <label for={id}>{f.label}</label>
              {!f.required && <span class="tag">optional</span>}
              {!f.required && present && (
                <button type="button" class="link" onClick={() => clear(f.name)} aria-label={`Remove ${f.label}`}>
                  remove
                </button>
              )}
            </div>
            {f.schema.description && <div class="hint">{f.schema.description}</div>}
            {input}
            {f.kind === 'list' && <div class="hint">One item per line.</div>}
            {err && (
              <div class="field-err" id={`${id}-err`}>
                {f.label} {err}.
              </div>
            )}
          </div>
        );
      })}
    </div>
  );
}
