// The Approvals section of Settings: the auto-approve threshold, the trust
// rules that override it, and a dry run that shows what the policy would
// decide for a call without running it.
import { useEffect, useState } from 'preact/hooks';
import { Trash } from '../../components/icons';
import { useApp } from '../../context';
import { errText } from '../../lib/errors';
import type { PolicyRule, SettingsView } from '../../lib/settings';
import { Failure } from '../common';
import { EnvNote, SaveRow, Section, useSaver, type Save } from './parts';

export function Approvals({ view, save }: { view: SettingsView; save: Save }) {
  const app = useApp();
  const [threshold, setThreshold] = useState(view.auto_approve);
  const s = useSaver(save);
  const [rules, setRules] = useState<PolicyRule[] | null>(null);
  const [rulesErr, setRulesErr] = useState<unknown>(null);
  const [nr, setNr] = useState({ tool: '', pattern: '', path_scope: '', decision: 'allow', note: '' });
  const [ruleErr, setRuleErr] = useState<string | null>(null);
  const [dry, setDry] = useState({ tool: 'write_file', args: '{"path": "~/notes/todo.md", "content": "x"}' });
  const [dryOut, setDryOut] = useState<{ decision: string; source: string; reason: string } | { error: string } | null>(null);
  const loadRules = () => app.client.policyRules().then(setRules, setRulesErr);
  useEffect(() => void loadRules(), []);
  return (
    <Section id="s-approvals" title="Approvals" hint="Tools up to this risk run without asking; riskier ones wait for your approval. Trust rules override the threshold for matching calls.">
      <EnvNote view={view} keys={['policy.auto_approve']} />
      <div class="row-actions">
        <label class="inline">
          Run without asking up to
          <select aria-label="Auto-approve threshold" value={threshold} onChange={(e) => setThreshold((e.target as HTMLSelectElement).value)}>
            <option value="none">no risk (ask for everything)</option>
            <option value="low">low risk</option>
            <option value="medium">medium risk</option>
            <option value="high">high risk</option>
          </select>
        </label>
        <SaveRow error={s.error} busy={s.busy} onSave={() => void s.run([{ key: 'policy.auto_approve', value: threshold }])} />
      </div>
      <h3>Trust rules</h3>
      {rulesErr ? (
        <Failure err={rulesErr} />
      ) : !rules ? (
        <div class="skeleton" />
      ) : rules.length === 0 ? (
        <div class="muted small">No rules: the threshold decides.</div>
      ) : (
        <div class="table-wrap">
          <table class="table rules-table">
            <thead>
              <tr>
                <th>Tool</th>
                <th>Pattern</th>
                <th class="hide-phone">Folder</th>
                <th>Decision</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {rules.map((r) => (
                <tr key={r.id}>
                  <td class="mono">{r.tool}</td>
                  <td class="mono small">{r.pattern || '—'}</td>
                  <td class="mono small hide-phone">{r.path_scope || '—'}</td>
                  <td>
                    <span class={`decision d-${r.decision}`}>{r.decision}</span>
                  </td>
                  <td>
                    <button
                      class="icon-btn small danger-hover"
                      aria-label={`Delete rule for ${r.tool}`}
                      onClick={async () => {
                        try {
                          await app.client.deleteRule(r.id);
                          void loadRules();
                        } catch (e) {
                          app.error(e);
                        }
                      }}
                    >
                      <Trash size={15} />
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="form-grid rule-form">
        <label>
          Tool
          <input value={nr.tool} onInput={(e) => setNr({ ...nr, tool: (e.target as HTMLInputElement).value })} placeholder="write_file or mail_*" />
        </label>
        <label>
          Pattern (optional)
          <input value={nr.pattern} onInput={(e) => setNr({ ...nr, pattern: (e.target as HTMLInputElement).value })} placeholder="glob on the call's target" />
        </label>
        <label>
          Folder (optional)
          <input value={nr.path_scope} onInput={(e) => setNr({ ...nr, path_scope: (e.target as HTMLInputElement).value })} placeholder="/home/me/notes" />
        </label>
        <label>
          Decision
          <select value={nr.decision} onChange={(e) => setNr({ ...nr, decision: (e.target as HTMLSelectElement).value })}>
            <option value="allow">allow</option>
            <option value="gate">ask me</option>
            <option value="deny">deny</option>
          </select>
        </label>
      </div>
      <div class="save-row">
        {ruleErr && (
          <div class="callout error" role="alert">
            <span>{ruleErr}</span>
          </div>
        )}
        <button
          class="btn primary"
          onClick={async () => {
            setRuleErr(null);
            try {
              await app.client.addRule({ tool: nr.tool.trim(), pattern: nr.pattern.trim(), path_scope: nr.path_scope.trim(), decision: nr.decision as PolicyRule['decision'] });
              setNr({ tool: '', pattern: '', path_scope: '', decision: 'allow', note: '' });
              void loadRules();
            } catch (e) {
              setRuleErr(errText(e));
            }
          }}
        >
          Add rule
        </button>
      </div>
      <h3>Dry run</h3>
      <p class="muted small">What would happen to this call now, with these rules and this threshold (nothing runs).</p>
      <div class="form-grid dry">
        <label>
          Tool
          <input value={dry.tool} onInput={(e) => setDry({ ...dry, tool: (e.target as HTMLInputElement).value })} />
        </label>
        <label class="wide">
          Arguments (JSON)
          <input class="mono" value={dry.args} onInput={(e) => setDry({ ...dry, args: (e.target as HTMLInputElement).value })} />
        </label>
      </div>
      <div class="save-row">
        <button
          class="btn"
          onClick={async () => {
            let args: unknown;
            try {
              args = dry.args.trim() ? JSON.parse(dry.args) : {};
            } catch {
              setDryOut({ error: 'The arguments are not valid JSON.' });
              return;
            }
            try {
              setDryOut(await app.client.dryRun(dry.tool.trim(), args));
            } catch (e) {
              setDryOut({ error: errText(e) });
            }
          }}
        >
          Try it
        </button>
      </div>
      {dryOut &&
        ('error' in dryOut ? (
          <div class="callout error" role="alert">
            <span>{dryOut.error}</span>
          </div>
        ) : (
          <div class={`callout ${dryOut.decision === 'allow' ? 'ok' : dryOut.decision === 'deny' ? 'error' : 'warn'} dry-result`} role="status">
            <span>
              <strong>{dryOut.decision === 'allow' ? 'Runs' : dryOut.decision === 'gate' ? 'Asks you' : 'Blocked'}</strong> — {dryOut.reason} <span class="muted small">({dryOut.source.replace(/_/g, ' ')})</span>
            </span>
          </div>
        ))}
    </Section>
  );
}
