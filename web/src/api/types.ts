// Shapes of the daemon's client protocol (docs/protocol.md). Fields the UI
// does not need are left out; everything optional is treated as maybe absent
// because older or newer daemons may not send it.

export interface Chat {
  id: string;
  title: string;
  created_at: string;
  updated_at: string;
  message_count?: number;
}

export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type Decision =
  | 'allowed'
  | 'approved'
  | 'edited'
  | 'denied'
  | 'revise'
  | 'timeout'
  | 'no_approver'
  | 'blocked'
  | 'invalid'
  | 'skipped'
  | 'answered';

export interface ToolOutcome {
  input?: Record<string, unknown>;
  effective_input?: Record<string, unknown>;
  decision?: Decision | string;
  decision_source?: string;
  policy?: 'allow' | 'gate' | 'deny' | string;
  policy_rule?: string;
  status?: 'ok' | 'error' | 'not_run' | string;
  error?: string;
  duration_ms?: number;
  note?: string;
}

export interface Message {
  id: string;
  chat_id: string;
  seq: number;
  turn_id?: string;
  role: 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  tool_name?: string;
  tool?: ToolOutcome;
  created_at: string;
  /** The model's reasoning before an assistant message (shown collapsed;
   * never sent back to the model). Absent when there was none. */
  reasoning?: string;
  /** How long the reasoning streamed, first to last delta; absent when unknown. */
  reasoning_ms?: number;
}

export interface TurnError {
  code: string;
  message: string;
}

export interface TurnResult {
  turn_id: string;
  chat_id: string;
  ok: boolean;
  aborted?: boolean;
  message_id?: string;
  text?: string;
  steps?: number;
  step_limit_hit?: boolean;
  error?: TurnError;
}

export interface JSONSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JSONSchema>;
  required?: string[];
  enum?: unknown[];
  items?: JSONSchema;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  format?: string;
}

export interface ApprovalRequest {
  id: string;
  kind: 'approval' | 'question';
  chat_id: string;
  turn_id?: string;
  call_id?: string;
  tool?: string;
  args?: Record<string, unknown>;
  risk?: string;
  preview?: string;
  /** Unified diff of the change, for tools that edit text (wiki_write, wiki_edit). */
  diff?: string;
  reason?: string;
  schema?: JSONSchema;
  question?: string;
  choices?: string[];
  /** Untrusted content this turn read before the call was proposed. */
  tainted_by?: TaintSource[];
  /**
   * What started the call when it is not the chat the card is shown in
   * ("watch 3 (train 9612)", "Action Center item 12: …", "MCP client …").
   */
  origin?: string;
  /** The user's pre-approval the call matched, which could not lift this gate. */
  grant?: string;
  created_at: string;
  expires_at?: string;
}

/** One untrusted read that tainted a turn (internal/taint.Source). */
export interface TaintSource {
  tool: string;
  detail?: string;
  call_id?: string;
  at?: string;
}

/** One model budget cap (internal/budget.Cap). */
export interface BudgetCap {
  period: 'day' | 'month' | string;
  metric: 'cost_usd' | 'tokens' | string;
  limit: number;
  used: number;
  percent: number;
  state: 'ok' | 'warning' | 'exceeded' | string;
  since?: string;
  resets?: string;
}

/** GET /api/budget (internal/budget.Status). */
export interface BudgetStatus {
  enabled: boolean;
  warn_percent?: number;
  caps: BudgetCap[];
  day?: { cost_usd: number; tokens: number };
  month?: { cost_usd: number; tokens: number };
}

export type ApprovalDecision =
  | { decision: 'approve'; mode?: 'allow_10m' | 'allow_chat' }
  | { decision: 'edit'; args: Record<string, unknown> }
  | { decision: 'deny'; note?: string }
  | { decision: 'revise'; note: string }
  | { decision: 'answer'; answer: string };

export interface Resolution {
  id: string;
  kind?: string;
  decision: string;
  note?: string;
}

export interface ToolInfo {
  name: string;
  description?: string;
  schema?: JSONSchema;
  risk?: string;
  read_only?: boolean;
  parallel_safe?: boolean;
  untrusted_output?: boolean;
  available?: boolean;
  unavailable_reason?: string;
  decision?: string;
  decision_source?: string;
}

export interface AuditEvent {
  id: number;
  ts: string;
  type: string;
  chat_id?: string;
  turn_id?: string;
  tool?: string;
  summary: string;
  data?: unknown;
  prev_hash?: string;
  hash?: string;
}

export interface StreamEvent {
  seq?: number;
  type: string;
  ts?: string;
  chat_id?: string;
  data: any;
}

/** GET /api/chats/{id}/status: the running turn and the messages waiting
 * behind it (sent with "queue" while an approval waits). */
export interface ChatStatus {
  running: boolean;
  turn_id?: string;
  queued?: number;
  queued_turns?: { turn_id: string; text: string }[];
}
