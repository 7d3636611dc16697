/**
 * Text from outside (a callback's URL, an error text, a header) made safe for an operator's terminal:
 * C0 and C1 control characters become spaces, so escape sequences cannot move the cursor, recolour
 * the terminal or hide what else the line says.
 */
export const printable = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
