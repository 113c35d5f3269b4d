/** The channel port: how the runner and the social operations reach a network. Implementations:
 * the sandbox network, SMTP email, and the HTTP connector (shared/engine/channels, sync-server,
 * electron/backend). A channel never decides policy (limits, windows): the runner does. */
import type { Lead, Sender } from '../model/index.ts';

export type ChannelAction =
  | { kind: 'message'; text: string; chatId: string | null; voiceNote: { mode: 'ai_voice' | 'recorded'; recordingId: string | null } | null }
  | { kind: 'connection_request'; note: string }
  | { kind: 'inmail'; subject: string; text: string }
  | { kind: 'email'; subject: string; text: string; threadId: string | null }
  | { kind: 'profile_visit' }
  | { kind: 'reaction' };

export type ChannelSendResult = {
  status: 'sent' | 'queued';
  /** The channel's id for the message or action. */
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

/** A channel failure the runner reacts to: `limited` (e.g. HTTP 429) pauses the sender with backoff. */
export class ChannelFailure extends Error {
  constructor(
    readonly kind: 'limited' | 'failed' | 'unsupported',
    message: string,
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.name = 'ChannelFailure';
  }
}

export type Channel = {
  send(sender: Sender, lead: Lead, action: ChannelAction): Promise<ChannelSendResult>;
  /** Events for these leads since `since` (ISO), oldest first. */
  poll(sender: Sender, since: string): Promise<ChannelEvent[]>;
  /** Reads a post's comments or reactions, consuming at most `budget` searches. */
  readPost(sender: Sender, postUrl: string, part: 'comments' | 'reactions', budget: number): Promise<PostReadResult>;
  /** Whether the sender's connected account can currently send messages. */
  canSendMessage(sender: Sender): boolean;
};

/** Resolves the channel of a sender on this machine; null when the sender is not hosted here. */
export type ChannelHost = { channelFor(sender: Sender): Channel | null };
