/**
 * An import killed with SIGKILL in the middle of its bulk load, whose identity-key indexes were left
 * out (store-layout.ts, AfterLoad 'probed'): the file opened again finishes the load with every
 * index, and importing the same file again finds every lead the killed import wrote (the look-ups
 * answered from probe maps filled again from the file, load-probes.ts), creating no second lead.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import { LOAD_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { IDENTITY_KINDS } from '../../shared/intake/identity.ts';
import type { Lead } from '../../shared/model/index.ts';
import { IMPORT_CALL, IMPORT_CALLS, importWorkspace, runImportCall } from './sqlite-store-import.child.ts';

const dir = mkdtempSync(join(tmpdir(), 'sqlite-import-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('an import across SIGKILL', () => {
  it('finishes the load at the next open with every index, and the same file imported again creates no lead twice', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'sqlite-store-import.child.ts'), dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    let calls = 0;
    for await (const line of createInterface({ input: child.stdout })) {
      if (!line.startsWith('call ')) continue;
      calls++;
      expect(line).toBe(`call ${calls - 1} ${IMPORT_CALL}`);
      // Killed after two calls, while the third is under way.
      if (calls === 2) {
        await new Promise((r) => setTimeout(r, 150));
        child.kill('SIGKILL');
        break;
      }
    }
    await new Promise((r) => child.once('exit', r));
    expect(stderr).toBe('');
    expect(calls).toBe(2);

    const tuning = { ...LOAD_TUNING };
    // The look-ups below run while the load's indexes are still out.
    LOAD_TUNING.quietMs = 600_000;
    const w = importWorkspace();
    const db = await openLocalDatabase({ dir, workspaceId: w.workspaceId, actor: { workspaceId: w.workspaceId, memberId: w.ownerId, role: 'owner' } });
    try {
      const table = sqliteInstanceOf<Lead>(db.rx.collections.leads?.storageInstance)?.internalsForTests.table;
      if (!table) throw new Error('not on the SQLite storage');
      const inFile = (): string[] => table.file.db.prepare<[string], string>("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?").pluck().all(table.table);
      const probed = table.layout.indexes.filter((i) => i.afterLoad === 'probed').map((i) => i.name);
      expect(probed).toHaveLength(3);
      // The kill cut the load short with the key indexes out.
      expect(table.isLoading).toBe(true);
      for (const name of probed) expect(inFile()).not.toContain(name);
      const written = await db.store.count('leads');
      expect(written).toBeGreaterThanOrEqual(2 * IMPORT_CALL);

      // The whole file again: the leads the killed import wrote are found, the rest created.
      let created = 0;
      let found = 0;
      for (let n = 0; n < IMPORT_CALLS; n++) {
        const totals = await runImportCall(db.store, n, 'fill_empty');
        created += totals.created;
        found += totals.unchanged + totals.updated;
      }
      expect(found).toBe(written);
      expect(created).toBe(IMPORT_CALLS * IMPORT_CALL - written);
      expect(await db.store.count('leads')).toBe(IMPORT_CALLS * IMPORT_CALL);
      for (const kind of IDENTITY_KINDS) expect((await db.store.duplicateGroups(kind, { limit: 10 })).groups, kind).toEqual([]);

      await table.finishLoading();
      expect(table.isLoading).toBe(false);
      const expected = [...table.layout.indexes.map((i) => i.name), `${table.table}_id`, `${table.table}_seq`];
      expect(inFile()).toEqual(expect.arrayContaining(expected));
      expect(table.file.db.prepare('PRAGMA integrity_check').pluck().get()).toBe('ok');
      // And once more, now through the indexes: nothing new.
      const totals = await runImportCall(db.store, 1, 'fill_empty');
      expect(totals.created).toBe(0);
    } finally {
      Object.assign(LOAD_TUNING, tuning);
      await db.close();
    }
  }, 120_000);
});
