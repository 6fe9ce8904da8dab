// Markdown from the model, rendered safely: marked turns it into HTML and
// DOMPurify removes everything that could run code, load remote content or
// fake the UI (scripts, event handlers, styles, forms, images, iframes).
// Code blocks then get a header with their language and a Copy button, and
// are highlighted by lib/highlight, loaded only when a reply needs it.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { useContext, useEffect, useMemo, useRef } from 'preact/hooks';
import { AppContext } from '../context';

const marked = new Marked({ gfm: true, breaks: true, async: false });

/** A fence's language as marked writes it: class="language-x". */
const languageClass = /^language-([a-z0-9_+#.-]{1,32})$/i;

let purifier: ReturnType<typeof DOMPurify> | null = null;

function purify() {
  if (purifier) return purifier;
  const p = DOMPurify(window);
  p.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      const href = node.getAttribute('href') ?? '';
      if (!/^(https?:|mailto:)/i.test(href)) {
        node.removeAttribute('href');
      } else {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer nofollow');
      }
    }
  });
  // Classes are refused everywhere (a reply must not borrow the UI's look),
  // except a code element's language, which decorate() turns into a label.
  p.addHook('uponSanitizeAttribute', (node, data) => {
    if (data.attrName === 'class' && node.tagName === 'CODE' && languageClass.test(data.attrValue)) {
      data.forceKeepAttr = true;
    }
  });
  purifier = p;
  return p;
}

export function renderMarkdown(src: string): string {
  const html = marked.parse(src) as string;
  const clean = purify().sanitize(html, {
    FORBID_TAGS: ['style', 'img', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'svg', 'math'],
    FORBID_ATTR: ['style', 'class', 'id'],
    ALLOW_DATA_ATTR: false,
  });
  return clean.includes('<pre') ? decorate(clean) : clean;
}

/** Wraps each sanitised code block in a header with its language label and a
 * Copy button. Everything added here is built by this code, never parsed
 * from the reply; the language is the checked class value. */
function decorate(html: string): string {
  const t = document.createElement('template');
  t.innerHTML = html;
  for (const pre of t.content.querySelectorAll('pre')) {
    const code = pre.querySelector(':scope > code');
    let lang = '';
    if (code) {
      const m = languageClass.exec(code.getAttribute('class') ?? '');
      code.removeAttribute('class');
      if (m) {
        lang = m[1].toLowerCase();
        code.setAttribute('data-lang', lang);
      }
    }
    const box = document.createElement('div');
    box.className = 'codeblock';
    const head = document.createElement('div');
    head.className = 'codeblock-head';
    const label = document.createElement('span');
    label.className = 'code-lang';
    label.textContent = lang || 'text';
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'code-copy';
    copy.textContent = 'Copy';
    copy.setAttribute('aria-label', `Copy ${lang || 'code'}`);
    head.append(label, copy);
    pre.replaceWith(box);
    box.append(head, pre);
  }
  return t.innerHTML;
}

type Highlighter = typeof import('../lib/highlight');
let highlighter: Promise<Highlighter> | null = null;

/** Loads the highlighter once; later calls share the same promise. */
export function loadHighlighter(): Promise<Highlighter> {
  highlighter ??= import('../lib/highlight');
  return highlighter;
}

export function Markdown({ text, streaming }: { text: string; streaming?: boolean }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  const ref = useRef<HTMLDivElement>(null);
  const app = useContext(AppContext);
  useEffect(() => {
    // Highlight settled text only: a streaming block changes every delta.
    const el = ref.current;
    if (streaming || !el || !el.querySelector('pre > code[data-lang]')) return;
    let live = true;
    loadHighlighter().then(
      (h) => live && h.highlightAll(el),
      () => {}, // offline without the chunk: the blocks stay plain
    );
    return () => {
      live = false;
    };
  }, [html, streaming]);
  return (
    <div
      ref={ref}
      class={'md' + (streaming ? ' md-streaming' : '')}
      onClick={(e) => {
        const btn = (e.target as HTMLElement).closest?.('.code-copy');
        const code = btn?.closest('.codeblock')?.querySelector('pre code');
        if (!btn || !code) return;
        const text = code.textContent ?? '';
        if (app) void app.copyText(text, 'Code');
        else void navigator.clipboard?.writeText(text).catch(() => {});
      }}
      // Sanitised, then decorated with our own elements; see renderMarkdown.
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}
