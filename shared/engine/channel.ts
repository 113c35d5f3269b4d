/** The channel port: how the runner and the social operations reach a network. Implementations:
 * the sandbox network (shared/engine/sandbox.ts), SMTP email and the HTTP connector
 * (electron/backend/channels). A channel never decides policy (limits, windows): the runner does. */
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
  | { kind: 'email_opened'; leadId: string; externalId: string; at: string };

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
};

/** Resolves the channel of a sender on this machine; null when the sender is not hosted here. */
export type ChannelHost = { channelFor(sender: Sender): Channel | null };

/** A ChannelHost over a fixed map from channel kind to implementation. */
export function channelHostOf(byKind: Partial<Record<Sender['channel'], Channel>>): ChannelHost {
  return { channelFor: (sender) => byKind[sender.channel] ?? null };
}
