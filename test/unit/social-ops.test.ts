import { describe, expect, it } from 'vitest';
import { makeHarness } from '../support/harness.ts';
import { ChannelFailure, channelHostOf } from '../../shared/engine/channel.ts';
import { createSandboxNetwork, readSandboxPost, SANDBOX_PAGE_SIZE } from '../../shared/engine/sandbox.ts';
import { emptyUsage } from '../../shared/model/factories.ts';
import { ScriptedChannel } from './engine-fixtures.ts';

const pages = (total: number) => Math.max(1, Math.ceil(total / SANDBOX_PAGE_SIZE));

/** A post URL whose comments (and reactions) span at least that many searches. */
function postWith(minPages: number, minReactionPages = 1): { url: string; comments: number; reactions: number } {
  for (let i = 0; ; i++) {
    const url = `https://social.example/posts/${i}`;
    const c = readSandboxPost(url, 'comments', 1000).total;
    const r = readSandboxPost(url, 'reactions', 1000).total;
    if (pages(c) >= minPages && pages(r) >= minReactionPages) return { url, comments: c, reactions: r };
  }
}

async function world() {
  const scripted = new ScriptedChannel();
  let h: Awaited<ReturnType<typeof makeHarness>> | null = null;
  const sandbox = createSandboxNetwork({ seed: 's', clock: { now: () => (h ? h.clock.now() : new Date()) } });
  h = await makeHarness({ channels: channelHostOf({ sandbox, http: scripted }) });
  return { h, scripted };
}

describe('social.getAccountLimits', () => {
  it('reports used, remaining and limit per allowance for today in the sender\'s zone, capped at the plan', async () => {
    const { h } = await world();
    const tokyo = await h.addSender({ name: 'Tokyo', timeZone: 'Asia/Tokyo', limits: { messages: 40, inmails: 5, connectionRequests: 20, connectionRequestsWithNote: 10, comments: 5, reactions: 10, profileVisits: 30 }, searchLimit: 25 });
    const gone = await h.addSender({ name: 'Gone', status: 'disconnected' });
    h.clock.set('2026-11-16T20:00:00.000Z'); // already Tuesday 17th in Tokyo
    const usage = emptyUsage(h.main.workspaceId, tokyo.id, '2026-11-17', h.now());
    usage.counts.messages = 12;
    usage.counts.connectionRequestsWithNote = 10;
    usage.counts.searches = 7;
    const yesterday = emptyUsage(h.main.workspaceId, tokyo.id, '2026-11-16', h.now());
    yesterday.counts.messages = 40;
    await h.seed([usage, yesterday].map((u) => ({ collection: 'usage' as const, id: u.id, before: null, after: u })));

    const { accounts } = await h.call('social.getAccountLimits', {});
    expect(accounts.map((a) => a.name)).toEqual(['Tokyo']); // disconnected accounts are not listed
    const a = accounts[0];
    expect(a?.day).toBe('2026-11-17');
    expect(a?.sending.messages).toEqual({ used: 12, remaining: 28, limit: 40 });
    expect(a?.sending.connectionRequestsWithNote).toEqual({ used: 10, remaining: 0, limit: 10 });
    expect(a?.sending.premiumMessages).toEqual({ used: 0, remaining: 5, limit: 5 });
    expect(a?.search).toEqual({ used: 7, remaining: 18, limit: 25 });
    expect(a?.canSendMessage).toBe(true);

    const one = await h.call('social.getAccountLimits', { senderProfileId: gone.id });
    expect(one.accounts.map((x) => [x.name, x.canSendMessage])).toEqual([['Gone', false]]);
    await h.expectRefused(h.call('social.getAccountLimits', { senderProfileId: tokyo.id }, h.foreignOwner), 'NOT_FOUND');
  });
});

describe('social.getPostEngagement', () => {
  it('reads comments first, then reactions, and counts every search in the day\'s usage', async () => {
    const { h } = await world();
    const post = postWith(2);
    const sender = await h.addSender({ searchLimit: 100 });
    const r = await h.call('social.getPostEngagement', { senderProfileId: sender.id, postUrl: post.url });
    expect(r.totalComments).toBe(post.comments);
    expect(r.totalReactions).toBe(post.reactions);
    expect(r.comments.length).toBe(post.comments);
    expect(r.reactions.length).toBe(post.reactions);
    expect(r.comments[0]?.authorDetails.profileUrl).toMatch(/^https:\/\//);
    expect([r.stoppedEarlyComments, r.stoppedEarlyReactions, r.reactionsSkippedDueToDailyLimit]).toEqual([false, false, false]);
    expect(r.dailyUsageAfterComments).toMatchObject({ todayUsage: pages(post.comments), remainingSearches: 100 - pages(post.comments), limit: 100 });
    const spent = pages(post.comments) + pages(post.reactions);
    expect(r.dailyUsage).toMatchObject({ todayUsage: spent, remainingSearches: 100 - spent, limit: 100 });
    expect((await h.store.get('usage', `${sender.id}:2026-11-16`))?.counts.searches).toBe(spent);
    // The same post read again gives the same people.
    const again = await h.call('social.getPostEngagement', { senderProfileId: sender.id, postUrl: post.url });
    expect(again.comments).toEqual(r.comments);
    expect(again.dailyUsage.todayUsage).toBe(2 * spent);
  });

  it('stops early when the budget runs out during comments, skipping reactions', async () => {
    const { h } = await world();
    const post = postWith(3);
    const sender = await h.addSender({ searchLimit: 2 });
    const r = await h.call('social.getPostEngagement', { senderProfileId: sender.id, postUrl: post.url });
    expect(r.comments.length).toBe(2 * SANDBOX_PAGE_SIZE);
    expect(r.stoppedEarlyComments).toBe(true);
    expect(r.reactionsSkippedDueToDailyLimit).toBe(true);
    expect(r.reactions).toEqual([]);
    expect(r.stoppedEarlyReactions).toBe(true);
    expect(r.dailyUsageAfterComments).toMatchObject({ todayUsage: 2, remainingSearches: 0 });
    expect(r.dailyUsage).toMatchObject({ todayUsage: 2, remainingSearches: 0, limit: 2 });
  });

  it('reads all comments and only part of the reactions when the budget runs out between them', async () => {
    const { h } = await world();
    const post = postWith(1, 3);
    const budget = pages(post.comments) + 1;
    const sender = await h.addSender({ searchLimit: budget });
    const r = await h.call('social.getPostEngagement', { senderProfileId: sender.id, postUrl: post.url });
    expect(r.stoppedEarlyComments).toBe(false);
    expect(r.reactionsSkippedDueToDailyLimit).toBe(false);
    expect(r.reactions.length).toBe(SANDBOX_PAGE_SIZE);
    expect(r.stoppedEarlyReactions).toBe(true);
    expect(r.dailyUsage).toMatchObject({ todayUsage: budget, remainingSearches: 0 });
  });

  it('answers with empty lists and stoppedEarly (not an error) when the budget is already spent', async () => {
    const { h } = await world();
    const sender = await h.addSender({ searchLimit: 0 });
    const r = await h.call('social.getPostEngagement', { senderProfileId: sender.id, postUrl: 'https://social.example/posts/x' });
    expect(r).toMatchObject({ comments: [], reactions: [], stoppedEarlyComments: true, stoppedEarlyReactions: true, reactionsSkippedDueToDailyLimit: true });
    expect(r.dailyUsage).toMatchObject({ todayUsage: 0, remainingSearches: 0, limit: 0 });
    expect(await h.store.get('usage', `${sender.id}:2026-11-16`)).toBeNull();
  });

  it('refuses what it cannot do, changing nothing: offline, an email account, a failing network, a foreign sender, a non-https address', async () => {
    const { h, scripted } = await world();
    const sender = await h.addSender();
    const offline = await makeHarness();
    const s2 = await offline.addSender();
    await offline.expectRefused(offline.call('social.getPostEngagement', { senderProfileId: s2.id, postUrl: 'https://social.example/p/1' }), 'CHANNEL_ERROR');
    const mail = await h.addSender({ name: 'Mail', channel: 'email' });
    await h.expectRefused(h.call('social.getPostEngagement', { senderProfileId: mail.id, postUrl: 'https://social.example/p/1' }), 'INVALID_INPUT');
    const http = await h.addSender({ name: 'Http', channel: 'http' });
    scripted.readPost = async () => {
      throw new ChannelFailure('limited', 'HTTP 429', 60);
    };
    const err = await h.expectRefused(h.call('social.getPostEngagement', { senderProfileId: http.id, postUrl: 'https://social.example/p/1' }), 'CHANNEL_ERROR');
    expect(err.details).toMatchObject({ retryAfterSeconds: 60 });
    await h.expectRefused(h.call('social.getPostEngagement', { senderProfileId: sender.id, postUrl: 'https://social.example/p/1' }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('social.getPostEngagement', { senderProfileId: sender.id, postUrl: 'http://social.example/p/1' }), 'INVALID_INPUT');
  });
});

describe('social.getPostLeads and social.importPostLeads', () => {
  it('lists commenters and reactors once each, marks people already in the CRM, and counts the searches', async () => {
    const { h } = await world();
    const post = postWith(1);
    const sender = await h.addSender();
    const first = await h.call('social.getPostLeads', { senderProfileId: sender.id, postUrl: post.url });
    expect(first.total).toBe(post.comments + post.reactions);
    expect(first.stoppedEarly).toBe(false);
    const urls = first.comments.map((p) => p.authorDetails.profileUrl);
    expect(new Set(urls).size).toBe(urls.length);
    expect(first.comments[0]?.engagement).toBe('comment');
    expect(first.comments.at(-1)?.engagement).toBe('reaction');
    expect(first.dailyUsage.todayUsage).toBe(pages(post.comments) + pages(post.reactions));
    const known = await h.addLead({ firstName: 'Known', socialUrl: urls[0] ?? '' });
    const second = await h.call('social.getPostLeads', { senderProfileId: sender.id, postUrl: post.url });
    expect(second.comments[0]?.existingLeadId).toBe(known.id);
    expect(second.comments[1]?.existingLeadId).toBeNull();
  });

  it('imports the selected people as leads, links people already in the CRM instead of duplicating them', async () => {
    const { h } = await world();
    const post = postWith(1);
    const sender = await h.addSender();
    const found = await h.call('social.getPostLeads', { senderProfileId: sender.id, postUrl: post.url });
    const [p1, p2, p3] = found.comments;
    const existing = await h.addLead({ firstName: 'Already', socialUrl: p1?.authorDetails.profileUrl ?? '' }, h.main.leadGroupId);
    const group = { id: h.ids.uuid(), workspaceId: h.main.workspaceId, createdAt: h.now(), updatedAt: h.now(), name: 'From posts', columns: [] };
    await h.seed([{ collection: 'leadGroups', id: group.id, before: null, after: group }]);
    const picked = [p1, p2, p3].map((p) => p?.authorDetails.profileUrl ?? '');
    const res = await h.call('social.importPostLeads', { senderProfileId: sender.id, postUrl: post.url, leadGroupId: group.id, profileUrls: [...picked, 'https://social.example/in/nobody'] });
    expect([res.created, res.duplicates]).toEqual([2, 1]);
    expect(res.notFound).toEqual(['https://social.example/in/nobody']);
    expect(res.leadIds[0]).toBe(existing.id);
    expect((await h.store.get('leads', existing.id))?.groupIds).toEqual([h.main.leadGroupId, group.id]);
    const made = await h.store.get('leads', res.leadIds[1] ?? '');
    expect(made).toMatchObject({ socialUrl: picked[1], leadGroupId: group.id, fullName: p2?.author });
    expect(made?.jobTitle).not.toBe('');
    const again = await h.call('social.importPostLeads', { senderProfileId: sender.id, postUrl: post.url, leadGroupId: group.id, profileUrls: picked });
    expect([again.created, again.duplicates]).toEqual([0, 3]);
    await h.expectRefused(h.call('social.importPostLeads', { senderProfileId: sender.id, postUrl: post.url, leadGroupId: h.ids.uuid() }), 'NOT_FOUND');
  });
});
