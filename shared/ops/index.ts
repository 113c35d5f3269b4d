/** The one registry of operations. An operation `a.b.c` is defined in ./a.b.c.ts if that file exists,
 * else ./a.b.ts, else ./a.ts; each of those files ends with `ops`, the list of what it serves
 * (test/unit/ops-layout.test.ts holds every file to it). */
import type { z } from 'zod';
import { ops as apiKeysOps } from './apiKeys.ts';
import { ops as campaignsOps } from './campaigns.ts';
import { ops as campaignsAddSequenceStepOps } from './campaigns.addSequenceStep.ts';
import { ops as campaignsDuplicateOps } from './campaigns.duplicate.ts';
import { ops as campaignsGetBasicOps } from './campaigns.getBasic.ts';
import { ops as campaignsGetActivityOps } from './campaigns.getActivity.ts';
import { ops as campaignsGetEnrollmentsOps } from './campaigns.getEnrollments.ts';
import { ops as campaignsGetStepMetricsOps } from './campaigns.getStepMetrics.ts';
import { ops as campaignsLeadsOps } from './campaigns.leads.ts';
import { ops as campaignsLeadsBulkChangeSenderOps } from './campaigns.leads.bulkChangeSender.ts';
import { ops as campaignsLeadsBulkEnrollInCampaignOps } from './campaigns.leads.bulkEnrollInCampaign.ts';
import { ops as campaignsLeadsCreateOps } from './campaigns.leads.create.ts';
import { ops as campaignsLeadsExportOps } from './campaigns.leads.export.ts';
import { ops as campaignsLeadsImportOps } from './campaigns.leads.import.ts';
import { ops as campaignsLeadsDuplicatesOps } from './campaigns.leads.duplicates.ts';
import { ops as campaignsLeadsMergeOps } from './campaigns.leads.merge.ts';
import { ops as campaignsLeadsUnmergeOps } from './campaigns.leads.unmerge.ts';
import { ops as campaignsLeadsResendUnknownOps } from './campaigns.leads.resendUnknown.ts';
import { ops as campaignsLeadsSendMessageOps } from './campaigns.leads.sendMessage.ts';
import { ops as campaignsLeadsUnenrollOps } from './campaigns.leads.unenroll.ts';
import { ops as campaignsLeadsUpdateOps } from './campaigns.leads.update.ts';
import { ops as campaignsPreviewMessageOps } from './campaigns.previewMessage.ts';
import { ops as campaignsUpdateScheduleOps } from './campaigns.updateSchedule.ts';
import { ops as campaignsUpdateSendersOps } from './campaigns.updateSenders.ts';
import { ops as campaignsUpdateSequenceMessageOps } from './campaigns.updateSequenceMessage.ts';
import { ops as inboxOps } from './inbox.ts';
import { ops as leadActivitiesOps } from './leadActivities.ts';
import { ops as leadGroupsOps } from './leadGroups.ts';
import { ops as membersOps } from './members.ts';
import { ops as pipelineStagesOps } from './pipelineStages.ts';
import { ops as sdrProfilesOps } from './sdrProfiles.ts';
import { ops as sdrProfilesCreateOps } from './sdrProfiles.create.ts';
import { ops as sdrProfilesOauthOps } from './sdrProfiles.oauth.ts';
import { ops as socialOps } from './social.ts';
import { ops as tagsOps } from './tags.ts';
import { ops as webhooksOps } from './webhooks.ts';
import type { OpDef } from './define.ts';

function combine<const T extends readonly Record<string, OpDef>[]>(...areas: T): UnionToIntersection<T[number]> {
  const out: Record<string, OpDef> = {};
  for (const area of areas) {
    for (const [name, op] of Object.entries(area)) {
      if (out[name]) throw new Error(`Operation ${name} is registered twice.`);
      out[name] = op;
    }
  }
  return out as UnionToIntersection<T[number]>;
}

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

export const operations = combine(
  leadActivitiesOps,
  campaignsLeadsOps, campaignsLeadsCreateOps, campaignsLeadsUpdateOps, campaignsLeadsSendMessageOps, campaignsLeadsImportOps,
  campaignsLeadsExportOps, campaignsLeadsBulkEnrollInCampaignOps, campaignsLeadsBulkChangeSenderOps, campaignsLeadsUnenrollOps,
  campaignsLeadsResendUnknownOps, campaignsLeadsMergeOps, campaignsLeadsUnmergeOps, campaignsLeadsDuplicatesOps,
  campaignsGetBasicOps, campaignsOps, campaignsUpdateSendersOps, campaignsUpdateScheduleOps, campaignsGetEnrollmentsOps,
  campaignsGetActivityOps, campaignsGetStepMetricsOps, campaignsPreviewMessageOps, campaignsDuplicateOps,
  campaignsAddSequenceStepOps, campaignsUpdateSequenceMessageOps,
  sdrProfilesOps, sdrProfilesCreateOps, sdrProfilesOauthOps,
  socialOps, tagsOps, pipelineStagesOps, leadGroupsOps, membersOps, apiKeysOps, inboxOps, webhooksOps,
);

export type Operations = typeof operations;
export type OpName = keyof Operations & string;
type DefOf<N extends OpName> = Operations[N] extends OpDef<infer I, infer O> ? { i: I; o: O } : never;
/** What a caller sends (before defaults and coercion). */
export type OpInput<N extends OpName> = z.input<DefOf<N>['i']>;
/** What a caller receives. */
export type OpOutput<N extends OpName> = z.output<DefOf<N>['o']>;

export const OPERATION_NAMES = Object.keys(operations) as OpName[];
