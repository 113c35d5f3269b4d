/** The words of the new-or-warmed-up choice, the same in the connect dialog and on a sender's card. */

export const NEW_ACCOUNT = 'New account: ramps up from 20% of its limits on day 1 to all of them after 14 days';
export const WARMED_UP_ACCOUNT = 'Already warmed up: sends at its full limits from the start (the weekly cap still holds)';

/** The risk, in one sentence, shown wherever the user may choose warmed up. */
export const WARMED_UP_RISK =
  'Full volume from an account without months of normal sending gets it flagged as spam or restricted by the network, so choose this only for an established account in regular use.';
