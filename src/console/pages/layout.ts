import { html, type Html } from '../html.js';

export interface PageFrame {
  title: string;
  /** Who is logged in; `undefined` on the login page. */
  operator?: string | undefined;
  /** The session's CSRF token: every form of the page carries it. */
  csrf?: string | undefined;
  /** Which navigation entry is current. */
  current?: 'overview' | 'targets' | 'dead' | 'ordered' | 'callback' | undefined;
  /** Seconds after which the page reloads itself (a meta refresh: no script needed). */
  refreshSeconds?: number | undefined;
  /** A notice above the content (an action's result, a missing stream). */
  notice?: { text: string; kind: 'ok' | 'warn' | 'error' } | undefined;
  /** Scripts of /assets to load (no inline script: the Content-Security-Policy forbids it). */
  scripts?: string[] | undefined;
  styles?: string[] | undefined;
}

const NAV: Array<[NonNullable<PageFrame['current']>, string, string]> = [
  ['overview', '/', 'Overview'],
  ['targets', '/targets', 'Targets'],
  ['dead', '/dead-letters', 'Dead letters'],
  ['ordered', '/ordered-keys', 'Ordered keys'],
  ['callback', '/callback', 'Callback'],
];

/** The hidden field every action form carries (checked on POST). */
export const csrfField = (csrf: string | undefined): Html => html`<input type="hidden" name="csrf" value="${csrf ?? ''}">`;

/** A one-button POST form: every action is a POST with the CSRF token. */
export function actionButton(action: string, fields: Record<string, string>, label: string, csrf: string | undefined, kind = ''): Html {
  return html`<form method="post" action="${action}" class="inline">${csrfField(csrf)}${Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}<button type="submit" class="${kind}">${label}</button></form>`;
}

/** The whole document around a page's content. */
export function layout(frame: PageFrame, content: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${frame.refreshSeconds === undefined ? '' : html`<meta http-equiv="refresh" content="${frame.refreshSeconds}">`}
<title>${frame.title} · callback-relay console</title>
<link rel="stylesheet" href="/assets/console.css">
${(frame.styles ?? []).map((href) => html`<link rel="stylesheet" href="${href}">`)}
</head>
<body>
<header>
  <span class="brand">callback-relay</span>
  ${
    frame.operator === undefined
      ? ''
      : html`<nav>${NAV.map(([key, path, label]) => html`<a href="${path}" class="${key === frame.current ? 'current' : ''}">${label}</a>`)}</nav>
  <span class="who">${frame.operator} ${actionButton('/logout', {}, 'Log out', frame.csrf, 'link')}</span>`
  }
</header>
<main>
<h1>${frame.title}</h1>
${frame.notice === undefined ? '' : html`<p class="notice ${frame.notice.kind}" role="status">${frame.notice.text}</p>`}
${content}
</main>
${(frame.scripts ?? []).map((src) => html`<script src="${src}"></script>`)}
</body>
</html>`;
}

/** Milliseconds as the pages show them. */
export const ms = (value: number | null): string => (value === null ? '–' : `${Math.round(value)} ms`);
/** A fraction as a percentage. */
export const percent = (value: number | null): string => (value === null ? '–' : `${(value * 100).toFixed(1)} %`);
