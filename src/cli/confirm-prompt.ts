import { createInterface } from 'node:readline/promises';

/**
 * Asks a yes/no question on the terminal; only `y` or `yes` (any case) means yes, so Enter, Ctrl-D
 * or anything else keeps the default "no". Callers check that stdin is a TTY first.
 */
export async function confirmPrompt(
  question: string,
  input: NodeJS.ReadableStream = process.stdin,
  output: NodeJS.WritableStream = process.stdout,
): Promise<boolean> {
  const terminal = createInterface({ input, output });
  try {
    const closed = new Promise<string>((resolve) => terminal.once('close', () => resolve('')));
    // Ctrl-D closes the interface without an answer; that, too, is a no.
    const answer = await Promise.race([terminal.question(question).catch(() => ''), closed]);
    return /^(y|yes)$/i.test(answer.trim());
  } finally {
    terminal.close();
  }
}
