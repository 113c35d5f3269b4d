/**
 * Sender secrets (SMTP password, HTTP connector token). They are kept beside the runner that uses
 * them, through the ctx.credentials port, and never in a document nor in any answer: sender documents
 * replicate to every member's desktop. A sender's channelConfig.hostedBy says where its channel runs
 * ('server': the sync server's runner; 'desktop', the default: its owner's desktop), so the secret is
 * stored only on a host whose port serves that side.
 */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import type { Sender } from '../model/index.ts';
import { mutation, opsByName } from './define.ts';
import { senderHostsOf } from './sender-hosts.ts';
import { uuid } from './params.ts';

export type HostedBy = 'desktop' | 'server';

/** The sync server's refusal of a server-hosted sender's hosts, or null (also when it cannot be asked). */
async function hostRefusal(ctx: Ctx, sender: Sender): Promise<string | null> {
  try {
    return (await ctx.senderHosts?.refusal(senderHostsOf(sender))) ?? null;
  } catch {
    return null;
  }
}

/** The name an email sender's own IMAP password is kept under in the credentials port (beside the
 * SMTP password, kept under the sender's id). Without one, the IMAP login uses the SMTP password. */
export const imapCredentialId = (sdrProfileId: string): string => `${sdrProfileId}:imap`;

/** Where a sender's channel runs: the sync server only when its channelConfig says so. */
export const hostedByOf = (sender: Pick<Sender, 'channelConfig'>): HostedBy => (sender.channelConfig.hostedBy === 'server' ? 'server' : 'desktop');

const SECRET_WORD: Record<Sender['channel'], string> = { email: 'SMTP password', http: 'connector token', sandbox: 'secret' };

/** Refuses unless ctx keeps the secrets of this sender's side; returns the port. */
function portFor(ctx: Ctx, sender: Sender): NonNullable<Ctx['credentials']> {
  const hostedBy = hostedByOf(sender);
  const port = ctx.credentials ?? null;
  if (port && port.hostedBy === hostedBy) return port;
  const where =
    hostedBy === 'server'
      ? `${sender.name} runs on the sync server, so its ${SECRET_WORD[sender.channel]} is kept there: set it through the sync server's API (POST /sdrProfiles.setCredentials with an API key).`
      : `${sender.name} runs on its owner's desktop, so its ${SECRET_WORD[sender.channel]} is kept only there: enter it in that desktop app.`;
  throw new DomainError('SERVER_ONLY', where, { sdrProfileId: sender.id, hostedBy });
}

/** Stores a sender's secret where its channel runs; the caller must be its owner, an owner or an admin. */
export async function storeSenderSecret(ctx: Ctx, sender: Sender, secret: string, slot: 'login' | 'imap' = 'login'): Promise<HostedBy> {
  if (sender.channel === 'sandbox') {
    throw new DomainError('INVALID_INPUT', `${sender.name} is on the sandbox network, which needs no password or token.`, { sdrProfileId: sender.id, channel: sender.channel });
  }
  if (slot === 'imap' && sender.channel !== 'email') {
    throw new DomainError('INVALID_INPUT', `${sender.name} is not an email sender, so it has no IMAP password.`, { sdrProfileId: sender.id, channel: sender.channel });
  }
  const a = ctx.actor;
  if (!a.isSystem && a.role === 'member' && sender.ownerMemberId !== a.memberId) {
    throw new DomainError('PERMISSION_DENIED', `Only ${sender.name}'s owner, or a workspace owner or admin, may set its ${SECRET_WORD[sender.channel]}.`, { sdrProfileId: sender.id });
  }
  const port = portFor(ctx, sender);
  await port.set(a.workspaceId, slot === 'imap' ? imapCredentialId(sender.id) : sender.id, secret, { at: nowIso(ctx), by: a.memberId });
  return port.hostedBy;
}

const secretInput = z.string().min(1, 'must not be empty').max(4096);

export const credentialsOps = opsByName(
  mutation({
    name: 'sdrProfiles.setCredentials',
    summary: "Stores a sender's SMTP password or connector token where its channel runs; never returned.",
    input: z.object({
      sdrProfileId: uuid,
      secret: secretInput,
      /** True: the email sender's IMAP password, when it differs from the SMTP one. */
      imap: z.boolean().optional(),
    }).strict(),
    output: z.object({
      sdrProfileId: z.string(),
      channel: z.string(),
      /** Where the secret is kept: the sync server or the owner's desktop. */
      storedOn: z.enum(['server', 'desktop']),
      /** True when the sender was disconnected (its login refused) and is available again. */
      reconnected: z.boolean(),
      status: z.string(),
    }),
    async handler(input, ctx) {
      const sender = await ctx.db.get('senders', input.sdrProfileId);
      if (!sender) throw notFound('Sender', input.sdrProfileId);
      const storedOn = await storeSenderSecret(ctx, sender, input.secret, input.imap === true ? 'imap' : 'login');
      // The runner disconnects a sender whose login was refused; new credentials are the fix, so
      // the sender works again (paused stays paused).
      let status = sender.status;
      // New credentials do not change a host the sync server refuses: that sender stays disconnected.
      const refusal = sender.status === 'disconnected' && hostedByOf(sender) === 'server' ? await hostRefusal(ctx, sender) : null;
      const reconnected = sender.status === 'disconnected' && refusal === null;
      if (reconnected) {
        status = sender.outreachPaused ? 'paused' : 'available';
        await ctx.db.put('senders', { ...sender, status, statusReason: null, backoffUntil: null, updatedAt: nowIso(ctx) });
      } else if (refusal !== null && sender.statusReason !== refusal) {
        await ctx.db.put('senders', { ...sender, statusReason: refusal, updatedAt: nowIso(ctx) });
      }
      return { sdrProfileId: sender.id, channel: sender.channel, storedOn, reconnected, status };
    },
  }),
);
