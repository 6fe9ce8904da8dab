import type { ComponentChildren } from 'preact';
import { ApiError } from '../api/client';
import { Alert } from '../components/icons';
import { errText } from '../lib/errors';

export function PageHeader({ title, subtitle, children }: { title: string; subtitle?: string; children?: ComponentChildren }) {
  return (
    <header class="page-header">
      <div>
        <h1>{title}</h1>
        {subtitle && <p class="muted">{subtitle}</p>}
      </div>
      {children && <div class="page-tools">{children}</div>}
    </header>
  );
}

export function Failure({ err, retry }: { err: unknown; retry?: () => void }) {
  const notYet = err instanceof ApiError && err.status === 404;
  const msg = notYet
    ? 'This daemon does not offer this page yet. Update Hestia to see it.'
    : errText(err);
  return (
    <div class="callout error" role="alert">
      <Alert size={16} />
      <span>{msg}</span>
      {retry && !notYet && (
        <button class="btn small" onClick={retry}>
          Retry
        </button>
      )}
    </div>
  );
}
