import { describe, expect, it } from 'vitest';
import { keyRows, type ShardKeys } from '../../../src/console/ordered-shards.js';
import { orderedKeysPage, shellWord } from '../../../src/console/pages/ordered-keys-page.js';
import { replay, type LogRecord } from '../../../src/policy/key-log.js';

const HOSTILE = '<script>window.__xss = 1</script>';

/** A shard's log as its owner w2 left it (w1 wrote before w2's claim; w1's late records are fenced off). */
const LOG: LogRecord[] = [
  { kind: 'claim', owner: 'w1' },
  { kind: 'hold', owner: 'w1', key: 'order-17', head: 'cb-a' },
  { kind: 'follower', owner: 'w1', key: 'order-17', id: 'cb-b' },
  { kind: 'claim', owner: 'w2' },
  { kind: 'release', owner: 'w1', key: 'order-17', head: 'cb-a' },
  { kind: 'follower', owner: 'w2', key: 'order-17', id: 'cb-c' },
  { kind: 'stop', owner: 'w2', key: HOSTILE, head: 'cb-"x"' },
  { kind: 'follower', owner: 'w2', key: HOSTILE, id: 'cb-y' },
  { kind: 'hold', owner: 'w2', key: 'gone', head: 'cb-g' },
  { kind: 'release', owner: 'w2', key: 'gone', head: 'cb-g' },
  { kind: 'hold', owner: 'w2', key: 'back', head: 'cb-k' },
  { kind: 'follower', owner: 'w2', key: 'back', id: 'cb-l' },
  { kind: 'release', owner: 'w2', key: 'back', head: 'cb-k' },
];

const shard = (n: number, rest: Partial<ShardKeys> = {}): ShardKeys => ({
  shard: n,
  queue: `p.ordered.${n}`,
  stream: `p.ordered.log.${n}`,
  keys: [],
  ...rest,
});

describe('Ordered keys', () => {
  const rows = keyRows(replay(LOG.map((record, offset) => ({ offset, record }))));

  it("a shard's rows from its replayed log: stopped first, then held, then moving on; released keys are gone", () => {
    expect(rows).toEqual([
      { key: HOSTILE, head: 'cb-"x"', state: 'stopped', logged: 1 },
      { key: 'order-17', head: 'cb-a', state: 'held', logged: 2 },
      { key: 'back', state: 'draining', logged: 1 },
    ]);
  });

  it('shows each held key with its head, its state and what waits behind it; a key holding <script> is text', () => {
    const text = orderedKeysPage({ title: 'Ordered keys', current: 'ordered', operator: 'alice' }, [
      shard(0, { keys: rows }),
      shard(1),
    ]).text;
    expect(text).toMatch(/id="held">1</);
    expect(text).toMatch(/id="stopped">1</);
    expect(text).toMatch(/id="logged">4</);
    expect(text).not.toContain(HOSTILE);
    expect(text).not.toMatch(/<script/);
    expect(text).toContain('<td class="key">&lt;script&gt;window.__xss = 1&lt;/script&gt;</td>');
    expect(text).toContain('data-key="&lt;script&gt;window.__xss = 1&lt;/script&gt;"');
    // Stopped: what to do about it, the command with the key as one shell word.
    const stopped = /<tr data-key="&lt;script[^]*?<\/tr>/.exec(text)?.[0] ?? '';
    expect(stopped).toContain('stopped</span> — replay its <a href="/dead-letters?id=cb-%22x%22">dead letter</a> or run');
    expect(stopped).toContain('<code>callback-relay ordered release &#39;&lt;script&gt;window.__xss = 1&lt;/script&gt;&#39;</code>');
    expect(stopped).toContain('<a href="/callback?id=cb-%22x%22">cb-&quot;x&quot;</a>');
    const held = /<tr data-key="order-17"[^]*?<\/tr>/.exec(text)?.[0] ?? '';
    expect(held).toContain('<span class="badge held">held</span>');
    expect(held).toContain('<td class="num logged">2</td>');
    // The shard without a key is counted, not listed; the page has no form but the logout.
    expect(text).toContain('data-shard="0"');
    expect(text).not.toContain('data-shard="1"');
    expect(text).toContain('1 of 2 shard(s) hold no key');
    expect(text.match(/<form /g)).toHaveLength(1);
    expect(text).toContain('<a href="/ordered-keys" class="current">Ordered keys</a>');
  });

  it('says which shard could not be read, escaped, and shows the others', () => {
    const text = orderedKeysPage({ title: 'Ordered keys' }, [
      shard(0, { error: `[CR_ERR_LOG_MISSING] the order log stream "p.ordered.log.0" does not exist ${HOSTILE}` }),
      shard(1, { keys: [{ key: 'k', head: 'cb-1', state: 'held', logged: 0 }] }),
    ]).text;
    expect(text).toContain(
      '<p class="notice error">Its log could not be read: [CR_ERR_LOG_MISSING] the order log stream &quot;p.ordered.log.0&quot;',
    );
    expect(text).not.toContain(HOSTILE);
    expect(text).toContain('data-shard="1"');
    const empty = orderedKeysPage({ title: 'Ordered keys' }, [shard(0), shard(1)]).text;
    expect(empty).toContain('<p class="empty">No key is held.</p>');
    expect(empty).toMatch(/id="held">0</);
  });

  it('quotes a key for the shell unless it is plainly one word', () => {
    expect(shellWord('order-17')).toBe('order-17');
    expect(shellWord('tenant:42/a.b')).toBe('tenant:42/a.b');
    expect(shellWord('a b')).toBe("'a b'");
    expect(shellWord("it's $HOME")).toBe(`'it'\\''s $HOME'`);
  });
});
