/** Fresh PostgreSQL schemas for one benchmark target: `open` names a new one each time (a fresh
 * database as a new team meets it), `cleanup` drops them all, or keeps them with BENCH_KEEP=1 for a
 * look with EXPLAIN afterwards (their names are printed). */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export function scratchSchemas(url: string, prefix: string): { open: () => { databaseUrl: string; schema: string }; cleanup: () => Promise<void> } {
  const schemas: string[] = [];
  return {
    open: () => {
      const schema = `${prefix}_${process.pid}_${randomBytes(3).toString('hex')}`;
      schemas.push(schema);
      return { databaseUrl: url, schema };
    },
    async cleanup() {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        for (const s of schemas.splice(0)) {
          if (process.env.BENCH_KEEP) process.stdout.write(`kept schema ${s}\n`);
          else await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
        }
      } finally {
        await client.end();
      }
    },
  };
}
