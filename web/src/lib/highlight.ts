// Syntax highlighting for code blocks in replies. This module is loaded on
// demand (import() from components/Markdown) the first time a reply holds a
// fenced block with a language, so the initial bundle does not carry
// highlight.js. Only the core and a fixed set of common languages are
// registered; other languages stay plain text (their label still shows).
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import '../styles/code.css';

const languages = { bash, c, cpp, css, diff, go, ini, java, javascript, json, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);
// Model output never contains trusted HTML; highlight.js escapes the text it
// reads (textContent), and this keeps it from logging about "unescaped HTML".
hljs.configure({ ignoreUnescapedHTML: true });

/** Whether lang (a fence's info string, or an alias such as "sh", "ts",
 * "toml", "html") can be highlighted. */
export function known(lang: string): boolean {
  return !!hljs.getLanguage(lang);
}

/** Highlights every code block under root that names a known language and
 * is not highlighted yet; returns how many it highlighted. */
export function highlightAll(root: ParentNode): number {
  let n = 0;
  for (const code of root.querySelectorAll<HTMLElement>('pre > code[data-lang]')) {
    if (code.dataset.highlighted) continue;
    const lang = code.dataset.lang ?? '';
    if (!known(lang)) continue;
    const out = hljs.highlight(code.textContent ?? '', { language: lang, ignoreIllegals: true });
    // out.value is highlight.js's escaped HTML: the code's text in spans
    // whose only attribute is a class.
    code.innerHTML = out.value;
    code.classList.add('hljs');
    code.dataset.highlighted = 'yes';
    n++;
  }
  return n;
}
