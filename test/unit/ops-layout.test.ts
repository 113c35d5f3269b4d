/** Operations are found by their names (../shared/design/STYLE.md): `a.b.c` is defined in
 * shared/ops/a.b.c.ts if that file exists, else in a.b.ts, else in a.ts (the longest existing
 * prefix, by whole segments). A file whose name is such a prefix of some operation is an area file:
 * it ends with `export const ops = opsByName(...)`, the table of contents of what it serves, and
 * defines each of those operations itself. Every other file of shared/ops (lead-search.ts,
 * params.ts, ...) is a helper and defines none. Nothing here trusts a hand-kept table: the files
 * are read from the directory, each module's own list is imported, and the registry is the truth. */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { beforeAll, describe, expect, it } from 'vitest';
import { mutation, query } from '../../shared/ops/define.ts';
import type { OpDef } from '../../shared/ops/define.ts';
import { OPERATION_NAMES, operations } from '../../shared/ops/index.ts';

const dir = fileURLToPath(new URL('../../shared/ops/', import.meta.url));
const FILES = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
  .map((f) => f.slice(0, -'.ts'.length))
  .sort();
const source = (file: string): string => readFileSync(`${dir}${file}.ts`, 'utf8');
const registry = operations as Record<string, OpDef>;

/** Whether a file's name is the operation's name or a prefix of it by whole segments. */
const names = (file: string, op: string): boolean => op === file || op.startsWith(`${file}.`);
/** The file an operation must be defined in: the longest existing prefix of its name. */
const homeOf = (op: string): string | undefined =>
  FILES.filter((f) => names(f, op)).sort((a, b) => b.length - a.length)[0];
const isAreaFile = (file: string): boolean => OPERATION_NAMES.some((op) => names(file, op));
const isOperation = (v: unknown): v is OpDef =>
  typeof v === 'object' && v !== null && typeof (v as OpDef).name === 'string' && typeof (v as OpDef).handler === 'function' && 'input' in v;
/** A call that defines an operation: query({, mutation({ or defineOp({ (not ctx.db.query('leads')). */
const DEFINING_CALL = /(?<![\w.])(query|mutation|defineOp)\(\s*\{/;

type Module = Record<string, unknown>;
const modules = new Map<string, Module>();

beforeAll(async () => {
  for (const f of FILES) modules.set(f, (await import(`${dir}${f}.ts`)) as Module);
});

describe('operations are found by their names', () => {
  it('defines every operation of the registry in the file its name names, listed in that file', () => {
    const misplaced: string[] = [];
    for (const op of OPERATION_NAMES) {
      // Which modules' exports hold this very operation (identity, not name).
      const holders = FILES.filter((f) => f !== 'index' && Object.values(modules.get(f) ?? {}).some((v) => typeof v === 'object' && v !== null && Object.values(v).includes(registry[op])));
      const home = homeOf(op);
      const listed = home ? (modules.get(home)?.ops as Record<string, unknown> | undefined)?.[op] : undefined;
      if (!home || listed !== registry[op]) misplaced.push(`${op}: expected in shared/ops/${home ?? op.split('.')[0]}.ts, listed by ${holders.join(', ') || 'no file'}`);
      else if (!source(home).includes(`name: '${op}',`)) misplaced.push(`${op}: listed by ${home}.ts but defined elsewhere`);
    }
    expect(misplaced).toEqual([]);
  });

  it('ends each area file with the one list of its operations, named consts defined above it', () => {
    const wrong: string[] = [];
    for (const f of FILES.filter(isAreaFile)) {
      const text = source(f).trimEnd();
      const list = /\nexport const ops = opsByName\(([\w\s,]+)\);$/.exec(text);
      if (!list || text.split('opsByName(').length !== 2) {
        wrong.push(`${f}.ts does not end with export const ops = opsByName(<its operations>)`);
        continue;
      }
      const ops = modules.get(f)?.ops as Record<string, OpDef>;
      const consts = (list[1] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      if (consts.length !== Object.keys(ops).length) wrong.push(`${f}.ts lists ${consts.length} names for ${Object.keys(ops).length} operations`);
      for (const name of Object.keys(ops)) if (!registry[name]) wrong.push(`${f}.ts lists ${name}, which the registry does not serve`);
    }
    expect(wrong).toEqual([]);
  });

  it('keeps operations out of helper files (a file no operation name starts with)', () => {
    const helpers = FILES.filter((f) => !isAreaFile(f));
    expect(helpers).toEqual(expect.arrayContaining(['define', 'execute', 'index', 'input-guard', 'lead-search', 'params']));
    const wrong: string[] = [];
    for (const f of helpers) {
      const mod = modules.get(f) ?? {};
      if ('ops' in mod) wrong.push(`${f}.ts exports ops`);
      if (f !== 'index' && Object.values(mod).some((v) => isOperation(v) || (typeof v === 'object' && v !== null && Object.values(v).some(isOperation)))) {
        wrong.push(`${f}.ts exports an operation`);
      }
      if (DEFINING_CALL.test(source(f))) wrong.push(`${f}.ts defines an operation`);
    }
    expect(wrong).toEqual([]);
  });

  it('lets query() and mutation() carry the defaults, so no definition repeats them', () => {
    const repeated: string[] = [];
    for (const f of FILES.filter(isAreaFile)) {
      const text = source(f);
      for (const restated of [/permission: 'member'/, /dryRun: false/, /\bmutates: /, /method: 'GET'/, /\bdefineOp\(/]) {
        if (restated.test(text)) repeated.push(`${f}.ts: ${restated.source}`);
      }
    }
    expect(repeated).toEqual([]);
  });
});

describe('query() and mutation()', () => {
  const io = { input: z.object({}), output: z.object({}), summary: 'A probe of the defaults.', handler: async () => ({}) };

  it('make a read a GET that writes nothing, for any member, without a dry run', () => {
    const read = query({ name: 'probe.read', ...io });
    expect([read.method, read.mutates, read.permission, read.dryRun]).toEqual(['GET', false, 'member', false]);
    // A read whose input is no query string says POST; it still writes nothing.
    const posted = query({ name: 'probe.posted', method: 'POST', permission: 'admin', ...io });
    expect([posted.method, posted.mutates, posted.permission, posted.dryRun]).toEqual(['POST', false, 'admin', false]);
  });

  it('make a write a POST for any member, without a dry run unless it asks for one', () => {
    const write = mutation({ name: 'probe.write', ...io });
    expect([write.method, write.mutates, write.permission, write.dryRun]).toEqual(['POST', true, 'member', false]);
    const previewed = mutation({ name: 'probe.previewed', permission: 'campaigns.launch', dryRun: true, ...io });
    expect([previewed.method, previewed.mutates, previewed.permission, previewed.dryRun]).toEqual(['POST', true, 'campaigns.launch', true]);
  });

  it('make the input strict, as defineOp does', () => {
    const write = mutation({ name: 'probe.strict', ...io, input: z.object({ a: z.string() }) });
    expect(write.input.safeParse({ a: 'x', b: 1 }).success).toBe(false);
    expect(write.input.safeParse({ a: 'x' }).success).toBe(true);
  });
});
