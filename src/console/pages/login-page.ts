import { html, type Html } from '../html.js';
import { layout } from './layout.js';

/** The login form: the token is posted once and exchanged for an HttpOnly session cookie. */
export function loginPage(failed: boolean, next: string): Html {
  return layout(
    { title: 'Log in', ...(failed && { notice: { text: 'That token is not one of CONSOLE_TOKENS.', kind: 'error' as const } }) },
    html`<form method="post" action="/login" class="login">
  <input type="hidden" name="next" value="${next}">
  <label>Token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
  <button type="submit">Log in</button>
</form>
<p class="hint">A token of CONSOLE_TOKENS. Scripts may send <code>Authorization: Bearer &lt;token&gt;</code> instead.</p>`,
  );
}
