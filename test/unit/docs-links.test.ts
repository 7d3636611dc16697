import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Keeps the documentation honest: every relative link and #anchor in README.md, docs/, bench/README.md
 * and chaos/README.md resolves, every page is one click from README, and no heading is broken.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const markdownUnder = (dir: string): string[] =>
  readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return markdownUnder(path);
    return name.endsWith('.md') ? [path] : [];
  });
const PAGES = ['README.md', 'bench/README.md', 'chaos/README.md', ...markdownUnder('docs')];

/** The lines outside fenced code blocks, with inline code blanked out (links there are not links). */
function prose(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, '``');
  });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    for (const match of line.matchAll(/<a (?:id|name)="([^"]+)"/g)) found.add(match[1]!);
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\- _]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    found.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return found;
}

/** Every `[text](target)` and `![alt](target)` of a page's prose that is not an absolute URL. */
function relativeLinks(text: string): string[] {
  return prose(text).flatMap((line) =>
    [...line.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
      .map((match) => match[1]!)
      .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target)),
  );
}

const read = (page: string): string => readFileSync(join(ROOT, page), 'utf8');

describe('documentation links', () => {
  it.each(PAGES)('every relative link and anchor in %s resolves', (page) => {
    const broken: string[] = [];
    for (const target of relativeLinks(read(page))) {
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURIComponent(path));
      if (!existsSync(file)) broken.push(`${target}: no such file`);
      else if (anchor !== undefined && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor))
        broken.push(`${target}: no such anchor`);
    }
    expect(broken).toEqual([]);
  });

  it.each(PAGES)('%s has no heading that renders as text (a # without a space)', (page) => {
    expect(prose(read(page)).filter((line) => /^#+[^#\s]/.test(line))).toEqual([]);
  });

  it('every page is linked from README.md', () => {
    const linked = new Set(relativeLinks(read('README.md')).map((target) => relative(ROOT, resolve(ROOT, target.split('#')[0]!))));
    expect(PAGES.filter((page) => page !== 'README.md' && !linked.has(page))).toEqual([]);
  });
});

describe('the anchor rule', () => {
  it('matches GitHub for the headings these pages use', () => {
    const slugs = anchors(
      '## Wire contract (publishing from any language)\n### Delay modes: plugin or queues\n#### Deduplicate on `webhook-id`\n## Tests\n## Tests\n<a id="at-most-once-hops"></a>',
    );
    expect([...slugs]).toEqual([
      'wire-contract-publishing-from-any-language',
      'delay-modes-plugin-or-queues',
      'deduplicate-on-webhook-id',
      'tests',
      'tests-1',
      'at-most-once-hops',
    ]);
  });
});
