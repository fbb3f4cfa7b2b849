// Syntax highlighting of code (a reply's fenced blocks, the lines of a
// diff): Prism (window.Prism, src/web/vendor/prism-*.min.js, core and a
// few languages, loaded as classic scripts before the modules) splits a
// text into tokens; this module draws them as <span class="token KIND">
// elements whose colours style.css gives, for light and dark mode.
//
// Never: put text into the page as HTML (every token is a text node: no
// markup is made or parsed here), nor set a style attribute (the page's
// CSP forbids inline styles; colours come from classes only).

/** Names a fence's info string or a file's extension may use, to Prism's. */
const ALIASES = {
  js: 'javascript', mjs: 'javascript', cjs: 'javascript', jsx: 'javascript', node: 'javascript',
  ts: 'typescript', tsx: 'typescript',
  sh: 'bash', shell: 'bash', zsh: 'bash', console: 'bash', shellsession: 'bash',
  py: 'python', python3: 'python',
  rs: 'rust',
  golang: 'go',
  yml: 'yaml',
  html: 'markup', xml: 'markup', svg: 'markup', htm: 'markup',
  jsonc: 'json', json5: 'json',
  c: 'clike', h: 'clike', cpp: 'clike', cc: 'clike', hpp: 'clike', java: 'clike', cs: 'clike',
};

/** Prism, when its script loaded. */
function prism() {
  const p = window.Prism;
  return p && p.languages && typeof p.tokenize === 'function' ? p : null;
}

/** Prism's name for a fence's language (`rs`, `Rust`), or null when it has no grammar for it. */
export function languageOf(name) {
  const p = prism();
  if (!p || !name) return null;
  const key = String(name).toLowerCase();
  const lang = ALIASES[key] || key;
  return Object.prototype.hasOwnProperty.call(p.languages, lang) && typeof p.languages[lang] === 'object' ? lang : null;
}

/** The language of a file by its extension (`src/main.rs`: rust), or null. */
export function languageOfPath(path) {
  const match = /\.([A-Za-z0-9]+)$/.exec(String(path || ''));
  if (match) return languageOf(match[1]);
  return /(^|\/)(Makefile|Dockerfile)$/.test(String(path || '')) ? languageOf('bash') : null;
}

/** Prism's tokens as nodes: text nodes, and spans classed `token KIND [ALIAS...]`. */
function tokenNodes(tokens) {
  const nodes = [];
  for (const token of tokens) {
    if (typeof token === 'string') {
      nodes.push(document.createTextNode(token));
      continue;
    }
    const span = document.createElement('span');
    const aliases = Array.isArray(token.alias) ? token.alias : token.alias ? [token.alias] : [];
    span.className = ['token', token.type, ...aliases].filter((c) => /^[\w-]+$/.test(c)).join(' ');
    const content = Array.isArray(token.content) ? token.content : [token.content];
    span.append(...tokenNodes(content));
    nodes.push(span);
  }
  return nodes;
}

/**
 * `text` as highlighted nodes in `lang` (Prism's name, see languageOf):
 * an array of nodes, or null when there is no such grammar (the caller
 * keeps the plain text).
 */
export function highlightedNodes(text, lang) {
  const p = prism();
  if (!p || !lang || !p.languages[lang]) return null;
  try {
    return tokenNodes(p.tokenize(String(text), p.languages[lang]));
  } catch (_) {
    return null;
  }
}

/** Replace `node`'s children with `text` highlighted in `lang`; plain text when it cannot be. */
export function highlightInto(node, text, lang) {
  const nodes = highlightedNodes(text, lang);
  if (nodes) node.replaceChildren(...nodes);
  else node.textContent = text;
}
