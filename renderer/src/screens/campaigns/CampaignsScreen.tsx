/** The campaigns screen: the list, or one campaign's page when one is open (#/campaigns?campaign=id). */
import { useApp } from '../../state/app-store.ts';
import { CampaignList } from './CampaignList.tsx';
import { CampaignPage } from './CampaignPage.tsx';
import './campaigns.css';

export function CampaignsScreen() {
  const campaignId = useApp((s) => s.campaignId);
  return campaignId ? <CampaignPage key={campaignId} campaignId={campaignId} /> : <CampaignList />;
}
