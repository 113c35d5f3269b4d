/**
 * A realistic demo workspace, made by using the product: the owner imports 500 leads, creates tags,
 * sandbox senders and two campaigns through the operations (`execute`, every rule checked), and the
 * outreach runner works the campaigns over simulated past days on the sandbox network, so stages,
 * sequences, replies, metrics and last-activity times agree by construction. On the last day the
 * owner opens the campaigns' windows to every hour of the user's zone (so no follow-up is left
 * waiting for a window); at the end the owner closes a few deals, puts some on hold and pauses the
 * campaigns, with the senders on the sandbox's demo pace (answers within a minute).
 * Pure over its inputs (ids, random source, `now`): it runs in an in-memory store and returns the
 * writes to commit beside the workspace's own documents. The only document not made by an
 * operation is the "Demo prospects" lead group (no operation creates a bare lead group).
 *
 * One file of ~500 lines on purpose: the demo is one story told in order (import, tags, senders,
 * campaigns, simulated days, closing), and its steps share the ids and counts that make it agree.
 */
import type { Actor, Ids, Secrets } from './context.ts';
import { createRunner } from './engine/runner.ts';
import { isOpen } from './engine/schedule.ts';
import { createSandboxNetwork } from './engine/sandbox.ts';
import { MemoryDatabase } from './memory-store.ts';
import { COLLECTION_NAMES } from './model/index.ts';
import type { Activity, CollectionName, Lead, LeadGroup, Stage } from './model/index.ts';
import { newLeadGroup } from './model/factories.ts';
import { execute } from './ops/execute.ts';
import type { ExecEnv } from './ops/execute.ts';
import type { OpInput, OpName, OpOutput } from './ops/index.ts';
import { validateWrites } from './rules/index.ts';
import type { AnyWrite, Store } from './store.ts';
import { Tx } from './tx.ts';

export type DemoSeedInput = {
  workspaceId: string;
  /** The member who does the work: imports, senders, campaigns, notes and tasks. */
  ownerId: string;
  /** The workspace's existing lead group (kept as it is). */
  leadGroupId: string;
  ids: Ids;
  /** ISO 8601 time the demo is created at; the simulated days end here. */
  now: string;
  /** Uniform in [0, 1); the same source gives the same demo. */
  random: () => number;
  /** The workspace's pipeline stages. */
  stages?: readonly Stage[];
  /** The workspace's documents as they are (workspace, members, stages, lead groups...): the seed
   * runs over them and returns only what it creates or changes. */
  existing?: readonly AnyWrite[];
  /** Number of leads (default 500). */
  leadCount?: number;
  /** Simulated days of outreach before `now` (default 10). */
  days?: number;
  /** IANA zone of the user: the campaigns' windows cover every hour of it at the end (default UTC). */
  userTimeZone?: string;
};

export type DemoSeedCounts = {
  leadGroups: number;
  tags: number;
  leads: number;
  companies: number;
  senders: number;
  campaigns: number;
  enrollments: number;
  notes: number;
  tasks: number;
  messages: number;
  replies: number;
};

export const DEMO_CUSTOM_COLUMNS = ['Pain point', 'Recent post', 'Team size'] as const;

const FIRST_NAMES = [
  'Olivia', 'Liam', 'Emma', 'Noah', 'Ava', 'Elijah', 'Sophia', 'James', 'Isabella', 'Lucas', 'Mia', 'Mateo', 'Amelia', 'Ethan',
  'Harper', 'Aiden', 'Chloe', 'Samuel', 'Priya', 'Arjun', 'Mei', 'Hiroshi', 'Yuna', 'Omar', 'Layla', 'Tomasz', 'Katarzyna',
  'Lars', 'Freja', 'Matteo', 'Giulia', 'Lukas', 'Lea', 'Hugo', 'Camille', 'Diego', 'Valentina', 'Kwame', 'Amara', 'Sean',
  'Aoife', 'Nikolai', 'Elena', 'Rafael', 'Beatriz', 'Daniel', 'Grace', 'Benjamin', 'Zoe', 'Henry', 'Nora', 'Ravi', 'Ines',
  'Jonas', 'Hana', 'Felix', 'Maya', 'Leo', 'Sara', 'Adam',
] as const;
const LAST_NAMES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Garcia', 'Miller', 'Davis', 'Martinez', 'Lopez', 'Wilson', 'Anderson', 'Taylor',
  'Thomas', 'Moore', 'Jackson', 'Lee', 'Nguyen', 'Patel', 'Kim', 'Chen', 'Wang', 'Tanaka', 'Sato', 'Haddad', 'Kowalski',
  'Nowak', 'Larsen', 'Nielsen', 'Rossi', 'Bianchi', 'Schmidt', 'Fischer', 'Dubois', 'Moreau', 'Silva', 'Costa', 'Mensah',
  'Okafor', 'Byrne', 'Murphy', 'Ivanov', 'Petrova', 'Fernandez', 'Alves', 'Cohen', 'Walker', 'Hughes', 'Bennett', 'Reyes',
  'Novak', 'Andersen', 'Berg', 'Weber', 'Laurent', 'Romero', 'Shah', 'Khan', 'Ali', 'Young', 'King',
] as const;
const COMPANY_FIRST = [
  'North', 'Blue', 'Iron', 'Silver', 'Bright', 'Cedar', 'Harbor', 'Summit', 'Nimbus', 'Quartz', 'Atlas', 'Beacon', 'Copper',
  'Delta', 'Evergreen', 'Falcon', 'Granite', 'Horizon', 'Juniper', 'Keystone', 'Lumen', 'Meridian', 'Nova', 'Orchid',
  'Pioneer', 'Redwood', 'Sterling', 'Tidal', 'Vertex', 'Willow',
] as const;
const COMPANY_SECOND = [
  'Analytics', 'Logistics', 'Health', 'Robotics', 'Software', 'Capital', 'Foods', 'Energy', 'Labs', 'Systems', 'Media',
  'Security', 'Payments', 'Cloud', 'Bio', 'Freight', 'Insurance', 'Learning',
] as const;
const SENIORITY_TITLES: Record<string, readonly string[]> = {
  c_level: ['Chief Executive Officer', 'Chief Technology Officer', 'Chief Revenue Officer', 'Chief Operating Officer', 'Chief Marketing Officer'],
  vp: ['VP of Sales', 'VP Engineering', 'VP Marketing', 'VP Operations', 'VP Customer Success'],
  director: ['Director of Sales', 'Director of IT', 'Head of Growth', 'Head of Data', 'Director of Procurement'],
  manager: ['Sales Manager', 'Engineering Manager', 'Marketing Manager', 'Revenue Operations Manager', 'IT Manager'],
  senior: ['Senior Account Executive', 'Senior Data Engineer', 'Senior Product Manager', 'Senior Recruiter'],
  entry: ['Sales Development Representative', 'Marketing Associate', 'Operations Analyst', 'Junior Developer'],
};
const SENIORITY_WEIGHTS: readonly (readonly [string, number])[] = [
  ['c_level', 0.1], ['vp', 0.15], ['director', 0.22], ['manager', 0.25], ['senior', 0.18], ['entry', 0.1],
];
const LOCATIONS = [
  'New York, NY, United States', 'San Francisco, CA, United States', 'Austin, TX, United States', 'Chicago, IL, United States',
  'Boston, MA, United States', 'Seattle, WA, United States', 'Toronto, Canada', 'London, United Kingdom', 'Dublin, Ireland',
  'Berlin, Germany', 'Munich, Germany', 'Paris, France', 'Amsterdam, Netherlands', 'Stockholm, Sweden', 'Madrid, Spain',
  'Warsaw, Poland', 'Singapore', 'Tokyo, Japan', 'Sydney, Australia', 'Bangalore, India',
] as const;
const PAIN_POINTS = [
  'Pipeline coverage below 3x for next quarter', 'SDR ramp time over four months', 'Reply rates dropped after the domain change',
  'No visibility into which sequences book meetings', 'CRM data is stale and duplicated', 'Too much time spent on manual prospecting',
  'Hiring freeze on the sales team', 'Expanding into EMEA without local reps', 'Churn in the mid-market segment',
  'Long security reviews slow every deal',
] as const;
const RECENT_POSTS = [
  'shared lessons from scaling outbound to 40 reps', 'posted about their Series B and hiring plans',
  'wrote about moving off spreadsheets for forecasting', 'commented on AI in sales development',
  'celebrated hitting 200% of quota last quarter', 'asked for recommendations on sales engagement tools',
  'published a guide to account-based marketing', 'spoke at a RevOps meetup about data hygiene',
] as const;
const TEAM_SIZES = ['1-10', '11-50', '51-200', '201-500', '501-1000', '1000+'] as const;
const NOTES = [
  'Replied on a previous campaign: interested, but asked to reconnect after their budget review.',
  'Mentioned they are evaluating two other vendors; price is the deciding factor.',
  'Good fit: team is growing and they just opened an office in Europe.',
  'Met briefly at the SaaS Summit booth. Follow up with the case study.',
  'Their assistant said mornings work best for calls.',
  'Uses a competitor today; contract renews in the autumn.',
  'Champion left the company; find the new head of sales.',
  'Asked for pricing for 25 seats.',
] as const;
const TASKS = [
  'Send the ROI calculator', 'Book a discovery call', 'Share the security questionnaire', 'Check in after their board meeting',
  'Introduce our solutions engineer', 'Send a personalised video', 'Confirm the demo attendees',
] as const;

const TAGS: readonly { name: string; color: string }[] = [
  { name: 'Hot', color: '#ef4444' },
  { name: 'Warm', color: '#f59e0b' },
  { name: 'Cold', color: '#3b82f6' },
  { name: 'Partner', color: '#10b981' },
];



const DAY = 86_400_000;
const MINUTE = 60_000;
/** The runner's simulated tick. */
const TICK_MS = 30 * MINUTE;
const QUIET_TICK_MS = 3 * 60 * MINUTE;

/** Builds the demo by running the product over simulated days; returns the writes to commit. */
export async function demoSeedWrites(input: DemoSeedInput): Promise<{ writes: AnyWrite[]; counts: DemoSeedCounts }> {
  const { workspaceId, ownerId, ids, random } = input;
  const nowMs = Date.parse(input.now);
  if (Number.isNaN(nowMs)) throw new Error(`demoSeedWrites: now must be an ISO 8601 date-time, got ${input.now}`);
  const days = input.days ?? 10;
  const startMs = nowMs - days * DAY;
  let clockMs = startMs - 40 * DAY;
  const clock = { now: () => new Date(clockMs) };
  const iso = (ms: number): string => new Date(ms).toISOString();
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const chance = (p: number): boolean => random() < p;
  const between = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));

  const db = new MemoryDatabase();
  const store: Store = db.forWorkspace(workspaceId);
  const existing = input.existing ?? [];
  if (existing.length > 0) await store.commit(existing.map((w) => ({ ...w, before: null })));
  const before = new Map<string, unknown>();
  for (const w of existing) if (w.after) before.set(`${w.collection}/${w.id}`, w.after);

  const owner: Actor = { workspaceId, memberId: ownerId, role: 'owner' };
  const secrets: Secrets = {
    newApiKey: () => {
      throw new Error('The demo creates no API keys.');
    },
    hash: (s) => s,
    // Its senders are sandbox ones, which hold no unsubscribe key (nor any other key).
    randomBytes: () => {
      throw new Error('The demo creates no keys.');
    },
  };
  const network = createSandboxNetwork({ seed: workspaceId, clock });
  const channels = { channelFor: (s: { channel: string }) => (s.channel === 'sandbox' ? network : null) };
  const env: ExecEnv = { actor: owner, store, clock, ids, random, secrets, channels };
  const run = <N extends OpName>(name: N, body: OpInput<N>): Promise<OpOutput<N>> => execute(name, body, env);

  // The lead list with the columns the sequences personalise with (no operation makes a bare group).
  const group: LeadGroup = newLeadGroup({ id: ids.uuid(), workspaceId, now: iso(clockMs) }, 'Demo prospects', () => ids.uuid(), DEMO_CUSTOM_COLUMNS);
  {
    const tx = new Tx(store);
    await tx.put('leadGroups', group);
    const staged = tx.writes();
    await validateWrites(staged, { actor: owner, read: tx, now: clock.now() });
    await store.commit(staged);
  }

  const tags = [];
  for (const t of TAGS) tags.push(await run('tags.create', { name: t.name, color: t.color }));

  // Companies, each with a few people.
  const leadCount = input.leadCount ?? 500;
  type Company = { name: string; domain: string; size: string };
  const companies: Company[] = [];
  const usedNames = new Set<string>();
  while (companies.length < Math.max(1, Math.round(leadCount / 4.5))) {
    const name = `${pick(COMPANY_FIRST)} ${pick(COMPANY_SECOND)}`;
    if (usedNames.has(name)) {
      if (usedNames.size >= COMPANY_FIRST.length * COMPANY_SECOND.length) break;
      continue;
    }
    usedNames.add(name);
    companies.push({ name, domain: `${name.toLowerCase().replace(/[^a-z]+/g, '')}.example`, size: pick(TEAM_SIZES) });
  }
  type Row = OpInput<'campaigns.leads.create'>['leads'][number];
  const rows: Row[] = [];
  const slugs = new Set<string>();
  const usedCompanies = new Set<string>();
  // Two people of one name at one company get different addresses: one email is one lead, so a
  // repeated address would be skipped as a duplicate and the demo would hold fewer leads than asked.
  const emails = new Set<string>();
  const uniqueEmail = (firstName: string, lastName: string, slug: string, domain: string): string => {
    let email = `${firstName}.${lastName}@${domain}`.toLowerCase();
    if (emails.has(email)) email = `${slug}@${domain}`;
    emails.add(email);
    return email;
  };
  for (let i = 0; i < leadCount; i++) {
    const company = pick(companies);
    usedCompanies.add(company.name);
    const firstName = pick(FIRST_NAMES);
    const lastName = pick(LAST_NAMES);
    let slug = `${firstName}-${lastName}`.toLowerCase();
    while (slugs.has(slug)) slug = `${firstName}-${lastName}-${Math.floor(random() * 0xffff).toString(16).padStart(4, '0')}`.toLowerCase();
    slugs.add(slug);
    const seniority = weighted(random, SENIORITY_WEIGHTS);
    const variables: Record<string, string> = { 'Team size': company.size };
    if (chance(0.8)) variables['Pain point'] = pick(PAIN_POINTS);
    if (chance(0.6)) variables['Recent post'] = pick(RECENT_POSTS);
    rows.push({
      firstName,
      lastName,
      email: chance(0.85) ? uniqueEmail(firstName, lastName, slug, company.domain) : '',
      company: company.name,
      jobTitle: pick(SENIORITY_TITLES[seniority] ?? ['Manager']),
      seniority,
      location: pick(LOCATIONS),
      phone: chance(0.35) ? `+1 555 01${String(between(0, 99)).padStart(2, '0')} ${String(between(0, 9999)).padStart(4, '0')}` : '',
      socialUrl: `https://social.example/in/${slug}`,
      variables,
    });
  }

  // Imports over the weeks before the campaigns: batches of 25, the last few leads one by one (so
  // "the newest lead" is one lead).
  const leadIds: string[] = [];
  const batches: Row[][] = [];
  const tailCount = Math.min(5, rows.length);
  for (let i = 0; i < rows.length - tailCount; i += 25) batches.push(rows.slice(i, Math.min(i + 25, rows.length - tailCount)));
  for (const r of rows.slice(rows.length - tailCount)) batches.push([r]);
  const importSpan = 38 * DAY;
  for (let b = 0; b < batches.length; b++) {
    clockMs = startMs - 40 * DAY + Math.floor((importSpan * b) / batches.length) + between(0, 3600) * 1000;
    const out = await run('campaigns.leads.create', { leadGroupId: group.id, leads: batches[b] ?? [] });
    for (const id of out.leadIds) if (id) leadIds.push(id);
  }
  const leadRow = new Map(leadIds.map((id, i) => [id, rows[i] as Row]));

  // Scores, as a scoring tool would write them back through the API: how well each person fits the
  // campaigns' ideal customer (leadFitScore) and how likely they are to answer (rankingScore). The
  // leads table sorts on the ranking score, and company relay picks the best-ranked colleague.
  for (const id of leadIds) {
    const r = leadRow.get(id);
    if (r) await run('campaigns.leads.update', { leadId: id, ...demoScores(r, random) });
  }

  // A few people asked not to be contacted; a third get a tag.
  clockMs = startMs - 2 * DAY;
  const dnc = shuffle(leadIds, random).slice(0, Math.max(1, Math.round(leadCount * 0.02)));
  await run('campaigns.leads.setDoNotContact', { leadIds: dnc, doNotContact: true });
  for (const id of leadIds) {
    if (!chance(0.35)) continue;
    await run('campaigns.leads.updateTag', { leadGroupId: group.id, leadId: id, tagId: pick(tags).id });
  }

  // Senders: sandbox accounts in different time zones; one is Premium (InMail).
  clockMs = startMs - DAY;
  const sender = (name: string, timeZone: string, premium: boolean) =>
    run('sdrProfiles.create', { name, channel: 'sandbox', timeZone, premium, channelConfig: {} });
  const alex = await sender('Alex Rivera', 'America/New_York', true);
  const mia = await sender('Mia Schneider', 'Europe/Berlin', false);
  const kenji = await sender('Kenji Watanabe', 'Asia/Tokyo', false);
  // A gentle pace in the simulated days, so the demo's senders still have room today and this week
  // (daily limits, the weekly cap on connection requests) when the user presses Start.
  await run('sdrProfiles.setDailyLimits', { sdrProfileId: alex.id, limits: { connectionRequests: 6, connectionRequestsWithNote: 6 } });
  for (const s of [mia, kenji]) await run('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: 8 } });

  // Their lead lists: the senior people for campaign 1, people met at the event for campaign 2.
  const senior = new Set(['c_level', 'vp', 'director']);
  const open = shuffle(leadIds.filter((id) => !dnc.includes(id)), random);
  const list1 = open.filter((id) => senior.has(String(leadRow.get(id)?.seniority))).slice(0, Math.round(leadCount * 0.3));
  const taken = new Set(list1);
  const list2 = open.filter((id) => !taken.has(id)).slice(0, Math.round(leadCount * 0.3));
  const rowsOf = (list: readonly string[]): Row[] => list.flatMap((id) => {
    const r = leadRow.get(id);
    return r ? [r] : [];
  });

  // Campaign 1: connect, wait, branch on the connection; its lead list: the senior people.
  const c1 = await run('campaigns.create', { name: 'Q4 outbound: Heads of Sales' });
  await run('campaigns.leads.create', { leadGroupId: c1.leadGroupId, leads: rowsOf(list1) });
  const add = async (campaignId: string, step: OpInput<'campaigns.addSequenceStep'>['step'], afterStepId: string | null = null, branch: 'yes' | 'no' | null = null): Promise<string> => {
    const out = await run('campaigns.addSequenceStep', { campaignId, step, afterStepId, branch });
    const known = new Set<string>(stepIds.get(campaignId) ?? []);
    const fresh = out.steps.find((s) => !known.has(s.id) && s.type === step.type);
    stepIds.set(campaignId, out.steps.map((s) => s.id));
    if (!fresh) throw new Error(`The demo could not add a ${step.type} step.`);
    return fresh.id;
  };
  const stepIds = new Map<string, string[]>();
  await add(c1.id, { type: 'CONNECTION_REQUEST', content: 'Hi {{First name|there}}, I work with sales teams like {{Company|yours}} on outbound. Would be great to connect!' });
  await add(c1.id, { type: 'WAIT', waitTimeSeconds: 2 * 86_400 });
  const condition = await add(c1.id, { type: 'CONDITION', sendCondition: 'CONNECTED' });
  const yes = await add(c1.id, { type: 'SEND_MESSAGE', content: 'Thanks for connecting, {{First name|there}}! Many teams tell us about "{{Pain point|slow pipeline growth}}". Is that on your radar at {{Company|your company}}?' }, condition, 'yes');
  const yesWait = await add(c1.id, { type: 'WAIT', waitTimeSeconds: 3 * 86_400 }, yes);
  await add(c1.id, { type: 'SEND_MESSAGE', content: 'Hi {{First name|there}}, bumping this in case it got buried. Happy to share how similar {{Team size|sized}} teams handle it.' }, yesWait);
  const visit = await add(c1.id, { type: 'PROFILE_VISIT' }, condition, 'no');
  await add(c1.id, { type: 'INMAIL', subject: 'Quick question about outbound at {{Company|your team}}', content: 'Hi {{First name|there}}, we help teams fix "{{Pain point|pipeline gaps}}" without adding headcount. Open to a short call?' }, visit);
  // The InMail of the "no" path needs a Premium account: only Alex sends this campaign.
  await run('campaigns.updateSenders', { campaignId: c1.id, add: [alex.id] });
  await run('campaigns.updateSchedule', { campaignId: c1.id, timeZone: 'America/New_York' });
  await run('campaigns.updateSettings', { campaignId: c1.id, preferNewLeads: true, companyRelay: { enabled: true, maxPersonsPerCompany: 2, seniorities: ['c_level', 'vp', 'director'] } });

  // Campaign 2: a simpler message sequence, sent from Europe and Asia.
  const c2 = await run('campaigns.create', { name: 'Event follow-up: SaaS Summit' });
  await run('campaigns.leads.create', { leadGroupId: c2.leadGroupId, leads: rowsOf(list2) });
  const first = await add(c2.id, { type: 'SEND_MESSAGE', content: 'Hi {{First name|there}}, great to meet you at the SaaS Summit! Did you get a chance to look at how {{Company|your team}} could use us?' });
  const wait2 = await add(c2.id, { type: 'WAIT', waitTimeSeconds: 4 * 86_400 }, first);
  await add(c2.id, { type: 'SEND_MESSAGE', content: 'Hi {{First name|there}}, one more nudge: I can send a two-minute video walkthrough if that is easier.' }, wait2);
  await run('campaigns.updateSenders', { campaignId: c2.id, add: [mia.id, kenji.id] });
  await run('campaigns.updateSchedule', { campaignId: c2.id, timeZone: 'Europe/Berlin' });

  // The simulated days: campaign 1 from the first day, campaign 2 from the third; the owner works
  // the pipeline in the evenings (notes, tasks, won and lost deals, on hold).
  const runner = createRunner({
    store, clock, random, ids, randomBytes: secrets.randomBytes, channels, actor: { ...owner, isSystem: true },
    spacing: { minSeconds: 8 * 60, jitterSeconds: 10 * 60 },
  });
  clockMs = startMs;
  await run('campaigns.start', { campaignId: c1.id });
  const stages = input.stages ?? [];
  const stageOf = (category: Stage['category']): Stage | undefined => stages.find((s) => s.category === category);
  let c2Started = false;
  let lastEvening = '';
  let schedules = (await store.query('campaigns')).docs.map((c) => c.schedule);
  // The last day the campaigns run around the clock, in the windows the user gets: follow-ups that
  // waited for a weekday's window (a weekend's, a night's) go out then, at the realistic pace. Left
  // waiting, they would be due at Start: the Q4 campaign's one sender works sequences under way
  // first, and on a Sunday it spent the demo's first two minutes on them (14 profile visits and
  // InMails, no new connection request, so no accept).
  const aroundTheClockFrom = Math.max(startMs, nowMs - AROUND_THE_CLOCK_MS);
  let aroundTheClock = false;
  for (let t = startMs; t <= nowMs; ) {
    clockMs = t;
    if (!c2Started && t >= startMs + 2 * DAY) {
      await run('campaigns.start', { campaignId: c2.id });
      c2Started = true;
    }
    if (!aroundTheClock && t >= aroundTheClockFrom) {
      for (const c of [c1, c2]) await run('campaigns.updateSchedule', { campaignId: c.id, timeZone: input.userTimeZone ?? 'UTC', days: ALL_HOURS });
      schedules = (await store.query('campaigns')).docs.map((c) => c.schedule);
      aroundTheClock = true;
    }
    await runner.tick();
    const day = new Date(t).toISOString().slice(0, 10);
    if (new Date(t).getUTCHours() >= 21 && day !== lastEvening) {
      lastEvening = day;
      await eveningWork();
    }
    // Every half hour while a campaign may send; at night and at weekends only the answers come
    // in, read every three hours (they keep the time they were sent at).
    t += schedules.some((sc) => isOpen(sc, new Date(t))) ? TICK_MS : Math.min(QUIET_TICK_MS, Math.max(TICK_MS, nowMs - t));
  }
  // The last look at the network is now, so nothing that already happened is left unread.
  clockMs = nowMs;
  await runner.tick();

  async function eveningWork(): Promise<void> {
    const leads = (await store.query('leads')).docs;
    const category = (l: Lead): Stage['category'] => stages.find((s) => s.id === l.pipelineStageId)?.category ?? 'NEW';
    const later = (d: number): string => iso(clockMs + d * DAY);
    for (const l of leads) {
      const c = category(l);
      if (c === 'MEETING_BOOKED' && chance(0.3)) {
        const won = stageOf('WON');
        if (won) await run('campaigns.leads.updateLeadStage', { leadId: l.id, pipelineStageId: won.id });
      } else if (c === 'ENGAGED' && chance(0.2)) {
        const lost = stageOf('LOST');
        if (lost) await run('campaigns.leads.updateLeadStage', { leadId: l.id, pipelineStageId: lost.id, closeReason: pick(['NOT_INTERESTED', 'BAD_TIMING', 'COMPETITOR', 'NOT_ICP'] as const) });
      } else if (c === 'ENGAGED' && chance(0.05)) {
        const hold = stageOf('ON_HOLD');
        if (hold) await run('campaigns.leads.updateLeadStage', { leadId: l.id, pipelineStageId: hold.id, wakeAt: later(between(14, 60)) });
      }
    }
    for (const l of shuffle(leads, random).slice(0, 4)) await run('leadActivities.create', { leadId: l.id, content: pick(NOTES) });
    for (const l of shuffle(leads, random).slice(0, 3)) {
      await run('leadActivities.taskCreate', { leadId: l.id, content: `${pick(TASKS)} (${l.firstName} at ${l.company})`, dueAt: later(between(0, 10) - 1) });
    }
    for (const l of shuffle(leads.filter((x) => x.followUpAt === null), random).slice(0, 5)) {
      await run('campaigns.leads.setLeadFollowUp', { leadId: l.id, followUpAt: later(between(1, 14)) });
    }
  }

  // Ready for the user: paused campaigns whose windows cover every hour of the user's zone (since the
  // last day), on senders that answer at the sandbox's demo pace.
  for (const c of [c1, c2]) await run('campaigns.pause', { campaignId: c.id });
  for (const s of [alex, mia, kenji]) await run('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: 50, connectionRequests: 25, connectionRequestsWithNote: 15 } });
  await setDemoPace(store, owner, clock.now(), [alex.id, mia.id, kenji.id]);

  // What the seed made or changed, relative to the documents it was given.
  const writes: AnyWrite[] = [];
  for (const collection of COLLECTION_NAMES) {
    const { docs } = await store.query(collection);
    for (const doc of docs) {
      const prev = before.get(`${collection}/${doc.id}`) ?? null;
      if (prev !== null && JSON.stringify(prev) === JSON.stringify(doc)) continue;
      writes.push({ collection, id: doc.id, before: prev, after: doc } as AnyWrite);
    }
  }
  const made = (c: CollectionName): unknown[] => writes.filter((w) => w.collection === c && w.before === null).map((w) => w.after);
  const acts = made('activities') as Activity[];
  const messages = made('messages') as { direction: string }[];
  return {
    writes,
    counts: {
      leadGroups: made('leadGroups').length,
      tags: made('tags').length,
      leads: made('leads').length,
      companies: usedCompanies.size,
      senders: made('senders').length,
      campaigns: made('campaigns').length,
      enrollments: made('enrollments').length,
      notes: acts.filter((a) => a.type === 'NOTE').length,
      tasks: acts.filter((a) => a.type === 'TASK').length,
      messages: messages.filter((m) => m.direction === 'out').length,
      replies: messages.filter((m) => m.direction === 'in').length,
    },
  };
}

const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'] as const;
/** Every hour of every day: the demo's windows from its last simulated day on. */
const ALL_HOURS = Object.fromEntries(DAYS.map((d) => [d, { enabled: true, start: '00:00', end: '24:00' }]));
/** How long before `now` the simulated campaigns run around the clock. */
const AROUND_THE_CLOCK_MS = DAY;

/** Puts the demo's senders on the sandbox's demo pace (people answer within a minute). A sender's
 * channel settings have no operation of their own, so this write goes through the rules directly. */
async function setDemoPace(store: Store, actor: Actor, now: Date, senderIds: readonly string[]): Promise<void> {
  const tx = new Tx(store);
  for (const id of senderIds) {
    const s = await tx.get('senders', id);
    // From now on: what was sent in the simulated days keeps its realistic pace after a restart.
    if (s) await tx.put('senders', { ...s, channelConfig: { ...s.channelConfig, pace: 'demo', paceSince: now.toISOString() }, updatedAt: now.toISOString() });
  }
  const staged = tx.writes();
  await validateWrites(staged, { actor: { ...actor, isSystem: true }, read: tx, now });
  await store.commit(staged);
}

/** How much a seniority counts towards fit: the demo sells to sales leaders. */
const SENIORITY_FIT: Record<string, number> = { c_level: 38, vp: 36, director: 30, manager: 20, senior: 12, entry: 4 };
/** Team sizes the product suits best: big enough for an SDR team, small enough to decide quickly. */
const TEAM_FIT: Record<string, number> = { '1-10': 4, '11-50': 18, '51-200': 30, '201-500': 28, '501-1000': 20, '1000+': 12 };

/**
 * The demo's scores, 0 to 100: fit from seniority, team size and a known pain point; the ranking
 * (the predictive score) from fit and the signals that make an answer likely (a recent post, an
 * email and a phone to reach them by), each with some spread, since real scores are not a formula
 * of four fields.
 */
export function demoScores(
  row: { seniority?: string | null; email?: string | null; phone?: string | null; variables?: Readonly<Record<string, string | null | undefined>> | null },
  random: () => number,
): { leadFitScore: number; rankingScore: number } {
  const vars = row.variables ?? {};
  const clamp = (n: number): number => Math.max(0, Math.min(100, Math.round(n)));
  const spread = (width: number): number => (random() - 0.5) * width;
  const fit = (SENIORITY_FIT[row.seniority ?? ''] ?? 10) + (TEAM_FIT[vars['Team size'] ?? ''] ?? 10) + (vars['Pain point'] ? 18 : 0) + 8 + spread(16);
  const signals = (vars['Recent post'] ? 22 : 0) + (row.email ? 8 : 0) + (row.phone ? 6 : 0);
  const leadFitScore = clamp(fit);
  return { leadFitScore, rankingScore: clamp(leadFitScore * 0.6 + signals + spread(30)) };
}

function weighted(random: () => number, options: readonly (readonly [string, number])[]): string {
  let r = random();
  for (const [value, weight] of options) {
    if (r < weight) return value;
    r -= weight;
  }
  return options[options.length - 1]?.[0] ?? '';
}

function shuffle<T>(list: readonly T[], random: () => number): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

