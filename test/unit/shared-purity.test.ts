/** The lint rule that keeps shared/ pure over (input, ctx): no clock or randomness of its own
 * (eslint.config.js; `npm test` lints the tree, this shows the rule itself catches each form). */
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: root });

async function problems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}${file}` });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-properties' || m.ruleId === 'no-restricted-syntax').map((m) => m.message);
}

describe('shared/ takes time and randomness from ctx', () => {
  it('refuses Date.now(), new Date(), Date(), Math.random() and performance.now() there', async () => {
    const found = await problems('shared/ops/purity-probe.ts', [
      'export const a = Date.now();',
      'export const b = new Date();',
      'export const c = Date();',
      'export const d = Math.random();',
      'export const e = performance.now();',
      "export const ok = new Date('2026-11-16T10:00:00.000Z').getTime() + new Date(0).getTime();",
      '',
    ].join('\n'));
    expect(found).toHaveLength(5);
    expect(found.join('\n')).toMatch(/ctx\.clock/);
    expect(found.join('\n')).toMatch(/ctx\.random/);
  });

  it('leaves the edges alone (the server, the desktop and tests own their clocks)', async () => {
    expect(await problems('sync-server/purity-probe.ts', 'export const a = Date.now() + Math.random() + new Date().getTime();\n')).toEqual([]);
  });
});
