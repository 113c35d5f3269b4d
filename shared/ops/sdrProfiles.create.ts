/** sdrProfiles.create: connects a sender (the sandbox network, an SMTP mailbox with its IMAP
 * mailbox, or an HTTP connector), keeping its secrets out of the document, checks with the sync
 * server the hosts a server-hosted sender will connect to, and checks a mailbox before its first
 * send (logins, Sent folder, SPF, DKIM, DMARC: a mailbox that cannot log in is not created). */
import { IANAZone } from 'luxon';
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx, PrepareCtx } from '../context.ts';
import { newSender } from '../model/factories.ts';
import type { ChannelKind, Sender, SenderCapability } from '../model/index.ts';
import { newUnsubscribeKey } from '../replies/unsubscribe-token.ts';
import { hostedByOf, storeSenderSecret } from './credentials.ts';
import { mutation, opsByName } from './define.ts';
import { senderHostsOf } from './sender-hosts.ts';
import { checkSender, dkimSelectorInput, lineSentence, loginFailed, senderOut, summary } from './sdrProfiles.ts';
import type { SenderCheck } from './sdrProfiles.ts';
import { DomainError } from '../errors.ts';

const timeZone = z.string().min(1).max(64).refine((tz) => IANAZone.isValidZone(tz), { message: 'must be an IANA time zone such as Europe/Paris' });

/** Where the sender's mailbox is read (replies, automatic replies, bounces) and its Sent copies
 * kept; stored flat in channelConfig (imapHost, imapPort, ...), the password in the credentials port. */
const imapInput = z.object({
  host: z.string().trim().min(1).max(253),
  port: z.number().int().min(1).max(65535).optional(),
  secure: z.boolean().optional(),
  /** Default: the SMTP user. */
  user: z.string().max(320).optional(),
  /** Default: the SMTP password. Never in the document, like it. */
  password: z.string().min(1).max(4096).optional(),
  /** Who files a copy of each sent email in Sent: we do ('append', default), the provider does, or nobody. */
  sentCopy: z.enum(['append', 'provider', 'none']).optional(),
}).strict();

function imapSettings(imap: z.infer<typeof imapInput>): Sender['channelConfig'] {
  const port = imap.port ?? 993;
  return {
    imapHost: imap.host, imapPort: port, imapSecure: imap.secure ?? port === 993,
    ...(imap.user ? { imapUser: imap.user } : {}), ...(imap.sentCopy ? { imapSentCopy: imap.sentCopy } : {}),
  };
}

const emailConfig = z.object({
  host: z.string().trim().min(1).max(253),
  port: z.number().int().min(1).max(65535),
  secure: z.boolean(),
  user: z.string().max(320),
  from: z.string().trim().min(3).max(320),
  /** Never in the document: kept by the credentials port where the sender runs (see the handler). */
  password: z.string().optional(),
  /** Where the channel runs: its owner's desktop (default) or the sync server's runner (`--runner`). */
  hostedBy: z.enum(['desktop', 'server']).optional(),
  imap: imapInput.optional(),
  /** The DKIM selector the mailbox signs with (kept for later checks); default: the provider's usual ones. */
  dkimSelector: dkimSelectorInput.optional(),
}).strict();
const httpConfig = z.object({
  baseUrl: z.string().url().refine((u) => /^https?:\/\//.test(u), { message: 'must be an http(s) URL' }),
  hostedBy: z.enum(['desktop', 'server']).optional(),
}).strict();
const sandboxConfig = z.object({ seed: z.union([z.string().min(1).max(200), z.number().int()]).optional() }).strict();

const createBase = {
  name: z.string().trim().min(1).max(200),
  timeZone: timeZone.optional(),
  premium: z.boolean().optional(),
  /** true: the account is already warmed up (established, in regular use) and sends at its limits
   * from the start; default false: a new account ramps up from 20% over 14 days. */
  warmedUp: z.boolean().optional(),
};
const createInput = z.discriminatedUnion('channel', [
  z.object({ ...createBase, channel: z.literal('email'), channelConfig: emailConfig }),
  z.object({ ...createBase, channel: z.literal('http'), channelConfig: httpConfig }),
  z.object({ ...createBase, channel: z.literal('sandbox'), channelConfig: sandboxConfig.optional() }),
]);

const SOCIAL_CAPABILITIES: readonly SenderCapability[] = ['message', 'connection_request', 'profile_visit', 'reaction', 'voice_note', 'post_reading'];

/** What a sender of this channel can do: email senders only email; social senders everything else,
 * InMail only with a premium account. */
export function capabilitiesFor(channel: ChannelKind, premium: boolean): SenderCapability[] {
  if (channel === 'email') return ['email'];
  return premium ? [...SOCIAL_CAPABILITIES, 'inmail'] : [...SOCIAL_CAPABILITIES];
}

/**
 * A sender the sync server's runner hosts connects from the server, which refuses addresses of its
 * own network (sync-server/sender-hosts.ts). Where that can be checked (ctx.senderHosts: the server
 * itself, or a desktop asking it), a refused host makes the new sender disconnected with the
 * guard's sentence as its reason, and that sentence is the warning. Where it cannot (no sync server,
 * or offline), the warning says so. A desktop-hosted sender connects from its owner's computer: no
 * such rule applies to it.
 */
export async function serverHostProblem(ctx: Pick<Ctx, 'senderHosts'>, sender: Sender): Promise<{ warning: string; refusal: string | null } | null> {
  if (sender.channel === 'sandbox' || hostedByOf(sender) !== 'server') return null;
  const hosts = senderHostsOf(sender);
  const check = ctx.senderHosts ?? null;
  const unchecked = (why: string) => ({
    warning: `Whether the sync server will connect to ${hosts.join(' and ')} could not be checked (${why}): it refuses private, loopback and link-local addresses unless its operator allows them. If it refuses, this sender shows as disconnected with the reason once the server's runner tries it.`,
    refusal: null,
  });
  if (!check) return unchecked('no sync server answers here');
  // Link-local and cloud metadata hosts are refused outright (nothing is created): no operator
  // setting makes them a mail server or connector.
  const forbidden = check.forbidden ? await check.forbidden(hosts) : null;
  if (forbidden) throw new DomainError('URL_NOT_ALLOWED', forbidden, { field: 'channelConfig', hosts });
  let refusal: string | null;
  try {
    refusal = await check.refusal(hosts);
  } catch (e) {
    return unchecked(e instanceof Error ? e.message.replace(/\.$/, '') : String(e));
  }
  if (!refusal) return null;
  // The guard's sentence names the host, why it is refused and what to do.
  return { warning: `${refusal} The sender is disconnected until then.`, refusal };
}

type CreateInput = z.output<typeof createInput>;

/** The new sender as the input describes it, with the secrets kept apart (never in the document). */
function draftSender(input: CreateInput, ctx: Pick<Ctx, 'actor' | 'clock'>, id: string): { sender: Sender; password: string | undefined; imapPassword: string | undefined } {
  const premium = input.premium ?? false;
  let channelConfig: Sender['channelConfig'];
  let password: string | undefined;
  let imapPassword: string | undefined;
  if (input.channel === 'email') {
    // The sender document replicates to every member's desktop: the SMTP password must not be
    // in it. The host that runs this sender keeps it (ctx.credentials), stored after the sender.
    const { password: given, imap, ...rest } = input.channelConfig;
    channelConfig = imap ? { ...rest, ...imapSettings(imap) } : rest;
    password = given;
    imapPassword = imap?.password;
  } else if (input.channel === 'http') {
    channelConfig = { baseUrl: input.channelConfig.baseUrl, ...(input.channelConfig.hostedBy ? { hostedBy: input.channelConfig.hostedBy } : {}) };
  } else {
    channelConfig = { seed: input.channelConfig?.seed ?? id };
  }
  const sender = newSender(
    { id, workspaceId: ctx.actor.workspaceId, now: nowIso(ctx) },
    {
      name: input.name,
      ownerMemberId: ctx.actor.memberId,
      channel: input.channel,
      channelConfig,
      premium,
      capabilities: capabilitiesFor(input.channel, premium),
      timeZone: input.timeZone ?? 'UTC',
    },
  );
  return { sender, password, imapPassword };
}

/** What a new sender's checks found: the sync server's refusal of its hosts, and a mailbox's check. */
class CreateChecks {
  constructor(
    readonly host: { warning: string; refusal: string | null } | null,
    readonly check: SenderCheck | null,
  ) {}
}

/**
 * The checks of a new sender, made before anything is written (sdrProfiles.create's prepare, on the
 * sync server outside its transaction): the host guard for a server-hosted sender, and for a mailbox
 * the logins, Sent folder and DNS. A mailbox that cannot log in is refused here, so nothing is stored.
 */
async function checkNewSender(input: CreateInput, ctx: PrepareCtx): Promise<CreateChecks> {
  if (input.channel === 'sandbox') return new CreateChecks(null, null);
  // The id is not drawn yet (the handler draws it): the check needs none, a new sender keeps no secret.
  const { sender, password, imapPassword } = draftSender(input, ctx, PENDING_ID);
  const host = await serverHostProblem(ctx, sender);
  if (input.channel !== 'email') return new CreateChecks(host, null);
  const check = await checkSender(ctx, sender, { secrets: { smtp: password ?? null, imap: imapPassword ?? null }, dkimSelector: input.channelConfig.dkimSelector ?? null, hostRefusal: host?.refusal ?? null });
  const refused = check.lines.filter(loginFailed);
  if (refused.length > 0) {
    throw new DomainError('SENDER_CHECK_FAILED', `${sender.name} was not connected: ${refused.map(lineSentence).join(' ')}`, { lines: check.lines });
  }
  return new CreateChecks(host, check);
}

const PENDING_ID = '00000000-0000-4000-8000-000000000000';

const create = mutation({
  name: 'sdrProfiles.create',
  summary:
    "Connects a sender: the sandbox network, an SMTP mailbox or an HTTP connector. A server-hosted sender whose host the server's runner refuses is created disconnected with the reason as a warning; one at a link-local or cloud metadata address (whatever ALLOW_PRIVATE_SENDER_HOSTS says) is refused with 422 URL_NOT_ALLOWED and nothing is created.",
  input: createInput,
  output: senderOut.extend({ warnings: z.array(z.string()) }),
  prepare: (input, ctx) => checkNewSender(input, ctx),
  async handler(input, ctx) {
    const id = ctx.ids.uuid();
    const warnings: string[] = [];
    const { sender, password, imapPassword } = draftSender(input, ctx, id);
    // A new account starts slowly: 20% of its limits, growing to 100% over 14 days. An account
    // its user says is warmed up starts at its limits (the weekly cap still holds).
    sender.warmedUp = input.warmedUp ?? false;
    sender.rampUpStartedAt = sender.warmedUp ? null : sender.createdAt;
    // Signs the List-Unsubscribe tokens of this sender's emails (shared/replies/unsubscribe-token.ts).
    if (sender.channel === 'email') sender.unsubscribeKey = newUnsubscribeKey(ctx.secrets.randomBytes);
    // Found by prepare (before the transaction); a caller that skipped it gets them made now.
    const found = ctx.prepared instanceof CreateChecks ? ctx.prepared : await checkNewSender(input, ctx);
    if (found.host) {
      warnings.push(found.host.warning);
      if (found.host.refusal) {
        sender.status = 'disconnected';
        sender.statusReason = found.host.refusal;
      }
    }
    if (found.check) {
      // The other findings (Sent folder, SPF, DKIM, DMARC) are warnings and its last check; the
      // refusal of the host is already said above.
      sender.lastCheck = found.check;
      for (const l of found.check.lines) if (l.status !== 'pass' && l.check !== 'hosts') warnings.push(lineSentence(l));
    }
    await ctx.db.put('senders', sender);
    if (password !== undefined) {
      const port = ctx.credentials ?? null;
      if (port && port.hostedBy === hostedByOf(sender)) await storeSenderSecret(ctx, sender, password);
      else if (hostedByOf(sender) === 'server') warnings.push('The SMTP password was not stored: this sender runs on the sync server, so set it there with sdrProfiles.setCredentials.');
      else warnings.push('The SMTP password was not stored in the workspace; enter it on the desktop that hosts this sender, which keeps it locally.');
    }
    if (imapPassword !== undefined) {
      const port = ctx.credentials ?? null;
      if (port && port.hostedBy === hostedByOf(sender)) await storeSenderSecret(ctx, sender, imapPassword, 'imap');
      else warnings.push(`The IMAP password was not stored: set it where this sender runs (${hostedByOf(sender) === 'server' ? 'the sync server' : 'its owner\'s desktop'}) with sdrProfiles.setCredentials and imap: true.`);
    }
    return { ...summary(sender), warnings };
  },
});

export const ops = opsByName(create);
