/** A sync-server runner in its own process, for the crash tests: opens the database named by the
 * environment (DATA_DIR, or DATABASE_URL + DATABASE_SCHEMA), runs one tick of every workspace with
 * server-hosted senders as RUNNER_ID, prints "ticked" and exits. The test kills it mid-tick. */
import { openDatabase } from '../../../sync-server/db.ts';
import { parseCredentialsKey, serverCredentials } from '../../../sync-server/credentials.ts';
import { createServerRunner } from '../../../sync-server/runner-host.ts';

const env = process.env;
const sql = await openDatabase(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL, schema: env.DATABASE_SCHEMA ?? 'public', poolSize: 2 } : { dataDir: env.DATA_DIR ?? '' });
const credentials = serverCredentials(parseCredentialsKey(env.TEST_CREDENTIALS_KEY ?? ''));
const runner = createServerRunner({ sql, credentials, runnerId: env.RUNNER_ID ?? 'child', loops: false, spacing: { minSeconds: 0, jitterSeconds: 0 } });
await runner.scan();
process.stdout.write('scanned\n');
const reports = await runner.tickAll();
process.stdout.write(`ticked ${JSON.stringify([...reports.values()])}\n`);
await runner.stop();
await sql.close();
