import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirmPrompt } from '../../../src/cli/confirm-prompt.js';

/** Asks with `typed` as the terminal input; returns the answer and what was shown. */
async function ask(typed: string | null): Promise<{ yes: boolean; shown: string }> {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (chunk: Buffer) => (shown += chunk.toString()));
  const answer = confirmPrompt('Purge 3 messages from cr.dead? [y/N] ', input, output);
  if (typed === null) input.end();
  else input.write(typed);
  return { yes: await answer, shown };
}

describe('confirmPrompt', () => {
  it('asks the question and takes only y or yes as yes', async () => {
    expect(await ask('y\n')).toEqual({ yes: true, shown: 'Purge 3 messages from cr.dead? [y/N] ' });
    expect((await ask('YES\n')).yes).toBe(true);
    expect((await ask(' yes \n')).yes).toBe(true);
    for (const typed of ['\n', 'n\n', 'no\n', 'yep\n', 'purge\n']) expect((await ask(typed)).yes).toBe(false);
  });

  it('treats end of input (Ctrl-D) as no', async () => {
    expect((await ask(null)).yes).toBe(false);
  });
});
