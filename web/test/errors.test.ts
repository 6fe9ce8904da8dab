import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/api/client';
import { errText, responseErrorText } from '../src/lib/errors';

describe('errText', () => {
  it.each([
    ['an ApiError gives the daemon message', new ApiError(400, 'bad_request', 'name: required'), 'name: required'],
    ['a network ApiError gives its message', new ApiError(0, 'network', 'Cannot reach the Hestia daemon. Is it running?'), 'Cannot reach the Hestia daemon. Is it running?'],
    ['an Error gives its message without the class name', new TypeError('x is not a function'), 'x is not a function'],
    ['an object with a message gives the message', { message: 'plain' }, 'plain'],
    ['a string is itself', 'went wrong', 'went wrong'],
    ['a number is its text', 42, '42'],
    ['null is named', null, 'null'],
    ['undefined is named', undefined, 'undefined'],
    ['an object without a message is its text', {}, '[object Object]'],
  ])('%s', (_, e, want) => {
    expect(errText(e)).toBe(want);
  });
});

describe('responseErrorText', () => {
  const res = (body: string, status: number, type = 'application/json') => new Response(body, { status, headers: { 'Content-Type': type } });

  it('gives the daemon error message from the JSON body', async () => {
    expect(await responseErrorText(res('{"error":{"code":"unavailable","message":"no tts tier is configured"}}', 503), 'speech failed')).toBe('no tts tier is configured');
  });

  it.each([
    ['a body that is not JSON', res('upstream timed out', 502, 'text/plain'), 'speech failed (502)'],
    ['an empty body', res('', 500), 'speech failed (500)'],
    ['JSON without an error', res('{"ok":false}', 400), 'speech failed (400)'],
    ['an empty message', res('{"error":{"message":""}}', 400), 'speech failed (400)'],
    ['a message that is not text', res('{"error":{"message":7}}', 400), 'speech failed (400)'],
    ['JSON null', res('null', 500), 'speech failed (500)'],
  ])('falls back to the status for %s', async (_, r, want) => {
    expect(await responseErrorText(r, 'speech failed')).toBe(want);
  });
});
