/**
 * The desktop backend without a window: opens the workspace's local database in a data folder,
 * replicates it with a sync server, prints status lines, and answers a JSON-lines RPC on stdin.
 * Used by the two-desktop sync tests and for scripting.
 *
 *   npm run desktop:headless -- --server URL --key KEY --data DIR [--allow-raw]
 *
 * Every line on stdout is one JSON object: `{"event":"ready",...}` once open, `{"event":"status",
 * "status":{...}}` on every sync status change, and `{"id","result"}` or `{"id","error":{code,message}}`
 * for each request line `{"id","op","input"}`. `op` is an operation of the registry (run locally,
 * offline-capable, through the same rules; server-only ones are forwarded to the server) or one of:
 * `$status`, `$awaitSync` ({timeoutMs}), `$pause` / `$resume` (stop and restart talking to the
 * server, as if the network went away), `$get` ({collection, id}), `$query` ({collection, query}),
 * `$count` ({collection, where}), `$waitFor` ({collection, id, field, value, timeoutMs}: answers when the
 * document's field has that value; does not hold up later requests), `$rawCommit` ({writes}: a commit without the rules, to play a
 * misbehaving client; only with --allow-raw), `$indexed` (answers once the indexes a bulk load left out
 * are built), `$close`.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import type { Actor } from '../../shared/context.ts';
import { DomainError, isDomainError } from '../../shared/errors.ts';
import type { CollectionName } from '../../shared/model/index.ts';
import { timeOrderedIds } from '../../shared/ids.ts';
import { execute, getOperation } from '../../shared/ops/execute.ts';
import type { AnyWrite, Cond, Query } from '../../shared/store.ts';
import { nodeSecrets } from '../../channels/secret-codec.ts';
import { openLocalDatabase } from './local-db.ts';
import type { LocalDatabase } from './local-db.ts';
import { startSync } from './replication.ts';
import type { Sync } from './replication.ts';
import { identifyKey, ServerClient, ServerError } from './server-client.ts';

type Identity = { serverUrl: string; workspaceId: string; workspaceName: string; actor: Actor };

const out = (obj: unknown): void => {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
};

/** Who the key is, from the server; remembered in the data folder so a later start works offline. */
async function identity(serverUrl: string, apiKey: string, dataDir: string): Promise<Identity> {
  const file = join(dataDir, 'headless-identity.json');
  try {
    const found = await identifyKey(serverUrl, apiKey);
    const id: Identity = { serverUrl, workspaceId: found.workspaceId, workspaceName: found.workspaceName, actor: found.actor };
    await writeFile(file, JSON.stringify(id));
    return id;
  } catch (e) {
    const saved = await readFile(file, 'utf8').then((t) => JSON.parse(t) as Identity).catch(() => null);
    if (saved && saved.serverUrl === serverUrl) return saved;
    throw e;
  }
}

type Request = { id?: unknown; op?: unknown; input?: unknown };

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      server: { type: 'string' },
      key: { type: 'string' },
      data: { type: 'string' },
      'allow-raw': { type: 'boolean', default: false },
    },
  });
  const serverUrl = values.server?.replace(/\/+$/, '');
  const apiKey = values.key ?? process.env.OUTREACH_API_KEY;
  const dataDir = values.data;
  if (!serverUrl || !apiKey || !dataDir) {
    process.stderr.write('usage: npm run desktop:headless -- --server URL --key KEY --data DIR [--allow-raw]\n');
    process.exit(2);
  }
  await mkdir(dataDir, { recursive: true });
  const who = await identity(serverUrl, apiKey, dataDir);
  const db: LocalDatabase = await openLocalDatabase({ dir: dataDir, workspaceId: who.workspaceId, actor: who.actor });
  const sync: Sync = await startSync({ db, serverUrl, apiKey, log: (line) => process.stderr.write(`${line}\n`) });
  sync.onStatus((status) => out({ event: 'status', status }));
  out({ event: 'ready', workspaceId: who.workspaceId, memberId: who.actor.memberId, role: who.actor.role, status: sync.status() });

  const env = {
    actor: who.actor,
    store: db.store,
    clock: { now: () => new Date() },
    ids: timeOrderedIds,
    random: Math.random,
    secrets: nodeSecrets,
    channels: null,
  };

  /** Server-only operations (API keys, new members) run where the secrets live. */
  const server = new ServerClient(serverUrl, apiKey);
  const forward = (op: string, method: 'GET' | 'POST', input: unknown): Promise<unknown> => server.operation(op, method, input);

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await sync.stop();
      await db.close();
    })();
    return closing;
  };

  async function handle(req: Request): Promise<unknown> {
    const op = String(req.op);
    const input = (req.input ?? {}) as Record<string, unknown>;
    switch (op) {
      case '$status':
        return sync.status();
      case '$awaitSync': {
        const ms = typeof input.timeoutMs === 'number' ? input.timeoutMs : 30_000;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new DomainError('INTERNAL', `Not in sync after ${ms} ms.`)), ms);
        });
        try {
          await Promise.race([sync.awaitInSync(), timeout]);
        } finally {
          clearTimeout(timer);
        }
        return sync.status();
      }
      case '$pause':
        await sync.pause();
        return sync.status();
      case '$resume':
        await sync.resume();
        return sync.status();
      case '$get':
        return db.store.get(input.collection as CollectionName, String(input.id));
      case '$query':
        return db.store.query(input.collection as CollectionName, (input.query ?? {}) as Query);
      case '$indexed':
        await db.indexed();
        return { indexed: true };
      case '$count':
        return db.store.count(input.collection as CollectionName, input.where as Cond | undefined);
      case '$waitFor': {
        // Resolves when the document's field equals the value (timing live propagation).
        const collection = input.collection as CollectionName;
        const id = String(input.id);
        const field = String(input.field);
        const ms = typeof input.timeoutMs === 'number' ? input.timeoutMs : 30_000;
        const matches = async () => JSON.stringify((await db.store.get(collection, id) as Record<string, unknown> | null)?.[field]) === JSON.stringify(input.value);
        return new Promise((resolve, reject) => {
          let done = false;
          const finish = (err: Error | null) => {
            if (done) return;
            done = true;
            off();
            clearTimeout(timer);
            if (err) reject(err);
            else resolve({ at: Date.now() });
          };
          const off = db.onChange((cs) => {
            if (cs.includes(collection)) void matches().then((m) => m && finish(null));
          });
          const timer = setTimeout(() => finish(new DomainError('INTERNAL', `${collection}/${id}.${field} did not become ${JSON.stringify(input.value)} within ${ms} ms.`)), ms);
          void matches().then((m) => m && finish(null));
        });
      }
      case '$rawCommit':
        if (!values['allow-raw']) throw new DomainError('PERMISSION_DENIED', '$rawCommit needs --allow-raw.');
        await db.store.commit(input.writes as AnyWrite[]);
        return { ok: true };
      case '$close':
        await close();
        return { closed: true };
      default: {
        const def = getOperation(op);
        if (def.serverOnly) return forward(op, def.method, input);
        return execute(op, input, env);
      }
    }
  }

  const rl = createInterface({ input: process.stdin });
  // Requests run one after another, like clicks in one window, so a script sees its own writes.
  let queue: Promise<void> = Promise.resolve();
  const answer = async (req: Request): Promise<void> => {
    try {
      out({ id: req.id ?? null, result: (await handle(req)) ?? null });
    } catch (e) {
      const known = isDomainError(e) || e instanceof ServerError ? e : null;
      out({ id: req.id ?? null, error: { code: known?.code ?? 'INTERNAL', message: e instanceof Error ? e.message : String(e), ...(known ? { details: known.details } : {}) } });
    }
  };
  rl.on('line', (line) => {
    if (line.trim() === '') return;
    let req: Request;
    try {
      req = JSON.parse(line) as Request;
    } catch {
      out({ id: null, error: { code: 'INVALID_INPUT', message: 'Each request is one JSON object per line.' } });
      return;
    }
    // A wait does not hold up the requests after it; it is registered before they run.
    if (req.op === '$waitFor') void answer(req);
    else queue = queue.then(() => answer(req));
  });
  const shutdown = () => {
    void queue.then(close).then(() => process.exit(0));
  };
  rl.on('close', shutdown);
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

main().catch((e: unknown) => {
  process.stderr.write(`desktop:headless: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
