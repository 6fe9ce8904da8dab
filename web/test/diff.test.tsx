import { render, screen } from '@testing-library/preact';
import { describe, expect, it } from 'vitest';
import type { ApprovalRequest } from '../src/api/types';
import { ApprovalCard } from '../src/components/ApprovalCard';
import { AppContext } from '../src/context';
import { App } from '../src/state/app';
import { fakeFetch, memTokens } from './helpers';

const diff = '--- a/pages/Trip.md\n+++ b/pages/Trip.md\n@@ -1,2 +1,2 @@\n # Trip\n-Fly on Monday.\n+Fly on Tuesday.\n';

const req: ApprovalRequest = {
  id: 'a_2',
  kind: 'approval',
  chat_id: 'c_1',
  tool: 'wiki_edit',
  args: { path: 'pages/Trip.md', old_text: 'Monday', new_text: 'Tuesday' },
  risk: 'medium',
  preview: 'change wiki page pages/Trip.md (26 → 27 bytes)',
  diff,
  created_at: '2026-12-02T10:00:00Z',
};

describe('ApprovalCard diff', () => {
  it('shows the unified diff with added and removed lines marked', () => {
    const app = new App({ tokens: memTokens('tok'), fetch: fakeFetch({}).fetch });
    const { container } = render(
      <AppContext.Provider value={app}>
        <ApprovalCard req={req} />
      </AppContext.Provider>,
    );
    expect(screen.getByText('Changes')).toBeTruthy();
    expect(container.querySelector('.diff .del')?.textContent).toBe('-Fly on Monday.\n');
    expect(container.querySelector('.diff .add')?.textContent).toBe('+Fly on Tuesday.\n');
    expect(container.querySelectorAll('.diff .file')).toHaveLength(2);
  });

  it('shows no diff section for tools without one', () => {
    const app = new App({ tokens: memTokens('tok'), fetch: fakeFetch({}).fetch });
    const { container } = render(
      <AppContext.Provider value={app}>
        <ApprovalCard req={{ ...req, diff: undefined }} />
      </AppContext.Provider>,
    );
    expect(container.querySelector('.diff')).toBeNull();
  });
});
