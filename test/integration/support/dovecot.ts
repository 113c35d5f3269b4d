/**
 * A real IMAP server for tests: Debian's Dovecot (`apt-get install dovecot-imapd`; .ci/run installs
 * it), started with a configuration of its own in a temporary folder (not the system service):
 * 127.0.0.1 on a free port, no TLS, plaintext passwd-file users, maildirs under the folder, its own
 * base_dir, state_dir and log. Mail is delivered the way a mail server would file it: IMAP APPEND
 * into the user's INBOX (through imapflow), never by a mock of the protocol.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';

export const DOVECOT_BINARY = '/usr/sbin/dovecot';
const DOVEADM_BINARY = '/usr/bin/doveadm';

export type DovecotUser = { user: string; password: string };

export type Dovecot = {
  host: string;
  port: number;
  dir: string;
  /** Adds a user, or changes a user's password (Dovecot re-reads the passwd file when it changes). */
  setUser(user: string, password: string): void;
  /** Files a raw RFC 5322 message in a mailbox of a user (INBOX by default); returns its UID. */
  deliver(user: DovecotUser, raw: string, mailbox?: string): Promise<number>;
  /** The raw messages of a mailbox, oldest first. */
  messages(user: DovecotUser, mailbox?: string): Promise<string[]>;
  /** The server's log so far (for a failing test's message). */
  log(): string;
  /** How many IMAP sessions the user has open now (doveadm who). */
  sessions(user: string): Promise<number>;
  /** Stops the server, keeping its mail (a mail server going away). */
  down(): Promise<void>;
  /** Starts it again on the same port with the same mail. */
  up(): Promise<void>;
  stop(): Promise<void>;
};

/** An unused loopback port (the kernel's pick, released just before Dovecot binds it). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The uid/gid mail is stored under: Dovecot refuses root for mail processes, so `nobody`. */
function mailOwner(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('nobody:'));
  const parts = line?.split(':') ?? [];
  const uid = Number(parts[2] ?? 65534);
  const gid = Number(parts[3] ?? 65534);
  return { uid, gid };
}

function greeting(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('data', (d) => done(d.toString().startsWith('* OK')));
    sock.once('error', () => done(false));
  });
}

/** Dovecot's oauth2 passdb (XOAUTH2 only, as Exchange Online offers it), asking an OAuth provider's introspection
 * endpoint whether each token is active and whose it is (`sub` is the mailbox). */
export type DovecotOAuth2 = { introspectionUrl: string };

function oauth2Passdb(dir: string, oauth2: DovecotOAuth2 | undefined): string {
  if (!oauth2) return '';
  writeFileSync(join(dir, 'dovecot-oauth2.conf.ext'), `introspection_mode = post
introspection_url = ${oauth2.introspectionUrl}
force_introspection = yes
username_attribute = sub
active_attribute = active
active_value = true
`, { mode: 0o644 });
  return `passdb {
  driver = oauth2
  mechanisms = xoauth2
  args = ${dir}/dovecot-oauth2.conf.ext
}
`;
}

function config(dir: string, port: number, owner: { uid: number; gid: number }, opts: DovecotOptions): string {
  const { oauth2 } = opts;
  return `# Written by test/integration/support/dovecot.ts for one test run.
protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
info_log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login${oauth2 ? ' xoauth2' : ''}
# A wrong password is answered at once (the default waits 2 s).
auth_failure_delay = 0
first_valid_uid = 1
first_valid_gid = 1
mail_location = maildir:${dir}/mail/%u
${oauth2Passdb(dir, oauth2)}passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/passwd
}
userdb {
  driver = static
  args = uid=${owner.uid} gid=${owner.gid} home=${dir}/home/%u
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
}
namespace inbox {
  inbox = yes
  separator = /
${opts.sentFolder === false ? '' : `  mailbox Sent {
    special_use = \\Sent
    auto = subscribe
  }
`}  mailbox Drafts {
    special_use = \\Drafts
    auto = subscribe
  }
}
`;
}

/** sentFolder false: the mailboxes have no Sent folder (a mailbox the sender check must flag); oauth2:
 * XOAUTH2 logins checked by the provider's introspection endpoint. */
export type DovecotOptions = { sentFolder?: boolean; oauth2?: DovecotOAuth2 };

export async function startDovecot(users: DovecotUser[] = [], opts: DovecotOptions = {}): Promise<Dovecot> {
  if (!existsSync(DOVECOT_BINARY)) throw new Error(`Dovecot is not installed (${DOVECOT_BINARY}): apt-get install -y dovecot-imapd (.ci/run does it).`);
  const dir = mkdtempSync(join(tmpdir(), 'dovecot-test-'));
  // The mail processes run as `nobody` and must reach the maildirs under this folder.
  chmodSync(dir, 0o755);
  const owner = mailOwner();
  for (const sub of ['mail', 'home']) {
    mkdirSync(join(dir, sub));
    chownSync(join(dir, sub), owner.uid, owner.gid);
  }
  const passwd = new Map<string, string>();
  // Read by Dovecot's auth worker (user dovecot); test passwords only.
  // Replaced whole (write, then rename): Dovecot re-reads it when it changes and must never see half of it.
  const writePasswd = () => {
    writeFileSync(join(dir, 'passwd.tmp'), [...passwd].map(([u, p]) => `${u}:{PLAIN}${p}\n`).join(''), { mode: 0o644 });
    renameSync(join(dir, 'passwd.tmp'), join(dir, 'passwd'));
  };
  for (const u of users) passwd.set(u.user, u.password);
  writePasswd();

  /** Starts Dovecot on `port`; the process, or null when it did not come up. */
  async function launch(port: number): Promise<ChildProcess | null> {
    writeFileSync(join(dir, 'dovecot.conf'), config(dir, port, owner, opts));
    const proc = spawn(DOVECOT_BINARY, ['-F', '-c', join(dir, 'dovecot.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let exited = false;
    proc.once('exit', () => {
      exited = true;
    });
    const until = Date.now() + 10_000;
    while (!exited && Date.now() < until) {
      if (await greeting(port, 500)) return proc;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!exited) proc.kill('SIGKILL');
    return null;
  }

  async function halt(proc: ChildProcess): Promise<void> {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    // Connected clients' processes outlive the master: end their sessions first, as an outage would.
    await new Promise<void>((resolve) => {
      execFile(DOVEADM_BINARY, ['-c', join(dir, 'dovecot.conf'), 'kick', '*'], () => resolve());
    });
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }

  let child: ChildProcess | null = null;
  let port = 0;
  for (let attempt = 0; attempt < 5 && !child; attempt++) {
    port = await freePort();
    child = await launch(port);
  }
  const readLog = () => (existsSync(join(dir, 'dovecot.log')) ? readFileSync(join(dir, 'dovecot.log'), 'utf8') : '');
  if (!child) {
    const log = readLog();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`Dovecot did not start:\n${log}`);
  }
  let running: ChildProcess = child;

  async function withClient<T>(u: DovecotUser, fn: (c: ImapFlow) => Promise<T>): Promise<T> {
    const c = new ImapFlow({ host: '127.0.0.1', port, secure: false, auth: { user: u.user, pass: u.password }, logger: false });
    const explain = (e: unknown): Error => {
      const err = e as Error & { response?: string; executedCommand?: string };
      return new Error(`Dovecot test client: ${err.message} (${err.executedCommand ?? ''} -> ${err.response ?? ''})\n${readLog().split('\n').slice(-8).join('\n')}`);
    };
    await c.connect().catch((e: unknown) => {
      throw explain(e);
    });
    try {
      return await fn(c).catch((e: unknown) => {
        throw explain(e);
      });
    } finally {
      await c.logout().catch(() => undefined);
    }
  }

  return {
    host: '127.0.0.1',
    port,
    dir,
    setUser(user, password) {
      passwd.set(user, password);
      writePasswd();
    },
    deliver: (u, raw, mailbox = 'INBOX') =>
      withClient(u, async (c) => {
        const res = await c.append(mailbox, raw.replace(/\r?\n/g, '\r\n'));
        if (!res || typeof res.uid !== 'number') throw new Error('Dovecot did not report the UID of the appended message');
        return res.uid;
      }),
    messages: (u, mailbox = 'INBOX') =>
      withClient(u, async (c) => {
        const lock = await c.getMailboxLock(mailbox);
        try {
          const out: string[] = [];
          if (c.mailbox && c.mailbox.exists > 0) {
            for await (const m of c.fetch('1:*', { source: true })) out.push(m.source?.toString('utf8') ?? '');
          }
          return out;
        } finally {
          lock.release();
        }
      }),
    log: readLog,
    sessions: (user) =>
      new Promise<number>((resolve, reject) => {
        execFile(DOVEADM_BINARY, ['-c', join(dir, 'dovecot.conf'), 'who', '-1', user], (err, stdout) => {
          if (err) reject(err);
          // One line per connection after the header; "username # proto (pids) (ips)".
          else resolve(stdout.split('\n').slice(1).filter((l) => l.trim().startsWith(user)).length);
        });
      }),
    down: () => halt(running),
    async up() {
      const proc = await launch(port);
      if (!proc) throw new Error(`Dovecot did not start again on port ${port}:\n${readLog()}`);
      running = proc;
    },
    async stop() {
      await halt(running);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
