// Markdown from the model, rendered safely: marked turns it into HTML and
// DOMPurify removes everything that could run code, load remote content or
// fake the UI (scripts, event handlers, styles, forms, images, iframes).
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { useMemo } from 'preact/hooks';

const marked = new Marked({ gfm: true, breaks: true, async: false });

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
  purifier = p;
  return p;
}

export function renderMarkdown(src: string): string {
  const html = marked.parse(src) as string;
  return purify().sanitize(html, {
    FORBID_TAGS: ['style', 'img', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'svg', 'math'],
    FORBID_ATTR: ['style', 'class', 'id'],
    ALLOW_DATA_ATTR: false,
  });
}

export function Markdown({ text, streaming }: { text: string; streaming?: boolean }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return (
    <div
      class={'md' + (streaming ? ' md-streaming' : '')}
      // Sanitised above; see renderMarkdown.
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}
