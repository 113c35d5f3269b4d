/** Read-only transactions on PostgreSQL answer before their COMMIT (db.ts): the connection is parked
 * with its transaction still open, and the next transaction sends that COMMIT with its own BEGIN.
 * What must hold: the next transaction starts fresh (it sees what committed meanwhile, and may
 * write), nothing stays open after close(), and a parked connection that the server drops neither
 * crashes the process nor fails the next call. */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlDatabase } from '../../sync-server/db.ts';
import { openMigrated, testDatabase } from './support/db.ts';
import type { TestDatabase } from './support/db.ts';

describe.runIf(process.env.DATABASE_URL)('read-only transactions end with the next BEGIN (postgres)', () => {
  let t: TestDatabase;
  let sql: SqlDatabase;
  let admin: pg.Client;

  beforeAll(async () => {
    t = testDatabase('postgres');
    // Parked for a second (20 ms by default), so the test can look at a parked connection.
    t.options.readEndMs = 1000;
    sql = await openMigrated(t);
    await sql.exec('CREATE TABLE read_end (n int)');
    admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
  }, 60_000);

  afterAll(async () => {
    await admin?.end();
    await t?.cleanup();
  });

  /** This database's backends that sit inside a transaction (the test's own schema's pool only). */
  const openTransactions = async (): Promise<number> => {
    const rows = await admin.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND pid <> pg_backend_pid() AND query LIKE '%read_end%'",
    );
    return Number(rows.rows[0]?.n ?? 0);
  };

  it('the next transaction sees what committed after the read, and writes', async () => {
    const before = await sql.readOnly((tx) => tx.query<{ n: string }>('SELECT count(*) AS n FROM read_end'));
    expect(Number(before[0]?.n)).toBe(0);
    // Committed by another connection while the read's transaction may still be open.
    await admin.query(`INSERT INTO ${t.options.schema}.read_end VALUES (1)`);
    const after = await sql.readOnly((tx) => tx.query<{ n: string }>('SELECT count(*) AS n FROM read_end'));
    expect(Number(after[0]?.n)).toBe(1);
    await sql.transaction((tx) => tx.query('INSERT INTO read_end VALUES (2)'));
    const rows = await sql.query<{ n: string }>('SELECT count(*) AS n FROM read_end');
    expect(Number(rows[0]?.n)).toBe(2);
  });

  it('a read left alone is ended soon after, without another call', async () => {
    await sql.readOnly((tx) => tx.query('SELECT count(*) FROM read_end'));
    expect(await openTransactions()).toBe(1);
    for (let i = 0; i < 100 && (await openTransactions()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await openTransactions()).toBe(0);
  });

  it('a parked connection the server drops does not fail the next call', async () => {
    await sql.readOnly((tx) => tx.query('SELECT count(*) FROM read_end'));
    // The backend of the read just made, still inside its transaction.
    const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND query LIKE '%read_end%' AND pid <> pg_backend_pid()");
    expect(killed.rowCount).toBe(1);
    await new Promise((r) => setTimeout(r, 50));
    const rows = await sql.readOnly((tx) => tx.query<{ n: string }>('SELECT count(*) AS n FROM read_end'));
    expect(Number(rows[0]?.n)).toBe(2);
  });

  it('close() ends the transactions of the last reads', async () => {
    await Promise.all(Array.from({ length: 3 }, () => sql.readOnly((tx) => tx.query('SELECT count(*) FROM read_end'))));
    await sql.close();
    expect(await openTransactions()).toBe(0);
  });
});
