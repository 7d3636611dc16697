import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configTable } from '../../../src/config/config-table.js';
import { configSchema } from '../../../src/config/schema.js';

const page = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');

describe('docs/configuration.md settings table', () => {
  it('is the one generated from the schema (run: npm run docs:config -- --write)', () => {
    const start = page.indexOf('<!-- config-table:start');
    const end = page.indexOf('<!-- config-table:end -->');
    const table = page.slice(page.indexOf('\n', start) + 1, end).trim();
    expect(table).toBe(configTable());
  });

  it('lists every setting with an env var and a doc string', () => {
    for (const [key, entry] of Object.entries(configSchema)) {
      expect(entry.env, key).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(entry.doc.length, key).toBeGreaterThan(10);
      expect(configTable()).toContain(`| \`${entry.env}\` |`);
    }
  });
});

describe("README's settings summary", () => {
  it('names real settings with the defaults the schema gives them', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Settings\n'), readme.indexOf('\n## ', readme.indexOf('\n## Settings\n') + 1));
    const generated = new Map(
      configTable()
        .split('\n')
        .slice(2)
        .map((row) => {
          const [env = '', value = ''] = row.split(' | ').map((cell) => cell.replace(/^\| /, '').replaceAll('`', ''));
          return [env, value];
        }),
    );
    const rows = section.split('\n').filter((line) => line.startsWith('| `'));
    expect(rows.length).toBeGreaterThanOrEqual(10);
    for (const row of rows) {
      const [envs = '', values = ''] = row.slice(2).split(' | ');
      const names = envs.replaceAll('`', '').split(' / ');
      const defaults = values.replaceAll('`', '').split(' / ');
      expect(defaults, row).toHaveLength(names.length);
      names.forEach((name, i) => expect(defaults[i], name).toBe(generated.get(name)));
    }
  });
});
