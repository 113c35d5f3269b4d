/**
 * The sandbox network: a deterministic simulated social network for demos and tests. Everything a
 * person does is a pure function of the seed and what was sent (sender, lead, action, our message
 * id, when), so a run replays identically and a restarted host can rebuild the pending events from
 * the messages already stored (`restore`). Posts are a pure function of their URL.
 * Nothing here talks to a real network.
 */
import type { Clock } from '../context.ts';
import type { Lead, Message, Sender } from '../model/index.ts';
import { ChannelFailure } from './channel.ts';
import { hash32 } from './hash.ts';
import type { Channel, ChannelAction, ChannelEvent, ChannelSendResult, PollResult, PostReadResult, SocialPostItem } from './channel.ts';

/** How people behave, on average; each person's own responsiveness scales the rates. */
export type SandboxBehaviour = {
  acceptRate: number;
  replyRate: number;
  /** Chance that a positive reply leads to a booked meeting. */
  meetingRate: number;
  openRate: number;
  acceptDelayHours: readonly [number, number];
  replyDelayHours: readonly [number, number];
  meetingDelayHours: readonly [number, number];
  openDelayHours: readonly [number, number];
};

export const DEFAULT_BEHAVIOUR: SandboxBehaviour = {
  acceptRate: 0.45,
  replyRate: 0.15,
  meetingRate: 0.35,
  openRate: 0.55,
  acceptDelayHours: [1, 72],
  replyDelayHours: [0.5, 48],
  meetingDelayHours: [2, 96],
  openDelayHours: [0.1, 24],
};

/** How fast people answer: realistically (hours, the default) or at the demo's pace (seconds to a
 * minute, for the demo workspace, whose senders carry channelConfig.pace 'demo'). */
export type SandboxPace = 'realistic' | 'demo';

/** The demo's people: they answer within a minute and more of them do, so a new user pressing
 * Start sees sends, accepts and replies arrive within two minutes. */
export const DEMO_BEHAVIOUR: SandboxBehaviour = {
  acceptRate: 0.9,
  replyRate: 0.8,
  meetingRate: 0.35,
  openRate: 0.7,
  acceptDelayHours: [3 / 3600, 40 / 3600],
  replyDelayHours: [10 / 3600, 60 / 3600],
  meetingDelayHours: [60 / 3600, 300 / 3600],
  openDelayHours: [5 / 3600, 30 / 3600],
};

/** A sender's pace on the sandbox network for an action sent at `at` (channelConfig.pace, from
 * channelConfig.paceSince when given: what was sent before keeps the realistic pace it had). */
export function paceOf(sender: Pick<Sender, 'channelConfig'>, at: string): SandboxPace {
  if (sender.channelConfig.pace !== 'demo') return 'realistic';
  const since = sender.channelConfig.paceSince;
  return typeof since === 'string' && at < since ? 'realistic' : 'demo';
}

export type SandboxOptions = {
  seed: number | string;
  clock: Clock;
  behaviour?: Partial<SandboxBehaviour>;
  /** Whether accounts on this network can send voice notes (default true). */
  voiceNotes?: boolean;
};

/** Searches read at most this many comments or reactions each. */
export const SANDBOX_PAGE_SIZE = 10;

/** A deterministic number in [0, 1) for the parts. */
export { hash32 };

export const unit = (...parts: readonly (string | number)[]): number => hash32(...parts) / 4294967296;

const pick = <T>(list: readonly T[], ...parts: readonly (string | number)[]): T => list[hash32(...parts) % list.length] as T;

const FIRST = ['Ava', 'Liam', 'Maya', 'Noah', 'Zoe', 'Ethan', 'Lena', 'Omar', 'Ines', 'Kai', 'Nora', 'Ravi', 'Sofia', 'Jonas', 'Amara', 'Felix', 'Hana', 'Diego', 'Priya', 'Leo', 'Chloe', 'Mateo', 'Yuki', 'Elena'];
const LAST = ['Novak', 'Reyes', 'Chen', 'Okafor', 'Larsen', 'Moreau', 'Silva', 'Kowalski', 'Haddad', 'Nguyen', 'Fischer', 'Rossi', 'Patel', 'Andersen', 'Kim', 'Dubois', 'Costa', 'Schmidt', 'Tanaka', 'Byrne'];
const COMPANIES = ['Northwind', 'Globex', 'Initech', 'Umbrella Labs', 'Stark Analytics', 'Hooli', 'Vandelay Imports', 'Acme Cloud', 'Wayne Logistics', 'Soylent Foods', 'Tyrell Systems', 'Cyberdyne Health'];
const TITLES = ['Head of Sales', 'VP Marketing', 'Founder', 'CTO', 'Revenue Operations Manager', 'Account Executive', 'Director of Growth', 'Product Manager', 'Chief Executive Officer', 'Sales Development Lead'];
const COMMENTS = ['Great insight, thanks for sharing!', 'We saw the same thing this quarter.', 'Curious how this scales for smaller teams.', 'Totally agree with point two.', 'Would love to hear more about your setup.', 'This matches our experience exactly.', 'Bookmarking this one.', 'Interesting take. What tools do you use?'];
const REACTIONS = ['LIKE', 'CELEBRATE', 'SUPPORT', 'INSIGHTFUL', 'LOVE', 'FUNNY'];
const POSITIVE_REPLIES = ['Thanks for reaching out! Happy to chat next week.', 'Sounds interesting, do you have time on Thursday?', 'Sure, send me a calendar link.', 'Good timing, we are looking at this right now.'];
const OTHER_REPLIES = ['Not interested at the moment, thanks.', 'Please reach out again next quarter.', 'I am not the right person for this, sorry.'];

export type SandboxPerson = { firstName: string; lastName: string; company: string; jobTitle: string; headline: string; profileUrl: string };

/** A simulated person for a key (a post URL and position, a lead id...). */
export function sandboxPerson(key: string): SandboxPerson {
  const firstName = pick(FIRST, key, 'first');
  const lastName = pick(LAST, key, 'last');
  const company = pick(COMPANIES, key, 'company');
  const jobTitle = pick(TITLES, key, 'title');
  const slug = `${firstName}-${lastName}-${hash32(key, 'slug').toString(36)}`.toLowerCase();
  return { firstName, lastName, company, jobTitle, headline: `${jobTitle} at ${company}`, profileUrl: `https://social.example/in/${slug}` };
}

type Post = { totalComments: number; totalReactions: number; postedAt: number };

function postOf(url: string): Post {
  const h = hash32(url, 'post');
  // Posts date from 2026 so dates do not depend on the clock; people engage over the following hours.
  return { totalComments: 3 + (h % 38), totalReactions: 5 + (hash32(url, 'reactions') % 116), postedAt: Date.UTC(2026, 0, 1) + (h % 300) * 86_400_000 };
}

function postItem(url: string, part: 'comments' | 'reactions', i: number, post: Post): SocialPostItem {
  const person = sandboxPerson(`${url}#${part}#${i}`);
  return {
    author: `${person.firstName} ${person.lastName}`,
    text: part === 'comments' ? pick(COMMENTS, url, part, i) : pick(REACTIONS, url, part, i),
    date: new Date(post.postedAt + (i + 1) * 1_800_000).toISOString(),
    authorDetails: { headline: person.headline, profileUrl: person.profileUrl },
  };
}

/** Reads a post as the sandbox does, for a budget of searches (pages of SANDBOX_PAGE_SIZE). */
export function readSandboxPost(postUrl: string, part: 'comments' | 'reactions', budget: number): PostReadResult {
  if (!/^https:\/\/\S+$/.test(postUrl)) throw new ChannelFailure('rejected', `${postUrl} is not a post address (https://...).`);
  const post = postOf(postUrl);
  const total = part === 'comments' ? post.totalComments : post.totalReactions;
  // Finding out that a post has no engagement still costs one search.
  const pages = Math.max(1, Math.ceil(total / SANDBOX_PAGE_SIZE));
  const used = Math.max(0, Math.min(pages, Math.floor(budget)));
  const count = Math.min(total, used * SANDBOX_PAGE_SIZE);
  const items: SocialPostItem[] = [];
  for (let i = 0; i < count; i++) items.push(postItem(postUrl, part, i, post));
  return { items, total, searchesUsed: used, stoppedEarly: used < pages };
}

type Pending = { at: number; event: ChannelEvent };

/** A sent action the network knows about (what `restore` needs from a stored message). */
export type SentRecord = Pick<Message, 'sdrProfileId' | 'leadId' | 'kind' | 'chatId' | 'externalId' | 'text'> & { id: string; sentAt: string; pace?: SandboxPace };

export type SandboxNetwork = Channel & {
  readonly seed: string;
  /** Rebuilds pending events from messages already sent (after a host restart). Idempotent. */
  restore(sent: readonly SentRecord[]): void;
  /** Number of events the network has scheduled, delivered or not (for tests and the demo). */
  eventCount(): number;
};

export function createSandboxNetwork(opts: SandboxOptions): SandboxNetwork {
  const seed = String(opts.seed);
  const base: SandboxBehaviour = { ...DEFAULT_BEHAVIOUR, ...opts.behaviour };
  const voiceNotes = opts.voiceNotes ?? true;
  /** Per sender, events sorted by time. */
  const pending = new Map<string, Pending[]>();
  const known = new Set<string>();
  const accepted = new Set<string>();
  const replied = new Set<string>();

  const hours = (range: readonly [number, number], ...parts: readonly (string | number)[]): number =>
    Math.round((range[0] + unit(seed, ...parts) * (range[1] - range[0])) * 3_600_000);
  /** How responsive a person is (0.5-1.5x the average rates). */
  const responsiveness = (leadId: string): number => 0.5 + unit(seed, leadId, 'persona');

  /** Index of the first event strictly after `t` in a time-sorted list. */
  function firstAfter(list: readonly Pending[], t: number): number {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((list[mid] as Pending).at <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  function schedule(senderId: string, at: number, event: ChannelEvent): void {
    let list = pending.get(senderId);
    if (!list) {
      list = [];
      pending.set(senderId, list);
    }
    list.splice(firstAfter(list, at), 0, { at, event });
  }

  /** Decides what the person does about one received action; pure in (seed, record). */
  function register(r: SentRecord): void {
    if (known.has(r.id)) return;
    known.add(r.id);
    const sentAt = Date.parse(r.sentAt);
    const pair = `${r.sdrProfileId}|${r.leadId}`;
    const resp = responsiveness(r.leadId);
    const demo = r.pace === 'demo';
    const b = demo ? DEMO_BEHAVIOUR : base;
    const chance = (rate: number, what: string): boolean => unit(seed, r.id, what) < Math.min(0.95, rate * resp);

    if (r.kind === 'connection_request') {
      if (!accepted.has(pair) && chance(b.acceptRate, 'accept')) {
        accepted.add(pair);
        schedule(r.sdrProfileId, sentAt + hours(b.acceptDelayHours, r.id, 'accept-delay'), { kind: 'connection_accepted', leadId: r.leadId, at: '' });
      }
      // A note is a message too: some people answer it.
      if (r.text && !replied.has(pair) && chance(b.replyRate / 2, 'note-reply')) replyTo(r, pair, sentAt, b);
      return;
    }
    if (r.kind === 'email' && chance(b.openRate, 'open')) {
      schedule(r.sdrProfileId, sentAt + hours(b.openDelayHours, r.id, 'open-delay'), { kind: 'email_opened', leadId: r.leadId, externalId: r.externalId ?? r.id, at: '' });
    }
    if ((r.kind === 'message' || r.kind === 'voice_note' || r.kind === 'inmail' || r.kind === 'email') && !replied.has(pair) && chance(b.replyRate, 'reply')) {
      replyTo(r, pair, sentAt, b);
    }
  }

  function replyTo(r: SentRecord, pair: string, sentAt: number, b: SandboxBehaviour): void {
    replied.add(pair);
    const positive = unit(seed, r.id, 'tone') < 0.6;
    const at = sentAt + hours(b.replyDelayHours, r.id, 'reply-delay');
    const text = positive ? pick(POSITIVE_REPLIES, seed, r.id, 'text') : pick(OTHER_REPLIES, seed, r.id, 'text');
    schedule(r.sdrProfileId, at, { kind: 'reply', leadId: r.leadId, chatId: r.chatId, text, at: '', externalId: `sbx-reply-${r.id}` });
    if (positive && unit(seed, r.id, 'meeting') < b.meetingRate) {
      schedule(r.sdrProfileId, at + hours(b.meetingDelayHours, r.id, 'meeting-delay'), { kind: 'meeting_booked', leadId: r.leadId, at: '' });
    }
  }

  function chatFor(sender: Sender, lead: Lead, action: ChannelAction, ref: string): string {
    switch (action.kind) {
      case 'message':
        return action.chatId ?? `sbx-chat-${hash32(seed, sender.id, lead.id).toString(36)}`;
      case 'email':
        return action.thread?.chatId ?? `<${ref}@sandbox.example>`;
      case 'inmail':
        return `sbx-inmail-${ref}`;
      default:
        return `sbx-chat-${hash32(seed, sender.id, lead.id).toString(36)}`;
    }
  }

  return {
    seed,
    async send(sender: Sender, lead: Lead, action: ChannelAction, ref: string): Promise<ChannelSendResult> {
      if (sender.status === 'disconnected') throw new ChannelFailure('unauthorized', `${sender.name} is not connected to the sandbox network.`);
      if (action.kind === 'message' && action.voiceNote && !voiceNotes) {
        throw new ChannelFailure('unsupported', 'This sandbox network does not deliver voice notes.');
      }
      if (action.kind === 'email' && !lead.email) throw new ChannelFailure('rejected', `${lead.fullName || lead.id} has no email address.`);
      const chatId = chatFor(sender, lead, action, ref);
      const externalId = action.kind === 'email' ? `<${ref}@sandbox.example>` : `sbx-${ref}`;
      const kind: Message['kind'] = action.kind === 'message' && action.voiceNote ? 'voice_note' : action.kind;
      const text = action.kind === 'connection_request' ? action.note : 'text' in action ? action.text : '';
      const sentAt = opts.clock.now().toISOString();
      register({ id: ref, sdrProfileId: sender.id, leadId: lead.id, kind, chatId, externalId, text, sentAt, pace: paceOf(sender, sentAt) });
      return { status: 'sent', externalId, chatId };
    },
    async poll(sender: Sender, cursor: string | null): Promise<PollResult> {
      const now = opts.clock.now().getTime();
      const from = cursor ? Date.parse(cursor) : Number.NEGATIVE_INFINITY;
      const list = pending.get(sender.id) ?? [];
      // Events stay after delivery: a poll whose results were not recorded is simply asked again.
      const events: ChannelEvent[] = [];
      for (let i = firstAfter(list, from); i < list.length; i++) {
        const p = list[i] as Pending;
        if (p.at > now) break;
        events.push({ ...p.event, at: new Date(p.at).toISOString() });
      }
      const next = Number.isFinite(from) ? Math.max(from, now) : now;
      return { events, cursor: new Date(next).toISOString() };
    },
    async readPost(sender: Sender, postUrl: string, part: 'comments' | 'reactions', budget: number): Promise<PostReadResult> {
      if (sender.status === 'disconnected') throw new ChannelFailure('unauthorized', `${sender.name} is not connected to the sandbox network.`);
      return readSandboxPost(postUrl, part, budget);
    },
    canSendMessage: (sender: Sender) => sender.status !== 'disconnected',
    restore(sent: readonly SentRecord[]): void {
      for (const r of [...sent].sort((x, y) => x.sentAt.localeCompare(y.sentAt) || x.id.localeCompare(y.id))) register(r);
    },
    eventCount: () => [...pending.values()].reduce((n, l) => n + l.length, 0),
  };
}
