// @vitest-environment jsdom
// DOMPurify is tested on jsdom, the DOM its own test suite uses; happy-dom
// differs in details of attribute and namespace handling.

import { describe, expect, it } from 'vitest';
import { renderMarkdown } from '../src/components/Markdown';

describe('renderMarkdown', () => {
  it('renders common Markdown', () => {
    const html = renderMarkdown('# Title\n\n**bold** and `code`\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |');
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<code>code</code>');
    expect(html).toContain('<li>a</li>');
    expect(html).toContain('<table>');
  });

  it.each([
    ['<script>alert(1)</script>', '<script'],
    ['<img src=x onerror=alert(1)>', 'onerror'],
    ['<img src="https://tracker.example/p.gif">', '<img'],
    ['[x](javascript:alert(1))', 'javascript:'],
    ['<a href="javascript:alert(1)">x</a>', 'javascript:'],
    ['<iframe src="https://evil.example"></iframe>', '<iframe'],
    ['<div style="position:fixed;inset:0">fake</div>', 'style='],
    ['<form action="https://evil.example"><button>Approve</button></form>', '<form'],
    ['<svg><script>alert(1)</script></svg>', '<svg'],
    ['<p onclick="alert(1)">x</p>', 'onclick'],
  ])('removes dangerous markup: %s', (src, bad) => {
    expect(renderMarkdown(src).toLowerCase()).not.toContain(bad);
  });

  it('opens safe links in a new tab without a referrer', () => {
    const html = renderMarkdown('[docs](https://example.com/a)');
    expect(html).toContain('href="https://example.com/a"');
    expect(html).toContain('target="_blank"');
    expect(html).toContain('rel="noopener noreferrer nofollow"');
  });

  it('renders partial Markdown while streaming', () => {
    expect(() => renderMarkdown('```js\nconst a = ')).not.toThrow();
    expect(renderMarkdown('**unfinished')).toContain('unfinished');
  });
});
