/** The workspace's configuration that many screens show: stages, tags, campaigns, members, senders.
 * Each is one shared live subscription. */
import { useMemo } from 'react';
import { useOp } from './ops.ts';
import { CAMPAIGNS_INPUT, STAGES_INPUT, TAGS_INPUT } from './workspace-inputs.ts';

export function useStages() {
  const live = useOp('pipelineStages.getAll', STAGES_INPUT);
  const stages = useMemo(() => live.data?.stages ?? [], [live.data]);
  const byId = useMemo(() => new Map(stages.map((s) => [s.id, s])), [stages]);
  return { stages, byId, error: live.error, loading: live.loading };
}

export function useTags() {
  const live = useOp('tags.getAll', TAGS_INPUT);
  const tags = useMemo(() => live.data?.tags ?? [], [live.data]);
  const byId = useMemo(() => new Map(tags.map((t) => [t.id, t])), [tags]);
  return { tags, byId, error: live.error };
}

export function useCampaigns() {
  const live = useOp('campaigns.getBasic', CAMPAIGNS_INPUT);
  const campaigns = useMemo(() => live.data?.basicCampaigns ?? [], [live.data]);
  return { campaigns, error: live.error, loaded: live.data !== undefined };
}

export function useMembers() {
  const live = useOp('members.list', {});
  const members = useMemo(() => live.data?.members ?? [], [live.data]);
  const byId = useMemo(() => new Map(members.map((m) => [m.id, m])), [members]);
  return { members, byId, error: live.error };
}

export function useSenders() {
  const live = useOp('sdrProfiles.list', {});
  const senders = useMemo(() => live.data?.sdrProfiles ?? [], [live.data]);
  return { senders, error: live.error };
}
