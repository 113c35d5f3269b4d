import { describe, expect, it } from 'vitest';
import { jsonNestingTooDeep } from '../../sync-server/app.ts';

/** The body check's meaning, a character at a time: a backslash in a string escapes the next
 * character, brackets in strings do not count. */
function reference(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (++depth > max) return true;
    } else if (c === '}' || c === ']') depth--;
  }
  return false;
}

describe('the request body nesting check', () => {
  it('counts brackets outside strings only, whatever the escapes before a quote', () => {
    expect(jsonNestingTooDeep('[[["]]]]]]"]]]', 3)).toBe(false);
    expect(jsonNestingTooDeep('[[[["\\\\"]]]]', 3)).toBe(true);
    expect(jsonNestingTooDeep('["\\"[[[[[["]', 2)).toBe(false);
    expect(jsonNestingTooDeep('["\\\\\\"[[[[[["]', 2)).toBe(false);
    expect(jsonNestingTooDeep('["\\\\", [[[[["x"]]]]]]', 2)).toBe(true);
    expect(jsonNestingTooDeep('{"a":"unterminated [[[[[[', 2)).toBe(false);
    expect(jsonNestingTooDeep(JSON.stringify({ rows: [{ a: 'x\\"{{{{', b: '\\' }] }), 3)).toBe(false);
  });

  it('answers as a character-by-character reading does, on random text of quotes, backslashes and brackets', () => {
    const pieces = ['"', '\\', '\\\\', '\\"', '[', ']', '{', '}', 'a', ',', ':', '"x"', ' '];
    let seed = 11;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    let deep = 0;
    for (let i = 0; i < 20_000; i++) {
      const text = Array.from({ length: Math.floor(next() * 30) }, () => pieces[Math.floor(next() * pieces.length)]).join('');
      const max = Math.floor(next() * 4);
      const want = reference(text, max);
      if (want) deep++;
      expect(jsonNestingTooDeep(text, max), JSON.stringify([text, max])).toBe(want);
    }
    // Both answers occur.
    expect(deep).toBeGreaterThan(1000);
    expect(deep).toBeLessThan(19_000);
  });
});
