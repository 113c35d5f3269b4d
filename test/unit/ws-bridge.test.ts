/** What the web host's socket sends as it opens (renderer/src/bridge/ws-bridge.ts): the
 * subscriptions of an earlier socket again, then what was queued meanwhile in the order it was
 * given. */
import { describe, expect, it } from 'vitest';
import type { ClientMessage } from '../../electron/bridge.ts';
import { openingMessages } from '../../renderer/src/bridge/ws-bridge.ts';

const sub = (id: number, op = 'tags.getAll'): ClientMessage => ({ t: 'sub', id, op, input: {} });

describe('the socket opening', () => {
  it("sends what was queued in the order it was given: the page's session request before the subscriptions made after it", () => {
    const queued: ClientMessage[] = [{ t: 'session', id: 1, action: 'get' }, sub(2, 'campaigns.leads.search'), sub(3), { t: 'call', id: 4, op: 'tags.getAll', input: {} }];
    expect(openingMessages([sub(2, 'campaigns.leads.search'), sub(3)], queued)).toEqual(queued);
  });

  it("asks again for an earlier socket's subscriptions first, and leaves out a queued one that ended and every unsubscribe", () => {
    const live = [sub(1), sub(5), sub(7)];
    const queued: ClientMessage[] = [sub(5), sub(6), { t: 'unsub', id: 6 }, { t: 'unsub', id: 3 }, sub(7), { t: 'session', id: 8, action: 'get' }];
    expect(openingMessages(live, queued)).toEqual([sub(1), sub(5), sub(7), { t: 'session', id: 8, action: 'get' }]);
  });
});
