/**
 * The check of an email sender before its first send (channels/verify-sender.ts, dns-check.ts):
 * the domain's SPF, DKIM and DMARC against a real DNS server on loopback (dns2, test/integration/
 * support/dns-server.ts) that the resolver is pointed at; the SMTP login against smtp-server and the
 * IMAP login and Sent folder against Dovecot; and, through the sync server's HTTP API, a mailbox
 * whose login fails is not created (nothing stored), one that logs in is created with its DNS
 * findings as warnings and its last check, and sdrProfiles.verify checks again and stores it.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSendingDomain, dnsResolver, dnsServersFromEnv } from '../../channels/dns-check.ts';
import type { DnsResolve } from '../../channels/dns-check.ts';
import { checkMailbox, createSenderVerifier } from '../../channels/verify-sender.ts';
import type { SenderCheckLine } from '../../shared/context.ts';
import { newSender } from '../../shared/model/factories.ts';
import { parseCredentialsKey, serverCredentials } from '../../sync-server/credentials.ts';
import { BACKENDS } from './support/db.ts';
import { dkimKeyRecord, passingZone, startDns } from './support/dns-server.ts';
import type { TestDns } from './support/dns-server.ts';
import { startDovecot } from './support/dovecot.ts';
import type { Dovecot } from './support/dovecot.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const USER = { user: 'sam@acme.test', password: 'right-password-7f3' };

let dns: TestDns;
let resolve: DnsResolve;
let smtp: SMTPServer;
let smtpPort = 0;
let dovecot: Dovecot;
let bare: Dovecot;

const line = (lines: SenderCheckLine[], check: SenderCheckLine['check']): SenderCheckLine => {
  const l = lines.find((x) => x.check === check);
  if (!l) throw new Error(`no ${check} line in ${JSON.stringify(lines)}`);
  return l;
};

beforeAll(async () => {
  dns = await startDns({
    ...passingZone('acme.test', '127.0.0.1', 's1'),
    // No DMARC; SPF names someone else's server.
    'wrongspf.test': { TXT: ['v=spf1 ip4:192.0.2.10 -all'] },
    'nodmarc.test': { TXT: ['v=spf1 ip4:127.0.0.1 ~all'] },
    'default._domainkey.nodmarc.test': { TXT: [dkimKeyRecord()] },
    // A Google Workspace domain, and the address smtp.gmail.com has in this DNS.
    'smtp.gmail.com': { A: ['127.0.0.2'] },
    'gsuite.test': { TXT: ['v=spf1 ip4:192.0.2.10 -all'] },
    'mail.acme.test': { A: ['127.0.0.1'] },
    // A long record that does not allow 127.0.0.1 (the fix quotes it whole).
    'longspf.test': { TXT: [`v=spf1 ${Array.from({ length: 24 }, (_, i) => `ip4:192.0.2.${i + 1}`).join(' ')} -all`] },
  });
  resolve = dnsResolver(dns.servers);
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === USER.user && auth.password === USER.password) cb(null, { user: auth.username });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  dovecot = await startDovecot([USER]);
  bare = await startDovecot([USER], { sentFolder: false });
}, 60_000);

afterAll(async () => {
  await dns?.close();
  await new Promise<void>((r) => (smtp ? smtp.close(() => r()) : r()));
  await dovecot?.stop();
  await bare?.stop();
});

describe('the sending domain through DNS (a dns2 server on loopback)', () => {
  it('a domain that publishes SPF for the SMTP host, a DKIM key and a DMARC policy passes all three', async () => {
    // The From setting as users write it, with a display name.
    const lines = await checkSendingDomain({ from: 'Sam Sender <sam@acme.test>', smtpHost: 'mail.acme.test', dkimSelector: 's1', resolve });
    expect(lines.map((l) => [l.check, l.status])).toEqual([['spf', 'pass'], ['dkim', 'pass'], ['dmarc', 'pass']]);
    expect(line(lines, 'dkim').message).toContain('s1._domainkey.acme.test (RSA, 2048 bits)');
    expect(line(lines, 'dmarc').message).toContain('p=quarantine');
    for (const l of lines) expect(l.fix).toBeNull();
    // The checks asked the loopback server, not the machine's DNS.
    expect(dns.asked).toEqual(expect.arrayContaining(['TXT acme.test', 'TXT s1._domainkey.acme.test', 'TXT _dmarc.acme.test']));
  });

  it('a missing DMARC record is a warning that says which record to add', async () => {
    const lines = await checkSendingDomain({ from: 'sam@nodmarc.test', smtpHost: '127.0.0.1', dkimSelector: null, resolve });
    expect(line(lines, 'spf').status).toBe('pass');
    // No selector named: the common ones are tried, and "default" has a key.
    expect(line(lines, 'dkim')).toMatchObject({ status: 'pass', message: expect.stringContaining('default._domainkey.nodmarc.test') });
    const dmarc = line(lines, 'dmarc');
    expect(dmarc.status).toBe('warn');
    expect(dmarc.message).toContain('nodmarc.test publishes no DMARC record');
    expect(dmarc.fix).toContain('Add a TXT record at _dmarc.nodmarc.test: "v=DMARC1; p=none; rua=mailto:dmarc-reports@nodmarc.test"');
  });

  it('an SPF record that does not name the SMTP host fails and says what to add', async () => {
    const lines = await checkSendingDomain({ from: 'sam@wrongspf.test', smtpHost: '127.0.0.1', dkimSelector: null, resolve });
    const spf = line(lines, 'spf');
    expect(spf.status).toBe('fail');
    expect(spf.message).toContain("SPF does not include your SMTP host's sender (127.0.0.1, 127.0.0.1)");
    expect(spf.fix).toBe('Add ip4:127.0.0.1 to the SPF record at wrongspf.test (now "v=spf1 ip4:192.0.2.10 -all").');
  });

  it("for a known provider the fix names the provider's include", async () => {
    const lines = await checkSendingDomain({ from: 'sam@gsuite.test', smtpHost: 'smtp.gmail.com', dkimSelector: null, resolve });
    expect(line(lines, 'spf')).toMatchObject({ status: 'fail', fix: expect.stringContaining('Add include:_spf.google.com to the SPF record at gsuite.test') });
    // Google's selector is tried first; none is published, so DKIM says how Google does it.
    const dkim = line(lines, 'dkim');
    expect(dkim.status).toBe('warn');
    expect(dkim.message).toMatch(/selectors tried \(google, default, /);
    expect(dkim.fix).toContain('Google Admin console');
    // A record naming the provider's include passes although the provider's servers are not in this DNS.
    dns.set('gsuite.test', { TXT: ['v=spf1 include:_spf.google.com ~all'] });
    const again = await checkSendingDomain({ from: 'sam@gsuite.test', smtpHost: 'smtp.gmail.com', dkimSelector: null, resolve });
    expect(line(again, 'spf')).toMatchObject({ status: 'pass', message: 'SPF: gsuite.test allows Google Workspace to send its mail.' });
  });

  it('a DKIM selector the user names that has no key fails; no SPF record at all fails', async () => {
    const lines = await checkSendingDomain({ from: 'sam@acme.test', smtpHost: 'mail.acme.test', dkimSelector: 'missing', resolve });
    expect(line(lines, 'dkim')).toMatchObject({ status: 'fail', message: expect.stringContaining('no key is published at missing._domainkey.acme.test') });
    const none = await checkSendingDomain({ from: 'sam@nowhere.test', smtpHost: '127.0.0.1', dkimSelector: null, resolve });
    expect(line(none, 'spf')).toMatchObject({ status: 'fail', fix: 'Add a TXT record at nowhere.test: "v=spf1 ip4:127.0.0.1 ~all".' });
    expect(line(none, 'dmarc').status).toBe('warn');
  });

  it('the resolver is a setting: DNS_SERVERS takes addresses with ports and refuses anything else', () => {
    expect(dnsServersFromEnv(undefined)).toBeNull();
    expect(dnsServersFromEnv(' 127.0.0.1:5353, [::1]:53 ,9.9.9.9')).toEqual(['127.0.0.1:5353', '[::1]:53', '9.9.9.9']);
    for (const bad of ['dns.example.com', '127.0.0.1:99999', '127.0.0.1:x']) expect(() => dnsServersFromEnv(bad)).toThrow(/DNS_SERVERS/);
  });
});

describe('the logins (smtp-server and Dovecot on loopback)', () => {
  const input = (over: { smtpPass?: string; imapPass?: string; imapPort?: number }) => ({
    from: 'sam@acme.test',
    smtp: { host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true, auth: { user: USER.user, pass: over.smtpPass ?? USER.password } },
    imap: { host: '127.0.0.1', port: over.imapPort ?? dovecot.port, secure: false, auth: { user: USER.user, pass: over.imapPass ?? USER.password }, sentCopy: 'append' as const },
    dkimSelector: 's1',
    resolve,
    timeoutMs: 5_000,
  });

  it('a mailbox that logs in and has a Sent folder passes every line', async () => {
    const lines = await checkMailbox(input({}));
    expect(lines.map((l) => [l.check, l.status])).toEqual([['smtp', 'pass'], ['imap', 'pass'], ['sent_folder', 'pass'], ['spf', 'pass'], ['dkim', 'pass'], ['dmarc', 'pass']]);
    expect(line(lines, 'sent_folder').message).toBe('Sent folder: "Sent" (marked \\Sent).');
  });

  it('a refused SMTP or IMAP login fails with the server\'s answer and what to check, and never shows the password', async () => {
    const smtpBad = await checkMailbox(input({ smtpPass: 'wrong-secret-smtp' }));
    expect(line(smtpBad, 'smtp')).toMatchObject({ status: 'fail', message: expect.stringMatching(/^SMTP: 127\.0\.0\.1 refused the login of sam@acme\.test \(.*535/), fix: expect.stringContaining('Check the SMTP user name') });
    const imapBad = await checkMailbox(input({ imapPass: 'wrong-secret-imap' }));
    expect(line(imapBad, 'imap')).toMatchObject({ status: 'fail', message: expect.stringContaining('IMAP: 127.0.0.1 refused the login of sam@acme.test') });
    // No Sent line without a login.
    expect(imapBad.some((l) => l.check === 'sent_folder')).toBe(false);
    const text = JSON.stringify([smtpBad, imapBad]);
    for (const secret of ['wrong-secret-smtp', 'wrong-secret-imap', USER.password]) expect(text).not.toContain(secret);
  });

  it('lines are whole sentences, however long what they quote', async () => {
    const lines = await checkMailbox({ ...input({}), from: 'sam@longspf.test' });
    const spf = line(lines, 'spf');
    expect(spf.status).toBe('fail');
    expect(spf.fix?.length).toBeGreaterThan(300);
    expect(spf.fix).toMatch(/ip4:192\.0\.2\.24 -all"\)\.$/);
  });

  it('a mailbox without a Sent folder gets a failing Sent line (copies could not be filed), not a login failure', async () => {
    const lines = await checkMailbox(input({ imapPort: bare.port }));
    expect(line(lines, 'imap').status).toBe('pass');
    expect(line(lines, 'sent_folder')).toMatchObject({ status: 'fail', message: expect.stringContaining('the mailbox has none'), fix: expect.stringContaining('Create a Sent folder') });
  });

  it('an SMTP server nobody answers on is a clear failure (the offline desktop case)', async () => {
    const lines = await checkMailbox({ ...input({}), smtp: { ...input({}).smtp, port: 9 } });
    expect(line(lines, 'smtp')).toMatchObject({ status: 'fail', message: expect.stringContaining('127.0.0.1:9 could not be reached'), fix: expect.stringContaining('this computer is online') });
  });

  it("a host's verifier reads the secrets it keeps when none are given, and takes an OAuth token as the transport auth", async () => {
    const sender = newSender({ id: 's1', workspaceId: 'w', now: '2026-11-16T10:00:00.000Z' }, {
      name: 'Sam', ownerMemberId: 'm', channel: 'email',
      channelConfig: { host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true, user: USER.user, from: USER.user, imapHost: '127.0.0.1', imapPort: dovecot.port, imapSecure: false },
    });
    const kept = createSenderVerifier({ hostedBy: 'desktop', resolve, timeoutMs: 5_000, smtpPasswordFor: () => USER.password });
    expect((await kept.verify(sender, { dkimSelector: 's1' })).filter((l) => l.status !== 'pass')).toEqual([]);
    const unreadable = createSenderVerifier({ hostedBy: 'server', resolve, smtpPasswordFor: () => Promise.reject(new Error('the stored secret was sealed with another CREDENTIALS_KEY.')) });
    expect(await unreadable.verify(sender, { dkimSelector: null })).toEqual([{ check: 'smtp', status: 'fail', message: 'SMTP: the login kept on this sync server could not be used (the stored secret was sealed with another CREDENTIALS_KEY).', fix: 'Enter the mailbox password again, or reconnect the mailbox.' }]);
    const none = createSenderVerifier({ hostedBy: 'desktop', resolve, smtpPasswordFor: () => null });
    expect(await none.verify(sender, { dkimSelector: null })).toEqual([expect.objectContaining({ check: 'smtp', status: 'fail', message: expect.stringContaining('no password is kept for sam@acme.test') })]);
    // An OAuth sender's token goes to the servers as XOAUTH2 (these servers take passwords only, so they refuse it).
    const oauth = createSenderVerifier({ hostedBy: 'desktop', resolve, timeoutMs: 5_000, smtpPasswordFor: () => null, authFor: async (_s, kind) => ({ user: USER.user, accessToken: `token-${kind}-abc` }) });
    const lines = await oauth.verify(sender, { dkimSelector: 's1' });
    expect(line(lines, 'smtp')).toMatchObject({ status: 'fail', fix: 'Reconnect the mailbox (sign in again with your provider).' });
    expect(line(lines, 'imap').status).toBe('fail');
    expect(JSON.stringify(lines)).not.toContain('token-');
    // A token just given (oauth.complete connecting a mailbox) is used for both logins the same way.
    const given = await kept.verify(sender, { secrets: { accessToken: 'token-given-xyz' }, dkimSelector: 's1' });
    expect(line(given, 'smtp')).toMatchObject({ status: 'fail', fix: 'Reconnect the mailbox (sign in again with your provider).' });
    // (This Dovecot offers no XOAUTH2 at all, and the line says so.)
    expect(line(given, 'imap')).toMatchObject({ status: 'fail', message: expect.stringContaining('does not offer the OAuth 2.0 sign-in (XOAUTH2)'), fix: expect.stringContaining('Reconnect the mailbox') });
    expect(JSON.stringify(given)).not.toContain('token-given');
  });
});

describe.each(BACKENDS)('connecting and checking a mailbox through the sync server (%s)', (backend) => {
  const credentials = serverCredentials(parseCredentialsKey(randomBytes(32).toString('base64')));
  let s: TestServer;
  const before = process.env.ALLOW_PRIVATE_SENDER_HOSTS;
  beforeAll(async () => {
    // The test's servers are on loopback, which the sync server refuses unless allowed.
    process.env.ALLOW_PRIVATE_SENDER_HOSTS = '1';
    s = await startTestServer(backend, { credentials, senderCheck: { resolve, timeoutMs: 5_000 } });
  });
  afterAll(async () => {
    if (before === undefined) delete process.env.ALLOW_PRIVATE_SENDER_HOSTS;
    else process.env.ALLOW_PRIVATE_SENDER_HOSTS = before;
    await s?.close();
  });

  const config = (password: string, from = USER.user) => ({
    host: '127.0.0.1', port: smtpPort, secure: false, user: USER.user, from, hostedBy: 'server', password,
    imap: { host: '127.0.0.1', port: dovecot.port, secure: false },
  });
  const secretRows = () => s.sql.query('SELECT sender_id FROM sender_credentials ORDER BY sender_id');

  it('a mailbox whose login is refused is not created: 422 SENDER_CHECK_FAILED with the sentence, and nothing is stored', async () => {
    // (The snapshot leaves out API key usage times, which any call updates.)
    const snapshot = JSON.stringify([await s.snapshot(s.ours.workspaceId), await secretRows()]);
    const res = await s.call<{ error: { code: string; message: string; details: { lines: SenderCheckLine[] } } }>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Sam Wrong', channel: 'email', channelConfig: config('not-the-password') });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('SENDER_CHECK_FAILED');
    expect(res.body.error.message).toMatch(/^Sam Wrong was not connected: SMTP: 127\.0\.0\.1 refused the login of sam@acme\.test .*IMAP: 127\.0\.0\.1 refused the login/);
    expect(res.body.error.details.lines.map((l) => l.check)).toEqual(['smtp', 'imap', 'spf', 'dkim', 'dmarc']);
    expect(JSON.stringify(res.body)).not.toContain('not-the-password');
    expect(JSON.stringify([await s.snapshot(s.ours.workspaceId), await secretRows()])).toBe(snapshot);
    expect(s.logs.join('\n')).not.toContain('not-the-password');
  });

  it('a mailbox that logs in is created with its DNS findings as warnings and as its last check; verify checks again and stores it', async () => {
    // (Each database's run starts from a domain without DMARC.)
    dns.set('_dmarc.nodmarc.test', undefined);
    const res = await s.call<{ id: string; warnings: string[]; lastCheck: { at: string; lines: SenderCheckLine[] } }>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Sam Mail', channel: 'email', channelConfig: { ...config(USER.password, 'sam@nodmarc.test') } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.warnings).toEqual([expect.stringContaining('nodmarc.test publishes no DMARC record')]);
    expect(res.body.lastCheck.lines.map((l) => [l.check, l.status])).toEqual([['smtp', 'pass'], ['imap', 'pass'], ['sent_folder', 'pass'], ['spf', 'pass'], ['dkim', 'pass'], ['dmarc', 'warn']]);
    const listed = await s.call<{ sdrProfiles: { id: string; lastCheck: unknown }[] }>(s.ours.memberKey, 'sdrProfiles.list', {}, { method: 'GET' });
    expect(listed.body.sdrProfiles.find((p) => p.id === res.body.id)?.lastCheck).toEqual(res.body.lastCheck);

    // The domain publishes DMARC; a check again says so and is stored, with the time of the check.
    dns.set('_dmarc.nodmarc.test', { TXT: ['v=DMARC1; p=reject'] });
    s.clock.advance(60_000);
    const again = await s.call<{ ok: boolean; checkedAt: string; dkimSelector: string | null; lines: SenderCheckLine[] }>(s.ours.ownerKey, 'sdrProfiles.verify', { sdrProfileId: res.body.id });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.ok).toBe(true);
    expect(again.body.lines.every((l) => l.status === 'pass')).toBe(true);
    const stored = await s.db.forWorkspace(s.ours.workspaceId).get('senders', res.body.id);
    expect(stored?.lastCheck).toEqual({ at: again.body.checkedAt, dkimSelector: null, lines: again.body.lines });
    expect(again.body.checkedAt).not.toBe(res.body.lastCheck.at);

    // A selector named is used and kept for the next checks.
    const named = await s.call<{ dkimSelector: string; lines: SenderCheckLine[] }>(s.ours.ownerKey, 'sdrProfiles.verify', { sdrProfileId: res.body.id, dkimSelector: 'nosuch' });
    expect(named.body.dkimSelector).toBe('nosuch');
    expect(line(named.body.lines, 'dkim').status).toBe('fail');
    const later = await s.call<{ dkimSelector: string }>(s.ours.ownerKey, 'sdrProfiles.verify', { sdrProfileId: res.body.id });
    expect(later.body.dkimSelector).toBe('nosuch');

    // The password is kept only in sender_credentials, never in a document or an answer.
    expect(JSON.stringify(await s.snapshot(s.ours.workspaceId))).not.toContain(USER.password);
    expect(JSON.stringify([res.body, again.body, named.body])).not.toContain(USER.password);
    expect(s.logs.join('\n')).not.toContain(USER.password);
  });

  it("the check runs before the operation's transaction: the workspace's other writes go on while a mail server is slow", async () => {
    // A mail server that takes 3 s to greet (a slow provider); `reached` says the check is under way,
    // `greeted` that the server has answered it.
    let reached: () => void = () => undefined;
    let greeted = false;
    const underWay = new Promise<void>((r) => (reached = r));
    const slow = new SMTPServer({
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      logger: false,
      onConnect(_session, cb) {
        reached();
        setTimeout(() => {
          greeted = true;
          cb();
        }, 3_000);
      },
      onAuth(auth, _session, cb) {
        if (auth.username === USER.user && auth.password === USER.password) cb(null, { user: auth.username });
        else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
      },
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    try {
      const mailbox = s.call<{ id: string }>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Slow Mail', channel: 'email', channelConfig: { ...config(USER.password), port: (slow.server.address() as AddressInfo).port } });
      await underWay;
      const other = await s.call(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Sandy Fast', channel: 'sandbox' });
      // Done while the mail server has not even greeted the check: no lock waited for it.
      expect(greeted).toBe(false);
      expect(other.status).toBe(200);
      expect((await mailbox).status).toBe(200);
    } finally {
      await new Promise<void>((r) => slow.close(() => r()));
    }
  });

  it('verify refuses what it cannot check, and a foreign sender is not found', async () => {
    const sandbox = await s.call<{ id: string }>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Sandy', channel: 'sandbox' });
    const notEmail = await s.call<{ error: { code: string } }>(s.ours.ownerKey, 'sdrProfiles.verify', { sdrProfileId: sandbox.body.id });
    expect([notEmail.status, notEmail.body.error.code]).toEqual([400, 'INVALID_INPUT']);
    // A desktop-hosted mailbox is checked on its owner's desktop: the server says so.
    const desk = await s.call<{ id: string; warnings: string[] }>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Desk Mail', channel: 'email', channelConfig: { host: 'smtp.acme.test', port: 587, secure: false, user: 'd@acme.test', from: 'd@acme.test' } });
    expect(desk.body.warnings).toEqual([expect.stringContaining("Not checked: Desk Mail's login, Sent folder and DNS records are checked from its owner's desktop")]);
    const there = await s.call<{ error: { code: string; message: string } }>(s.ours.ownerKey, 'sdrProfiles.verify', { sdrProfileId: desk.body.id });
    expect(there.body.error).toMatchObject({ code: 'SERVER_ONLY', message: expect.stringContaining('press Check again in that desktop app') });
    const foreign = await s.call<{ error: { code: string } }>(s.theirs.ownerKey, 'sdrProfiles.verify', { sdrProfileId: desk.body.id });
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'NOT_FOUND']);
    const badSelector = await s.call<{ error: { code: string } }>(s.ours.ownerKey, 'sdrProfiles.verify', { sdrProfileId: desk.body.id, dkimSelector: 'no spaces' });
    expect([badSelector.status, badSelector.body.error.code]).toEqual([400, 'INVALID_INPUT']);
  });

  it('sdrProfiles.verify is in /openapi.json', async () => {
    const res = await fetch(`${s.url}/openapi.json`);
    const doc = (await res.json()) as { paths: Record<string, { post?: { summary?: string } }> };
    expect(doc.paths['/sdrProfiles.verify']?.post?.summary).toContain('Checks an email sender again');
  });
});
