// What a tool card says about a call, derived from whatever we know: the
// persisted tool message, live events, or a pending approval.
import type { ApprovalRequest, Message } from '../api/types';
import type { LiveTool, Resolved } from '../state/reduce';

export type Tone = 'running' | 'waiting' | 'ok' | 'error' | 'notdone';

export interface ToolStatus {
  tone: Tone;
  label: string;
  detail?: string;
  edited?: boolean;
  duration_ms?: number;
  error?: string;
  output?: string;
  input?: Record<string, unknown>;
  askedInput?: Record<string, unknown>;
}

const notDone: Record<string, string> = {
  denied: 'denied by you',
  revise: 'sent back for revision',
  timeout: 'nobody answered in time',
  no_approver: 'no one was there to approve',
  blocked: 'blocked by policy',
  invalid: 'invalid arguments',
  skipped: 'skipped',
  cancelled: 'cancelled',
  expired: 'expired: Hestia stopped while it waited for approval',
};

export function toolStatus(opts: {
  args?: Record<string, unknown>;
  result?: Message;
  live?: LiveTool;
  pending?: ApprovalRequest;
  resolved?: Resolved;
  turnRunning: boolean;
}): ToolStatus {
  const { args, result, live, pending, resolved, turnRunning } = opts;
  if (pending && !result) {
    return { tone: 'waiting', label: 'Waiting for approval', input: args };
  }
  const t = result?.tool;
  const decision = t?.decision ?? live?.decision;
  const status = t?.status ?? live?.status;
  const base = {
    duration_ms: t?.duration_ms ?? live?.duration_ms,
    error: t?.error || live?.error || undefined,
    output: result ? result.content : live?.output,
    input: t?.effective_input ?? t?.input ?? live?.args ?? args,
    askedInput: t?.decision === 'edited' ? t.input : undefined,
    edited: decision === 'edited',
  };
  if (decision && decision in notDone) {
    let detail = notDone[decision];
    if (decision === 'denied' && resolved?.resolution.note) detail += `: “${resolved.resolution.note}”`;
    const reason = t?.note ?? live?.note;
    if (decision === 'blocked' && reason) {
      detail += `: ${reason}`;
      if (/allowed folders/.test(reason)) detail += ' — change them in Settings';
    }
    return { ...base, tone: 'notdone', label: 'NOT DONE', detail };
  }
  if (result || live?.state === 'finished') {
    if (status === 'error') return { ...base, tone: 'error', label: 'Failed' };
    if (status === 'not_run') return { ...base, tone: 'notdone', label: 'NOT DONE', detail: 'did not run' };
    return { ...base, tone: 'ok', label: decision === 'edited' ? 'Done with your edits' : 'Done' };
  }
  if (live?.state === 'running') return { ...base, tone: 'running', label: 'Running' };
  if (resolved) {
    const d = resolved.resolution.decision;
    if (d === 'deny' || d === 'timeout' || d === 'no_approver' || d === 'revise' || d === 'cancelled') {
      const key = d === 'deny' ? 'denied' : d;
      return { ...base, tone: 'notdone', label: 'NOT DONE', detail: notDone[key] };
    }
    return { ...base, tone: 'running', label: 'Running' };
  }
  if (turnRunning) return { ...base, tone: 'running', label: 'Starting' };
  return { ...base, tone: 'notdone', label: 'NOT DONE', detail: 'did not run' };
}

/** The turns in which a tool call did not run (denied, blocked, expired, …):
 * their final reply is marked so a claim of success cannot hide it. */
export function turnsWithNotDone(messages: Message[]): Set<string> {
  const out = new Set<string>();
  for (const m of messages) {
    if (m.role === 'tool' && m.turn_id && m.tool?.status === 'not_run') out.add(m.turn_id);
  }
  return out;
}
