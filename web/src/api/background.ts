// The background plane's API: scheduled jobs, the Action Center and Web
// Push subscriptions. Kept apart from client.ts so other pages' edits do
// not collide with these.
import type { Client } from './client';

export interface JobRun {
  id: number;
  job: string;
  trigger: 'schedule' | 'missed' | 'manual';
  started_at: string;
  ended_at?: string;
  status: 'running' | 'ok' | 'error' | 'timeout' | 'skipped' | 'interrupted';
  error?: string;
  duration_ms?: number;
}

export interface Job {
  name: string;
  builtin: boolean;
  schedule: { every?: string; cron?: string; at?: string };
  timeout: string;
  prompt?: string;
  chat_id?: string;
  enabled: boolean;
  next_run?: string;
  running: boolean;
  last_run?: JobRun;
}

export interface NewJob {
  name: string;
  cron?: string;
  every?: string;
  at?: string;
  prompt: string;
}

export interface ActionStep {
  title: string;
  tool?: string;
  args?: unknown;
  manual?: boolean;
  state?: string;
  result?: string;
}

export interface ActionItem {
  id: number;
  kind: string;
  priority: 'high' | 'normal' | 'low';
  deadline?: string;
  summary: string;
  steps: ActionStep[];
  confidence: number;
  context?: { subject?: string; from?: string; messages?: number };
  state: 'new' | 'read' | 'done' | 'dismissed';
  updated_at: string;
}

export interface ActionSettings {
  enabled: boolean;
  language: string;
  activated_at?: string;
}

export function scheduleText(s: Job['schedule']): string {
  if (s.every) return `every ${s.every}`;
  if (s.cron) return `cron ${s.cron}`;
  if (s.at) return `once at ${new Date(s.at).toLocaleString()}`;
  return '—';
}

const enc = encodeURIComponent;

export const jobsApi = (c: Client) => ({
  list: () => c.get<{ jobs: Job[] }>('/api/jobs').then((r) => r.jobs ?? []),
  runs: (name: string) => c.get<{ runs: JobRun[] }>(`/api/jobs/${enc(name)}/runs?limit=20`).then((r) => r.runs ?? []),
  run: (name: string) => c.request<{ run_id: number }>('POST', `/api/jobs/${enc(name)}/run`),
  add: (j: NewJob) => c.request<Job>('POST', '/api/jobs', j),
  remove: (name: string) => c.request<unknown>('DELETE', `/api/jobs/${enc(name)}`),
  pause: (name: string, paused: boolean) => c.request<Job>('POST', `/api/jobs/${enc(name)}/${paused ? 'pause' : 'resume'}`),
});

export const actionsApi = (c: Client) => ({
  list: (state: string) =>
    c.get<{ actions: ActionItem[]; counts: Record<string, number> }>(`/api/actions?state=${enc(state)}`),
  setState: (id: number, state: string) => c.request<ActionItem>('POST', `/api/actions/${id}/state`, { state }),
  execute: (id: number) => c.request<ActionItem>('POST', `/api/actions/${id}/execute`),
  settings: () => c.get<ActionSettings>('/api/actions/settings'),
  setSettings: (s: ActionSettings) => c.request<ActionSettings>('PUT', '/api/actions/settings', s),
  scan: () => c.request<{ created: number; updated: number }>('POST', '/api/actions/scan'),
});

export const pushApi = (c: Client) => ({
  key: () => c.get<{ public_key: string }>('/api/push/key').then((r) => r.public_key),
  subscribe: (sub: PushSubscriptionJSON, device: string) =>
    c.request<unknown>('POST', '/api/push/subscriptions', { endpoint: sub.endpoint, keys: sub.keys, device }),
});

/** base64url → bytes, for PushManager.subscribe's applicationServerKey. */
export function urlB64ToBytes(s: string): Uint8Array<ArrayBuffer> {
  const pad = '='.repeat((4 - (s.length % 4)) % 4);
  const b64 = (s + pad).replace(/-/g, '+').replace(/_/g, '/');
  const raw = atob(b64);
  const out = new Uint8Array(new ArrayBuffer(raw.length));
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}
