/** `npm run sync-server` (or, built, `node dist/sync-server/cli.js`) serves; with a command it
 * administers workspaces and prints one JSON object. Bad arguments or settings: a message on stderr
 * and exit code 2. The port already in use: a message and exit code 3, at once. SIGTERM and SIGINT
 * finish the requests in flight and exit 0. `npm run sync-server` execs node in place of npm's shell,
 * so npm's forwarded signal reaches the server and npm exits with it; in a container run `node ...`
 * as PID 1 all the same (no npm in between). */
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import { DomainError, isDomainError } from '../shared/errors.ts';
import { timeOrderedIds } from '../shared/ids.ts';
import { ROLES, SUBSCRIPTION_STATUSES } from '../shared/model/index.ts';
import type { AdminDeps } from './admin.ts';
import type { OpenOptions } from './db.ts';

// The server's modules (the database drivers, the API, the runner: seconds of loading on a small
// machine) are imported where a command needs them, so bad arguments are answered at once.

const USAGE = `Usage: npm run sync-server [-- <command> [options]]

  (no command) | serve [--runner]          serve the API (PORT, default 4000; HOST, default 0.0.0.0);
                                            --runner (or RUNNER=1) also runs the outreach of the
                                            senders with channelConfig.hostedBy "server"
  create-workspace --name N --owner-email E [--owner-name NAME]
                                            -> {"workspaceId", "memberId", "apiKey"}
  create-member --workspace ID --name N --email E --role owner|admin|member
                                            -> {"memberId", "apiKey"}
  set-subscription --workspace ID --status active|trialing|past_due|canceled
                                            -> {"workspaceId", "status"}
  seed-demo --workspace ID                  -> counts of the demo data created

Database: DATABASE_URL (PostgreSQL; DATABASE_SCHEMA optionally picks a schema), otherwise an
embedded PGlite database in DATA_DIR (default ./data), which only one process may open at a time.
Other settings: RATE_LIMIT_PER_MINUTE (default 1200), BODY_LIMIT_BYTES, LOG_LEVEL (default info),
CREDENTIALS_KEY (32 bytes, hex or base64: encrypts sender passwords and tokens; default a key file
generated in DATA_DIR), RUNNER_INTERVAL_MS (default 5000), CORS_ORIGINS, METRICS_TOKEN,
COMPRESS_THRESHOLD_BYTES, AUTH_FAILURES_PER_MINUTE, STREAMS_PER_KEY, STREAMS_PER_PROCESS,
STREAM_BUFFER_BYTES, REFUSALS_RETENTION_DAYS, TRUST_PROXY, ALLOW_PRIVATE_SENDER_HOSTS,
IDENTITY_BACKFILL_BATCH, IDENTITY_BACKFILL_PAUSE_MS, IDENTITY_BACKFILL_WAIT_MS
(README "Settings" describes each).

Exit codes: 0 done (or stopped by SIGTERM/SIGINT), 1 failed, 2 bad arguments or settings,
3 the port is already in use.`;

/** The port is taken: nothing else to try, so the process ends at once. */
export const EXIT_ADDRESS_IN_USE = 3;

class UsageError extends Error {}
class AddressInUse extends Error {}

type Spec = Record<string, { type: 'string'; required: boolean }>;

const COMMANDS: Record<string, Spec> = {
  'create-workspace': { name: { type: 'string', required: true }, 'owner-email': { type: 'string', required: true }, 'owner-name': { type: 'string', required: false } },
  'create-member': {
    workspace: { type: 'string', required: true },
    name: { type: 'string', required: true },
    email: { type: 'string', required: true },
    role: { type: 'string', required: true },
  },
  'set-subscription': { workspace: { type: 'string', required: true }, status: { type: 'string', required: true } },
  'seed-demo': { workspace: { type: 'string', required: true } },
};

function parse(command: string, args: string[]): Record<string, string> {
  const spec = COMMANDS[command];
  if (!spec) throw new UsageError(`Unknown command "${command}".`);
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args, options: Object.fromEntries(Object.entries(spec).map(([k, v]) => [k, { type: v.type }])), strict: true, allowPositionals: false }));
  } catch (e) {
    throw new UsageError(`${command}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec)) {
    const value = values[k];
    if (typeof value === 'string' && value.trim() !== '') out[k] = value;
    else if (v.required) throw new UsageError(`${command}: --${k} is required.`);
  }
  return out;
}

function databaseOptions(): OpenOptions {
  const url = process.env.DATABASE_URL?.trim();
  if (url) return { databaseUrl: url, ...(process.env.DATABASE_SCHEMA ? { schema: process.env.DATABASE_SCHEMA } : {}) };
  return { dataDir: process.env.DATA_DIR?.trim() || './data' };
}

function positiveEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${name} must be a positive integer, got "${raw}".`);
  return n;
}

async function admin(command: string, args: Record<string, string>): Promise<unknown> {
  // Refuse bad values before touching the database.
  if (args.role !== undefined && !(ROLES as readonly string[]).includes(args.role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}.`);
  if (args.status !== undefined && !(SUBSCRIPTION_STATUSES as readonly string[]).includes(args.status)) {
    throw new UsageError(`--status must be one of ${SUBSCRIPTION_STATUSES.join(', ')}.`);
  }
  const [{ openDatabase }, { migrate }, { PgDatabase }, { createMember, createWorkspace, seedDemo, setSubscription }, { nodeSecrets }] = await Promise.all([
    import('./db.ts'),
    import('./migrate.ts'),
    import('./pg-database.ts'),
    import('./admin.ts'),
    import('./secrets.ts'),
  ]);
  const sql = await openDatabase(databaseOptions());
  try {
    await migrate(sql);
    const db = new PgDatabase(sql);
    const deps: AdminDeps = { clock: { now: () => new Date() }, ids: timeOrderedIds, secrets: nodeSecrets, random: Math.random };
    const ws = args.workspace ?? '';
    switch (command) {
      case 'create-workspace':
        return await createWorkspace(db, { name: args.name ?? '', ownerEmail: args['owner-email'] ?? '', ownerName: args['owner-name'] }, deps);
      case 'create-member':
        return await createMember(db, { workspaceId: ws, name: args.name ?? '', email: args.email ?? '', role: args.role ?? '' }, deps);
      case 'set-subscription':
        return await setSubscription(db, { workspaceId: ws, status: args.status ?? '' }, deps);
      case 'seed-demo':
        return await seedDemo(db, { workspaceId: ws }, deps);
      default:
        throw new UsageError(`Unknown command "${command}".`);
    }
  } finally {
    await sql.close();
  }
}

async function serve(withRunner: boolean): Promise<void> {
  const port = positiveEnv('PORT') ?? 4000;
  const host = process.env.HOST?.trim() || '0.0.0.0';
  // A signal while starting (opening PGlite takes seconds) ends the process at once: as PID 1 in a
  // container, Node would otherwise ignore it. One listener stays installed from here on and `stop`
  // changes under it: removing the last listener of a signal stops Node watching it, and a signal
  // that arrived while startup blocked the event loop (PGlite's initialisation does) was then lost.
  let stop = (signal: NodeJS.Signals): void => {
    process.stderr.write(`${signal} while starting: exiting.\n`);
    process.exit(0);
  };
  const onSignal = (signal: NodeJS.Signals): void => stop(signal);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Before the database opens: a taken port ends the process at once.
  await probePort(port, host);
  const open = databaseOptions();
  const [{ openDatabase }, { buildServer }, { loadCredentialsKey, serverCredentials }, { createMetrics }, { parseCorsOrigins }, { createServerRunner }] = await Promise.all([
    import('./db.ts'),
    import('./app.ts'),
    import('./credentials.ts'),
    import('./metrics.ts'),
    import('./operator.ts'),
    import('./runner-host.ts'),
  ]);
  let corsOrigins: string[];
  try {
    corsOrigins = parseCorsOrigins(process.env.CORS_ORIGINS);
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  const metrics = createMetrics();
  const credentials = serverCredentials(() => loadCredentialsKey({ envKey: process.env.CREDENTIALS_KEY, dataDir: process.env.DATA_DIR?.trim() || './data' }));
  // With the runner the database is opened here, so the server and the runner share it.
  const sql = withRunner ? await openDatabase(open) : null;
  const app = await buildServer({
    ...(sql ? { database: sql } : { open }),
    credentials,
    rateLimitPerMinute: positiveEnv('RATE_LIMIT_PER_MINUTE'),
    bodyLimit: positiveEnv('BODY_LIMIT_BYTES'),
    logLevel: process.env.LOG_LEVEL?.trim() || 'info',
    operator: { corsOrigins, metrics },
  });
  const runner = sql
    ? createServerRunner({
        sql,
        credentials,
        log: app.log,
        intervalMs: positiveEnv('RUNNER_INTERVAL_MS'),
        stateDir: process.env.DATA_DIR?.trim() || './data',
        // Runner actions in /metrics: sent by kind, failed, and deferred by reason.
        onReport: (_workspaceId, r) => {
          for (const [kind, n] of Object.entries(r.byKind)) if (n) metrics.runnerActions.inc({ kind, outcome: 'done' }, n);
          if (r.failed) metrics.runnerActions.inc({ kind: 'any', outcome: 'failed' }, r.failed);
          for (const [reason, n] of Object.entries(r.deferred)) if (n) metrics.runnerActions.inc({ kind: 'any', outcome: `deferred_${reason}` }, n);
        },
      })
    : null;
  if (runner) {
    // Leases are released before the database closes, so another server takes over at once.
    app.addHook('onClose', async () => {
      await runner.stop();
    });
  }
  let closing = false;
  stop = (signal) => {
    if (closing) {
      app.log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing requests in flight, then closing the database');
    const guard = setTimeout(() => {
      app.log.error('shutdown took longer than 25 s; exiting');
      process.exit(1);
    }, 25_000);
    guard.unref();
    app.close().then(() => sql?.close()).then(
      () => process.exit(0),
      (e: unknown) => {
        app.log.error({ err: e }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  try {
    await app.listen({ port, host });
  } catch (e) {
    // Nothing is served: release the database (and its lock on DATA_DIR) and end now.
    closing = true;
    await app.close().catch(() => undefined);
    await sql?.close().catch(() => undefined);
    throw listenError(e, port, host);
  }
  if (runner) {
    await runner.start();
    app.log.info({ runnerId: runner.runnerId, workspaces: runner.workspaces().length }, 'outreach runner started (senders with channelConfig.hostedBy "server")');
  }
}

/** The error to exit with when the server cannot listen on host:port. */
function listenError(e: unknown, port: number, host: string): unknown {
  const code = e instanceof Error && 'code' in e ? e.code : undefined;
  if (code === 'EADDRINUSE') return new AddressInUse(`Port ${port} on ${host} is already in use (another sync server?). Stop it or set PORT to a free port.`);
  if (code === 'EACCES') return new UsageError(`Port ${port} on ${host} needs privileges this process does not have; use a port above 1023.`);
  if (code === 'EADDRNOTAVAIL') return new UsageError(`HOST ${host} is not an address of this machine.`);
  return e;
}

/** Listens on host:port and closes again: whether the server will be able to. */
function probePort(port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (e) => reject(listenError(e, port, host)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  try {
    if (command === undefined || command === 'serve' || command === '--runner') {
      const args = command === '--runner' ? [command, ...rest] : rest;
      const extra = args.filter((a) => a !== '--runner');
      if (extra.length > 0) throw new UsageError(`serve takes only --runner (got ${extra.join(' ')}); configure it with environment variables.`);
      await serve(args.includes('--runner') || /^(1|true|yes)$/i.test(process.env.RUNNER?.trim() ?? ''));
      return -1;
    }
    const args = parse(command, rest);
    const out = await admin(command, args);
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`${e.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (e instanceof AddressInUse) {
      process.stderr.write(`${e.message}\n`);
      return EXIT_ADDRESS_IN_USE;
    }
    if (isDomainError(e)) {
      // A refused argument value (unknown role, bad email) is a usage problem too.
      process.stderr.write(`${e.message}\n`);
      return e.code === 'INVALID_INPUT' ? 2 : 1;
    }
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // A finished command exits now: a pool, a timer or PGlite's worker must not keep it alive.
    if (code >= 0) process.exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`${e instanceof DomainError || e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
