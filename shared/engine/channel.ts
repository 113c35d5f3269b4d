/** The channel port: how the runner and the social operations reach a network. Implementations:
 * the sandbox network (shared/engine/sandbox.ts), SMTP email and the HTTP connector
 * (channels/, which both runner hosts import). A channel never decides policy (limits, windows): the runner does. */
import type { Lead, Sender } from '../model/index.ts';

/** Where an email continues an earlier one (same_thread): the thread id and the Message-IDs to cite. */
export type EmailThread = { chatId: string; inReplyTo: string; references: string[] };

export type ChannelAction =
  | { kind: 'message'; text: string; chatId: string | null; voiceNote: { mode: 'ai_voice' | 'recorded'; recordingId: string | null } | null }
  | { kind: 'connection_request'; note: string }
  | { kind: 'inmail'; subject: string; text: string }
  | { kind: 'email'; subject: string; text: string; thread: EmailThread | null }
  | { kind: 'profile_visit' }
  | { kind: 'reaction' };

export type ChannelSendResult = {
  status: 'sent' | 'queued';
  /** The channel's id for the message or action (for email: the Message-ID). */
  externalId: string;
  /** The conversation thread; replies arrive with it. */
  chatId: string;
};

/** Something that happened on the network since the last poll. */
export type ChannelEvent =
  | { kind: 'connection_accepted'; leadId: string; at: string }
  | { kind: 'reply'; leadId: string; chatId: string; text: string; at: string; externalId: string }
  | { kind: 'meeting_booked'; leadId: string; at: string }
  | { kind: 'email_opened'; leadId: string; externalId: string; at: string }
  /** An automatic answer (out of office, auto-responder): logged, not a reply; the sequence goes on. */
  | { kind: 'auto_reply'; leadId: string; chatId: string; subject: string; text: string; why: string; at: string; externalId: string }
  /**
   * A delivery-status report (RFC 3464) about one of our emails. `hard` (failed, 5.x.x): the
   * address does not work, the lead's email is marked bounced and email steps stop; `soft`
   * (delayed, or 4.x.x): logged, the mail server keeps trying. `externalId` is the report's own
   * Message-ID, `originalMessageId` the Message-ID of our email it reports on.
   */
  | {
      kind: 'bounce'; leadId: string; chatId: string; at: string; severity: 'hard' | 'soft'; status: string; recipient: string; reason: string;
      externalId: string; originalMessageId: string | null;
    }
  /**
   * A request to unsubscribe sent to the sender's mailbox through the mailto: of our List-Unsubscribe
   * header (subject `unsubscribe <token>`). `leadId` is what the token claims, not yet verified: the
   * runner checks the token against the sender's key before it marks anything (inbound.ts).
   */
  | { kind: 'unsubscribe'; leadId: string; token: string; at: string; externalId: string };

/** A recipient refused while sending (an SMTP 5xx answer to RCPT or DATA): a bounce at send time. */
export type SendBounce = { status: string; recipient: string; reason: string };

export type PollResult = {
  events: ChannelEvent[];
  /** Opaque position to pass to the next poll; the runner stores it on the sender. */
  cursor: string;
};

export type SocialPostItem = {
  author: string;
  text: string;
  date: string;
  authorDetails: { headline: string; profileUrl: string };
};

export type PostReadResult = {
  items: SocialPostItem[];
  /** How many exist on the post. */
  total: number;
  /** Searches this read consumed from the daily budget. */
  searchesUsed: number;
  /** True when the read ended before every item was read (budget ran out). */
  stoppedEarly: boolean;
};

/** What the account itself reports (the HTTP connector's account endpoint). */
export type AccountInfo = { canSendMessage: boolean; reason: string | null };

/**
 * A channel failure the runner reacts to:
 * - `limited`: the network asks us to slow down (HTTP 429); the sender backs off for retryAfterSeconds.
 * - `failed`: the channel is unreachable or broken (5xx, network); the sender backs off and retries.
 * - `unauthorized`: the account's credentials were refused; the sender is disconnected until fixed.
 * - `rejected`: this action was refused for this lead (bad recipient); retrying will not help.
 * - `unsupported`: the channel cannot perform this kind of action (e.g. a voice note over email).
 */
export type ChannelFailureKind = 'limited' | 'failed' | 'unauthorized' | 'rejected' | 'unsupported';

export class ChannelFailure extends Error {
  constructor(
    readonly kind: ChannelFailureKind,
    message: string,
    readonly retryAfterSeconds: number | null = null,
    /** For a `rejected` email: the server refused the address itself, so the lead's email bounced. */
    readonly bounce: SendBounce | null = null,
  ) {
    super(message);
    this.name = 'ChannelFailure';
  }
}

export type Channel = {
  /** Performs one action. `ref` is our messages document id: channels use it as an idempotency key
   * (and SMTP as the Message-ID), so a retried send is recognisable. */
  send(sender: Sender, lead: Lead, action: ChannelAction, ref: string): Promise<ChannelSendResult>;
  /** Events since `cursor` (null: from the beginning), oldest first, and the cursor to continue from. */
  poll(sender: Sender, cursor: string | null): Promise<PollResult>;
  /** Reads a post's comments or reactions, consuming at most `budget` searches. */
  readPost(sender: Sender, postUrl: string, part: 'comments' | 'reactions', budget: number): Promise<PostReadResult>;
  /** Whether the sender's connected account can currently send messages (last known answer). */
  canSendMessage(sender: Sender): boolean;
  /** Asks the account for its current state, when the channel can. */
  accountInfo?(sender: Sender): Promise<AccountInfo>;
  /**
   * True when `send` with a `ref` it already performed performs nothing again and answers as the
   * first time (the HTTP connector dedupes by our message id). The runner then settles an
   * interrupted send (an intent without outcome after a crash) by sending again with the same ref.
   */
  readonly idempotentSends?: boolean;
  /**
   * After a crash between a send and its record: did the send with this `ref` happen? `'sent'`
   * (found, e.g. in the mailbox's Sent folder by Message-ID `<ref@...>`), `'not_found'` (the
   * channel is sure it did not happen, so sending now is not a second send), `'unknown'` (cannot
   * tell). Without this method and without idempotentSends the runner never sends such an intent
   * again by itself: it marks the message "delivery unknown" for a person to settle.
   */
  findSent?(sender: Sender, ref: string): Promise<FindSentResult>;
};

/** What a channel knows about an interrupted send; `externalId`/`chatId` when it was found. */
export type FindSentResult = { status: 'sent'; externalId: string; chatId: string } | { status: 'not_found' } | { status: 'unknown' };

/** Resolves the channel of a sender on this machine; null when the sender is not hosted here. */
export type ChannelHost = { channelFor(sender: Sender): Channel | null };

/** A ChannelHost over a fixed map from channel kind to implementation. */
export function channelHostOf(byKind: Partial<Record<Sender['channel'], Channel>>): ChannelHost {
  return { channelFor: (sender) => byKind[sender.channel] ?? null };
}
