/** Enrollment rules: a lead runs in at most one sequence at a time, enrollments point at a real lead
 * and campaign of the workspace, and the assigned sender is one of the campaign's senders. They judge
 * each change on its own, so a replication push from a desktop gets the same answer as an operation. */
import { DomainError } from '../errors.ts';
import { isMergeMove } from './merge.ts';
import type { Rule } from './types.ts';

export const enrollmentRules: readonly Rule<'enrollments'>[] = [
  async function identityIsFixed({ before, after }, { read }) {
    if (!before || !after) return;
    // A merge moves the merged lead's enrollments to the survivor (and its undo moves them back).
    const moved = before.leadId !== after.leadId && !(await isMergeMove(read, before.leadId, after.leadId));
    if (moved || before.campaignId !== after.campaignId) {
      throw new DomainError('RULE_VIOLATION', 'An enrollment keeps its lead and campaign; enroll the lead again instead.', { enrollmentId: after.id });
    }
  },

  async function leadAndCampaignExist({ before, after }, { read }) {
    // Only on creation: a lead deleted later stops its enrollments in the same commit, and those
    // updates must still pass.
    if (before || !after) return;
    const lead = await read.get('leads', after.leadId);
    if (!lead) throw new DomainError('NOT_FOUND', `Lead ${after.leadId} was not found in this workspace.`, { what: 'lead', id: after.leadId });
    const campaign = await read.get('campaigns', after.campaignId);
    if (!campaign) throw new DomainError('NOT_FOUND', `Campaign ${after.campaignId} was not found in this workspace.`, { what: 'campaign', id: after.campaignId });
    if (after.status === 'IN_PROGRESS' && (lead.doNotContact || lead.blocklisted)) {
      throw new DomainError('RULE_VIOLATION', `${lead.fullName || 'This lead'} is ${lead.doNotContact ? 'marked Do Not Contact' : 'blocklisted'} and cannot be enrolled.`, { leadId: lead.id });
    }
  },

  async function assignedSenderIsOnTheCampaign({ before, after }, { read }) {
    // Checked when the assignment changes only: a sender removed from a campaign keeps the leads it
    // is in conversation with until they are moved, and those enrollments still progress.
    if (!after || after.sdrProfileId === null || before?.sdrProfileId === after.sdrProfileId) return;
    const campaign = await read.get('campaigns', after.campaignId);
    if (!campaign || !campaign.senders.some((s) => s.sdrProfileId === after.sdrProfileId)) {
      const sender = await read.get('senders', after.sdrProfileId);
      const who = sender?.name ?? 'That sender';
      const message = campaign
        ? `${who} does not send in campaign "${campaign.name}": add it to the campaign's senders first, or pick one of them.`
        : `${who} cannot take this lead: its campaign no longer exists.`;
      throw new DomainError('RULE_VIOLATION', message, {
        enrollmentId: after.id,
        sdrProfileId: after.sdrProfileId,
      });
    }
  },

  async function mergedLeadsRunNothing({ before, after }, { read }) {
    // A merged lead is a tombstone: its person is contacted through the survivor only.
    const active = (s: string | undefined) => s === 'IN_PROGRESS' || s === 'PAUSED';
    if (!after || !active(after.status) || (before && active(before.status) && before.leadId === after.leadId)) return;
    const lead = await read.get('leads', after.leadId);
    if (lead?.mergedIntoId) {
      throw new DomainError('NOT_FOUND', `Lead ${lead.id} was merged into lead ${lead.mergedIntoId}; enroll that lead instead.`, { what: 'Lead', id: lead.id, mergedIntoId: lead.mergedIntoId });
    }
  },

  async function oneEnrollmentPerLeadAndCampaign({ before, after }, { read }) {
    // Judged when an enrollment moves to another lead (a merge); a new enrollment is looked up by
    // the operations that create it.
    if (!before || !after || before.leadId === after.leadId) return;
    const same = await read.query('enrollments', {
      where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: after.leadId }, { op: 'eq', field: 'campaignId', value: after.campaignId }, { op: 'neq', field: 'id', value: after.id }] },
      limit: 1,
    });
    if (same.docs[0]) {
      throw new DomainError('RULE_VIOLATION', 'The lead is enrolled in this campaign already; one enrollment per lead and campaign.', { leadId: after.leadId, campaignId: after.campaignId, enrollmentId: same.docs[0].id });
    }
  },

  async function oneRunningSequencePerLead({ before, after }, { read }) {
    if (!after || after.status !== 'IN_PROGRESS' || before?.status === 'IN_PROGRESS') return;
    const running = await read.query('enrollments', {
      where: {
        op: 'and',
        conds: [
          { op: 'eq', field: 'leadId', value: after.leadId },
          { op: 'eq', field: 'status', value: 'IN_PROGRESS' },
          { op: 'neq', field: 'id', value: after.id },
        ],
      },
      limit: 1,
    });
    const other = running.docs[0];
    if (other) {
      const [lead, campaign] = await Promise.all([read.get('leads', after.leadId), read.get('campaigns', other.campaignId)]);
      const where = campaign ? `campaign "${campaign.name}"` : 'another campaign';
      throw new DomainError('RULE_VIOLATION', `${lead?.fullName || 'This lead'} is already in the sequence of ${where}; stop or complete it there first.`, {
        leadId: after.leadId,
        campaignId: other.campaignId,
        enrollmentId: other.id,
      });
    }
  },
];
