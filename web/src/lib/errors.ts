// What a failure says to the user: one place for the pages and components,
// so the same error reads the same everywhere.
import { ApiError } from '../api/client';

/** The text for a caught failure: the daemon's message for an ApiError, an
 * Error's message, else the value itself as text. */
export function errText(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  return String((e as { message?: unknown } | null | undefined)?.message ?? e);
}

/** The text for a failed raw fetch (audio endpoints, read outside Client):
 * the daemon's {error: {message}} when the body has one, else
 * "fallback (status)". */
export async function responseErrorText(res: Response, fallback: string): Promise<string> {
  try {
    const b = await res.json();
    const m = b?.error?.message;
    if (typeof m === 'string' && m) return m;
  } catch {
    // not JSON: the status says what little is known
  }
  return `${fallback} (${res.status})`;
}
