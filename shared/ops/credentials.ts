/**
 * Sender secrets (SMTP password, HTTP connector token). They are kept beside the runner that uses
 * them, through the ctx.credentials port, and never in a document nor in any answer: sender documents
 * replicate to every member's desktop. A sender's channelConfig.hostedBy says where its channel runs
 * ('server': the sync server's runner; 'desktop', the default: its owner's desktop), so the secret is
 * stored only on a host whose port serves that side. sdrProfiles.create and sdrProfiles.setCredentials
 * (shared/ops/sdrProfiles*.ts) store them through storeSenderSecret; the runners read them.
 */
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError } from '../errors.ts';
import type { Sender } from '../model/index.ts';

export type HostedBy = 'desktop' | 'server';

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
