import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Per generated line: segments [generated column, source index, source line, source column], all 0-based. */
function decodeMappings(mappings: string): number[][][] {
  const lines: number[][][] = [];
  const state = [0, 0, 0, 0];
  for (const line of mappings.split(';')) {
    state[0] = 0;
    const segments: number[][] = [];
    for (const text of line.split(',')) {
      if (text === '') continue;
      const values: number[] = [];
      let value = 0;
      let shift = 0;
      for (const char of text) {
        const digit = BASE64.indexOf(char);
        value += (digit & 31) << shift;
        shift += 5;
        if ((digit & 32) === 0) {
          values.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      values.forEach((delta, i) => (state[i] = (state[i] ?? 0) + delta));
      if (values.length >= 4) segments.push([...state]);
    }
    lines.push(segments);
  }
  return lines;
}

const cache = new Map<string, ((line: number, column: number) => { source: string; line: number } | undefined) | undefined>();

/** Maps a 0-based position in a compiled file to its source file and 1-based line, through `FILE.map`. */
export function originalPosition(file: string, line: number, column: number): { source: string; line: number } | undefined {
  if (!cache.has(file)) {
    const mapFile = `${file}.map`;
    if (!existsSync(mapFile)) cache.set(file, undefined);
    else {
      const map = JSON.parse(readFileSync(mapFile, 'utf8')) as { sources: string[]; mappings: string };
      const decoded = decodeMappings(map.mappings);
      cache.set(file, (l, c) => {
        const segments = decoded[l] ?? [];
        const segment = [...segments].reverse().find((s) => (s[0] ?? 0) <= c) ?? segments[0];
        if (!segment) return undefined;
        return { source: resolve(dirname(file), map.sources[segment[1] ?? 0] ?? ''), line: (segment[2] ?? 0) + 1 };
      });
    }
  }
  return cache.get(file)?.(line, column);
}
