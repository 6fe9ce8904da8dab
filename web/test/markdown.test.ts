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

describe('code blocks', () => {
  it('get a language label and a Copy button, and keep only a checked language', () => {
    const t = document.createElement('div');
    t.innerHTML = renderMarkdown('```python\ndef f():\n    return "<b>x</b>"\n```');
    const code = t.querySelector('.codeblock pre > code') as HTMLElement;
    expect(code.getAttribute('data-lang')).toBe('python');
    expect(code.hasAttribute('class')).toBe(false);
    expect(code.textContent).toBe('def f():\n    return "<b>x</b>"\n');
    expect(t.querySelector('.code-lang')?.textContent).toBe('python');
    expect(t.querySelector('button.code-copy')?.getAttribute('aria-label')).toBe('Copy python');
    // No language: labelled "text".
    t.innerHTML = renderMarkdown('```\nplain\n```');
    expect(t.querySelector('.code-lang')?.textContent).toBe('text');
    expect(t.querySelector('pre > code')?.hasAttribute('data-lang')).toBe(false);
  });

  it.each([
    '<pre><code class="language-js x-evil">a</code></pre>',
    '<pre><code class="hljs-keyword">a</code></pre>',
    '<p class="language-js">a</p>',
    '<pre><code class="language-js" onclick="alert(1)" data-lang="x">a</code></pre>',
  ])('refuses classes and attributes a reply tries to smuggle: %s', (src) => {
    const html = renderMarkdown(src);
    expect(html).not.toContain('x-evil');
    expect(html).not.toContain('class="hljs');
    expect(html).not.toContain('<p class');
    expect(html).not.toContain('onclick');
    expect(html).not.toContain('data-lang="x"');
  });

  it('highlights known languages from the lazily loaded module, text unchanged', async () => {
    const { highlightAll } = await import('../src/lib/highlight');
    const t = document.createElement('div');
    t.innerHTML = renderMarkdown('```go\nfunc main() { return }\n```\n\n```klingon\nqapla\n```');
    const before = [...t.querySelectorAll('pre code')].map((c) => c.textContent);
    expect(highlightAll(t)).toBe(1);
    expect(highlightAll(t)).toBe(0); // once only
    const [go, other] = t.querySelectorAll('pre code');
    expect(go.querySelector('.hljs-keyword')?.textContent).toBe('func');
    expect(other.querySelector('span')).toBeNull();
    expect([...t.querySelectorAll('pre code')].map((c) => c.textContent)).toEqual(before);
  });
});
