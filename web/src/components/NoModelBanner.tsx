// Shown above the composer while the daemon has no chat model, so the
// first message does not fail: the two ways to configure one.
import { useApp } from '../context';
import type { UIState } from '../state/app';
import { useSelect } from '../state/store';
import { Alert } from './icons';
import '../styles/settings.css';

export function NoModelBanner() {
  const app = useApp();
  const noModel = useSelect(app.ui, (u: UIState) => u.modelReady === false);
  if (!noModel) return null;
  return (
    <div class="no-model" role="status">
      <Alert size={16} />
      <div>
        <strong>No model is configured yet, so Hestia cannot answer.</strong> Pick a local server or add a provider in{' '}
        <a href="/settings">Settings</a>, or start Hestia with <code>HESTIA_LLM_BASE_URL</code> and <code>HESTIA_LLM_MODEL</code> (and{' '}
        <code>HESTIA_LLM_API_KEY</code> for a hosted one) set, then restart it.
      </div>
    </div>
  );
}
