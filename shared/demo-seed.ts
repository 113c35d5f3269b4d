/** A realistic demo workspace, built deterministically from a random source: tags, a lead group with
 * custom columns, 500 leads across companies, three sandbox senders, two campaigns with sequences and
 * enrollments, notes and tasks. Pure: the sync server's `seed-demo` and the desktop's demo workspace
 * both commit the writes it returns. Everything is created fresh (no existing document is updated),
 * so the writes can be committed alone or together with the workspace's own creation writes. */
import type { Ids } from './context.ts';
import type { Activity, Campaign, Enrollment, Lead, LeadGroup, Sender, Stage, Tag } from './model/index.ts';
import { newActivity, newCampaign, newEnrollment, newLead, newLeadGroup, newSender, newStep } from './model/factories.ts';
import type { AnyWrite } from './store.ts';

export type DemoSeedInput = {
  workspaceId: string;
  /** The member who writes the notes and tasks and owns the senders. */
  ownerId: string;
  /** The workspace's existing lead group; every demo lead is linked to it as well. */
  leadGroupId: string;
  ids: Ids;
  /** ISO 8601 time the demo is created at; leads are spread over the months before it. */
  now: string;
  /** Uniform in [0, 1); the same source gives the same demo. */
  random: () => number;
  /** The workspace's pipeline stages; when given, part of the leads sit in later stages. */
  stages?: readonly Stage[];
  /** Number of leads (default 500). */
  leadCount?: number;
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

/** Builds the demo's creation writes and counts of what they create. */
export function demoSeedWrites(input: DemoSeedInput): { writes: AnyWrite[]; counts: DemoSeedCounts } {
  const { workspaceId, ownerId, ids, random } = input;
  const nowMs = Date.parse(input.now);
  if (Number.isNaN(nowMs)) throw new Error(`demoSeedWrites: now must be an ISO 8601 date-time, got ${input.now}`);
  const iso = (ms: number): string => new Date(ms).toISOString();
  const stamp = (at = input.now) => ({ id: ids.uuid(), workspaceId, now: at });
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const chance = (p: number): boolean => random() < p;
  const between = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  const writes: AnyWrite[] = [];
  const put = (w: AnyWrite): void => {
    writes.push(w);
  };

  // Lead group with the custom columns the sequences personalise with.
  const group: LeadGroup = newLeadGroup(stamp(), 'Demo prospects', () => ids.uuid(), DEMO_CUSTOM_COLUMNS);
  put({ collection: 'leadGroups', id: group.id, before: null, after: group });
  const column = (name: string): string => group.columns.find((c) => c.name === name)?.id ?? '';
  const painCol = column('Pain point');
  const postCol = column('Recent post');
  const sizeCol = column('Team size');

  const tags: Tag[] = TAGS.map((t) => ({ ...stampFields(stamp()), name: t.name, color: t.color }));
  for (const t of tags) put({ collection: 'tags', id: t.id, before: null, after: t });

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

  const stageBy = (category: Stage['category']): Stage | undefined => input.stages?.find((s) => s.category === category);
  const slugs = new Set<string>();
  const leads: Lead[] = [];
  const usedCompanies = new Set<string>();
  for (let i = 0; i < leadCount; i++) {
    const company = pick(companies);
    usedCompanies.add(company.name);
    const firstName = pick(FIRST_NAMES);
    const lastName = pick(LAST_NAMES);
    let slug = `${firstName}-${lastName}`.toLowerCase();
    while (slugs.has(slug)) slug = `${firstName}-${lastName}-${Math.floor(random() * 0xffff).toString(16).padStart(4, '0')}`.toLowerCase();
    slugs.add(slug);
    const seniority = weighted(random, SENIORITY_WEIGHTS);
    const createdMs = nowMs - Math.floor(random() * 120 * DAY) - between(1, 3600) * 1000;
    const createdAt = iso(createdMs);
    const socialUrl = `https://social.example/in/${slug}`;
    const email = chance(0.85) ? `${firstName}.${lastName}@${company.domain}`.toLowerCase() : '';
    const variables: Record<string, string> = { [sizeCol]: company.size };
    if (chance(0.8)) variables[painCol] = pick(PAIN_POINTS);
    if (chance(0.6)) variables[postCol] = pick(RECENT_POSTS);
    const fields: Partial<Lead> = {
      firstName,
      lastName,
      fullName: `${firstName} ${lastName}`,
      email,
      company: company.name,
      jobTitle: pick(SENIORITY_TITLES[seniority] ?? ['Manager']),
      seniority,
      location: pick(LOCATIONS),
      phone: chance(0.35) ? `+1 555 01${String(between(0, 99)).padStart(2, '0')} ${String(between(0, 9999)).padStart(4, '0')}` : '',
      socialUrl,
      personalSocialUrl: chance(0.2) ? `https://social.example/p/${slug}` : '',
      companySocialUrl: `https://social.example/company/${company.domain.replace('.example', '')}`,
      websiteUrl: `https://www.${company.domain}`,
      leadFitScore: between(5, 98),
      rankingScore: Math.round(random() * 1000) / 10,
      tagId: chance(0.35) ? (pick(tags) as Tag).id : null,
      doNotContact: chance(0.02),
      blocklisted: chance(0.01),
      variables,
      groupIds: [group.id, ...(input.leadGroupId === group.id ? [] : [input.leadGroupId])],
    };
    let lead = newLead({ id: ids.uuid(), workspaceId, now: createdAt }, group.id, fields);
    lead = { ...lead, leadIdentifier: socialUrl };
    lead = withStage(lead, random, stageBy, createdMs, nowMs);
    if (lead.followUpAt === null && chance(0.1)) lead = { ...lead, followUpAt: iso(nowMs + between(-5, 14) * DAY) };
    leads.push(lead);
  }

  // Senders: sandbox accounts in different time zones; one is Premium (InMail).
  const sender = (name: string, timeZone: string, premium: boolean, seed: number): Sender =>
    newSender(stamp(), { name, ownerMemberId: ownerId, channel: 'sandbox', timeZone, premium, channelConfig: { seed } });
  const senders = [
    sender('Alex Rivera', 'America/New_York', true, 1),
    sender('Mia Schneider', 'Europe/Berlin', false, 2),
    sender('Kenji Watanabe', 'Asia/Tokyo', false, 3),
  ];
  for (const s of senders) put({ collection: 'senders', id: s.id, before: null, after: s });

  // Campaign 1: connect, wait, branch on the connection.
  const [s1, s2, s3] = senders as [Sender, Sender, Sender];
  const connect = newStep(ids.uuid(), 'CONNECTION_REQUEST', { content: 'Hi {{First name|there}}, I work with sales teams like {{Company|yours}} on outbound. Would be great to connect!' });
  const wait = newStep(ids.uuid(), 'WAIT', { waitTimeSeconds: 2 * 86_400 });
  const condition = newStep(ids.uuid(), 'CONDITION', { sendCondition: 'CONNECTED' });
  const variantA = { id: ids.uuid(), name: 'A: pain point', text: 'Thanks for connecting, {{First name|there}}! Many teams tell us about "{{Pain point|slow pipeline growth}}". Is that on your radar at {{Company|your company}}?', subject: '' };
  const variantB = { id: ids.uuid(), name: 'B: recent post', text: 'Thanks for connecting, {{First name|there}}! I saw you {{Recent post|shared some thoughts on outbound}}. Would a 15-minute swap of notes be useful?', subject: '' };
  const yesMessage = newStep(ids.uuid(), 'SEND_MESSAGE', {
    parentStepId: condition.id,
    branch: 'yes',
    content: variantA.text,
    variants: [variantA, variantB],
    variantAssignment: { mode: 'random', defaultVariantId: variantA.id },
  });
  const yesFollowUp = newStep(ids.uuid(), 'WAIT', { parentStepId: condition.id, branch: 'yes', waitTimeSeconds: 3 * 86_400 });
  const yesBump = newStep(ids.uuid(), 'SEND_MESSAGE', {
    parentStepId: condition.id,
    branch: 'yes',
    content: 'Hi {{First name|there}}, bumping this in case it got buried. Happy to share how similar {{Team size|sized}} teams handle it.',
  });
  const noVisit = newStep(ids.uuid(), 'PROFILE_VISIT', { parentStepId: condition.id, branch: 'no' });
  const noInmail = newStep(ids.uuid(), 'INMAIL', {
    parentStepId: condition.id,
    branch: 'no',
    subject: 'Quick question about outbound at {{Company|your team}}',
    content: 'Hi {{First name|there}}, we help teams fix "{{Pain point|pipeline gaps}}" without adding headcount. Open to a short call?',
  });
  const campaign1: Campaign = {
    ...newCampaign(stamp(iso(nowMs - 21 * DAY)), 'Q4 outbound: Heads of Sales', group.id, ids.uuid(), 'America/New_York'),
    // The InMail of the "no" path needs a Premium account: only Alex sends this campaign.
    senders: [{ sdrProfileId: s1.id, paused: false }],
    steps: [connect, wait, condition, yesMessage, yesFollowUp, yesBump, noVisit, noInmail],
    settings: { preferNewLeads: true, companyRelay: { enabled: true, maxPersonsPerCompany: 2, seniorities: ['c_level', 'vp', 'director'] } },
  };
  // Campaign 2: a simpler message sequence, sent from Europe and Asia.
  const campaign2: Campaign = {
    ...newCampaign(stamp(iso(nowMs - 9 * DAY)), 'Event follow-up: SaaS Summit', group.id, ids.uuid(), 'Europe/Berlin'),
    senders: [
      { sdrProfileId: s2.id, paused: false },
      { sdrProfileId: s3.id, paused: false },
    ],
    steps: [
      newStep(ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}, great to meet you at the SaaS Summit! Did you get a chance to look at how {{Company|your team}} could use us?' }),
      newStep(ids.uuid(), 'WAIT', { waitTimeSeconds: 4 * 86_400 }),
      newStep(ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}, one more nudge: I can send a two-minute video walkthrough if that is easier.' }),
    ],
  };
  const campaigns = [campaign1, campaign2];
  for (const c of campaigns) put({ collection: 'campaigns', id: c.id, before: null, after: c });

  for (const l of leads) put({ collection: 'leads', id: l.id, before: null, after: l });

  // Enrollments: distinct leads (one running sequence per lead), never Do Not Contact or blocklisted.
  const eligible = leads.filter((l) => !l.doNotContact && !l.blocklisted);
  const shuffled = shuffle(eligible, random);
  const enrollments: Enrollment[] = [];
  const plan: readonly [Campaign, number][] = [
    [campaign1, 100],
    [campaign2, 50],
  ];
  let cursor = 0;
  for (const [c, n] of plan) {
    const pathFirst = c.steps[0];
    for (let k = 0; k < n && cursor < shuffled.length; k++, cursor++) {
      const lead = shuffled[cursor] as Lead;
      const sdr = c.senders[k % c.senders.length]?.sdrProfileId ?? null;
      const enrolledMs = Math.max(Date.parse(c.createdAt), Date.parse(lead.createdAt)) + between(1, 48) * 3_600_000;
      const at = iso(Math.min(enrolledMs, nowMs));
      const progress = random();
      let e = newEnrollment({ id: ids.uuid(), workspaceId, now: at }, lead.id, c.id, {
        sdrProfileId: sdr,
        currentStepId: pathFirst?.id ?? null,
        nextActionAt: iso(nowMs + between(1, 72) * 3_600_000),
      });
      if (progress > 0.55 && c.steps[0] && c.steps[1]) {
        // First step done, waiting.
        e = {
          ...e,
          doneSteps: [{ stepId: c.steps[0].id, at, outcome: 'sent' }],
          currentStepId: c.steps[1].id,
        };
      }
      if (progress > 0.9) {
        e = { ...e, status: 'REPLIED', inConversationAt: iso(Math.min(Date.parse(at) + 2 * DAY, nowMs)), nextActionAt: null };
      }
      enrollments.push(e);
    }
  }
  for (const e of enrollments) put({ collection: 'enrollments', id: e.id, before: null, after: e });

  // Notes and tasks by the owner on a sample of leads.
  const activities: Activity[] = [];
  const notesOn = shuffle(leads, random).slice(0, Math.min(40, leads.length));
  for (const lead of notesOn) {
    const at = iso(Math.min(nowMs, Date.parse(lead.createdAt) + between(1, 20) * DAY));
    activities.push(newActivity(stamp(at), lead.id, ownerId, 'NOTE', pick(NOTES)));
  }
  const tasksOn = shuffle(leads, random).slice(0, Math.min(25, leads.length));
  for (const lead of tasksOn) {
    const at = iso(Math.min(nowMs, Date.parse(lead.createdAt) + between(1, 10) * DAY));
    // Open: a member's task always starts open (shared/rules/activities.ts), and the demo's writes are
    // what the owner could have written.
    activities.push(
      newActivity(stamp(at), lead.id, ownerId, 'TASK', `${pick(TASKS)} (${lead.firstName} at ${lead.company})`, {
        metadata: { taskStatus: 'open', assigneeId: ownerId, completedAt: null, completedBy: null },
        dueAt: iso(nowMs + between(-3, 10) * DAY),
      }),
    );
  }
  for (const a of activities) put({ collection: 'activities', id: a.id, before: null, after: a });

  return {
    writes,
    counts: {
      leadGroups: 1,
      tags: tags.length,
      leads: leads.length,
      companies: usedCompanies.size,
      senders: senders.length,
      campaigns: campaigns.length,
      enrollments: enrollments.length,
      notes: activities.filter((a) => a.type === 'NOTE').length,
      tasks: activities.filter((a) => a.type === 'TASK').length,
    },
  };
}

const stampFields = (s: { id: string; workspaceId: string; now: string }) => ({ id: s.id, workspaceId: s.workspaceId, createdAt: s.now, updatedAt: s.now });

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

/** Moves about a third of the leads along the pipeline, with what each stage requires. */
function withStage(lead: Lead, random: () => number, stageBy: (c: Stage['category']) => Stage | undefined, createdMs: number, nowMs: number): Lead {
  const r = random();
  const category: Stage['category'] | null =
    r < 0.14 ? 'CONTACTED' : r < 0.22 ? 'ENGAGED' : r < 0.27 ? 'MEETING_BOOKED' : r < 0.3 ? 'ON_HOLD' : r < 0.32 ? 'WON' : r < 0.36 ? 'LOST' : null;
  if (category === null) return lead;
  const stage = stageBy(category);
  if (!stage) return lead;
  const setMs = Math.min(nowMs, createdMs + Math.floor(random() * 30 + 1) * DAY);
  const setAt = new Date(setMs).toISOString();
  const out: Lead = { ...lead, pipelineStageId: stage.id, stageSetManuallyAt: setAt, lastActivityAt: setAt };
  if (category === 'MEETING_BOOKED') return { ...out, meetingBookedAt: setAt, meetingBookedSource: 'SANDBOX' };
  if (category === 'ON_HOLD') return { ...out, followUpAt: new Date(nowMs + Math.floor(random() * 60 + 7) * DAY).toISOString() };
  if (category === 'LOST') {
    const reasons = ['NOT_ICP', 'NOT_INTERESTED', 'BAD_TIMING', 'COMPETITOR', 'NO_RESPONSE'] as const;
    return { ...out, closeReason: reasons[Math.floor(random() * reasons.length)] ?? 'NOT_INTERESTED', closedFromCategory: 'CONTACTED' };
  }
  return out;
}
