/**
 * AMQP topic matching: `*` is exactly one word, `#` zero or more words. The binding key is split once,
 * so that a test matching many keys against the same bindings can keep the matcher.
 */
export function topicMatcher(bindingKey: string): (routingWords: readonly string[]) => boolean {
  const pattern = bindingKey.split('.');
  return (words) => {
    const match = (p: number, w: number): boolean => {
      if (p === pattern.length) return w === words.length;
      const part = pattern[p];
      if (part === '#') {
        for (let skip = w; skip <= words.length; skip += 1) if (match(p + 1, skip)) return true;
        return false;
      }
      if (w === words.length) return false;
      return (part === '*' || part === words[w]) && match(p + 1, w + 1);
    };
    return match(0, 0);
  };
}

export const topicMatches = (bindingKey: string, routingKey: string): boolean => topicMatcher(bindingKey)(routingKey.split('.'));
