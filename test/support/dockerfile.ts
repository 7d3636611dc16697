/**
 * Dockerfiles read as Docker reads them, for tests that check or run what they say: instructions
 * with comments dropped and continuations joined, build stages, ARG defaults.
 */

export interface Instruction {
  keyword: string;
  args: string;
}

/** Instructions in order; comment lines dropped and `\` continuations joined (as Docker does). */
export function instructionsOf(text: string): Instruction[] {
  const lines = text.split(/\r?\n/).filter((line) => !/^\s*#/.test(line));
  const logical: string[] = [];
  let current = '';
  for (const line of lines) {
    if (/\\\s*$/.test(line)) {
      current += `${line.replace(/\\\s*$/, '')} `;
    } else {
      current += line;
      if (current.trim() !== '') logical.push(current.trim());
      current = '';
    }
  }
  if (current.trim() !== '') logical.push(current.trim());
  return logical.map((line) => {
    const match = /^(\S+)\s*(.*)$/s.exec(line);
    return { keyword: (match?.[1] ?? '').toUpperCase(), args: match?.[2] ?? '' };
  });
}

/** Instructions grouped per build stage (each starting at its FROM). */
export function stagesOf(instructions: Instruction[]): Instruction[][] {
  const stages: Instruction[][] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') stages.push([instruction]);
    else stages.at(-1)?.push(instruction);
  }
  return stages;
}

/** The image of a FROM instruction, flags such as --platform skipped. */
export function fromImage(from: Instruction): string {
  return from.args.split(/\s+/).find((word) => !word.startsWith('--')) ?? '';
}

/** ARG defaults (`ARG NAME=value`), substituted into `$NAME` / `${NAME}` by `expand`. */
export function argDefaults(instructions: Instruction[]): Record<string, string> {
  const args: Record<string, string> = {};
  for (const { keyword, args: text } of instructions) {
    const match = keyword === 'ARG' ? /^(\w+)=(\S*)/.exec(text) : null;
    if (match?.[1] !== undefined) args[match[1]] = (match[2] ?? '').replace(/^["']|["']$/g, '');
  }
  return args;
}

export const expand = (text: string, vars: Record<string, string>): string =>
  text.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced?: string, bare?: string) => vars[braced ?? bare ?? ''] ?? whole);

/** Source paths of a COPY/ADD (flags and the destination dropped); JSON (exec) form included. */
export function copySources(instruction: Instruction): string[] {
  const text = instruction.args.trim();
  const words = text.startsWith('[') ? (JSON.parse(text) as string[]) : text.split(/\s+/);
  const paths = words.filter((word) => !word.startsWith('--'));
  return paths.slice(0, -1);
}
