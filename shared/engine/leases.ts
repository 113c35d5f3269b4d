/** Which runner works a sender (leases), and how a sender's channel failures slow it down or
 * disconnect it; the gate that says whether a sender may act for a campaign now. */
import type { Campaign, Sender } from '../model/index.ts';
import type { ChannelFailure } from './channel.ts';
import { eq, errorText, isConflict } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';

export type SenderGate = null | 'wait' | { until: Date };

export function createLeases(core: RunnerCore) {
  const { store, clock, runnerId, leaseMs, baseBackoff, cursors, failures, commitWithRetry } = core;

  /** Takes or renews this runner's lease and ends an expired backoff; false when another runner
   * holds the sender. */
  async function prepareSender(st: TickState, id: string): Promise<boolean> {
    let ok = true;
    try {
      await commitWithRetry(async (tx) => {
        ok = true;
        const s = await tx.get('senders', id);
        if (!s) {
          ok = false;
          return;
        }
        let next: Sender = s;
        if (runnerId !== null) {
          const until = s.runnerLeaseUntil ? Date.parse(s.runnerLeaseUntil) : 0;
          if (s.runnerId && s.runnerId !== runnerId && until > st.nowMs) {
            ok = false;
            st.senders.set(s.id, s);
            return;
          }
          if (s.runnerId !== runnerId || until - st.nowMs < leaseMs / 2) {
            next = { ...next, runnerId, runnerLeaseUntil: new Date(st.nowMs + leaseMs).toISOString(), pollCursor: cursors.get(s.id) ?? s.pollCursor ?? null };
          }
        }
        if (s.status === 'limited' && (!s.backoffUntil || Date.parse(s.backoffUntil) <= st.nowMs)) {
          next = { ...next, status: 'available', backoffUntil: null, statusReason: null };
          st.report.senders.resumed.push(s.id);
        }
        if (next !== s) {
          next = { ...next, updatedAt: st.nowIso };
          await tx.put('senders', next);
        }
        st.senders.set(s.id, next);
      });
    } catch (e) {
      if (!isConflict(e)) st.report.errors.push({ message: `Could not prepare sender: ${errorText(e)}`, sdrProfileId: id });
      return false;
    }
    return ok;
  }

  /** A channel failure that concerns the account: back off (limited) or disconnect, visibly. */
  async function senderFailure(st: TickState, sender: Sender, f: ChannelFailure): Promise<void> {
    const n = (failures.get(sender.id) ?? 0) + 1;
    failures.set(sender.id, n);
    const seconds = f.retryAfterSeconds ?? Math.min(6 * 3600, baseBackoff * 2 ** (n - 1));
    const until = new Date(st.nowMs + seconds * 1000).toISOString();
    await commitWithRetry(async (tx) => {
      const s = await tx.get('senders', sender.id);
      if (!s) return;
      const next: Sender =
        f.kind === 'unauthorized'
          ? { ...s, status: 'disconnected', backoffUntil: null, statusReason: `The network refused the account's credentials: ${f.message}`, updatedAt: st.nowIso }
          : {
              ...s, status: 'limited', backoffUntil: until, updatedAt: st.nowIso,
              statusReason: f.kind === 'limited' ? `The network asked to slow down (${f.message}); resuming at ${until}.` : `The channel failed (${f.message}); retrying at ${until}.`,
            };
      await tx.put('senders', next);
      st.senders.set(s.id, next);
    });
    if (f.kind === 'unauthorized') st.report.senders.disconnected.push(sender.id);
    else st.report.senders.limited.push(sender.id);
  }

  /** Why a sender cannot act for a campaign now: 'wait' leaves the enrollment as it is; a date
   * defers it; null means it may act. */
  function senderGate(st: TickState, c: Campaign, senderId: string): SenderGate {
    const s = st.senders.get(senderId);
    if (!s || !st.held.has(senderId)) return 'wait';
    const entry = c.senders.find((x) => x.sdrProfileId === senderId);
    // Removed from the campaign: leads in conversation wait until moved with bulkChangeSender.
    if (!entry || entry.paused || s.outreachPaused || s.status === 'paused' || s.status === 'disconnected') return 'wait';
    if (s.status === 'limited') return s.backoffUntil && Date.parse(s.backoffUntil) > st.nowMs ? { until: new Date(s.backoffUntil) } : 'wait';
    return null;
  }

  /** Gives up the leases this runner holds (on shutdown), so another host may take over at once. */
  async function release(): Promise<void> {
    if (runnerId === null) return;
    const { docs } = await store.query('senders', { where: eq('runnerId', runnerId) });
    const now = clock.now().toISOString();
    for (const s of docs) {
      try {
        await commitWithRetry(async (tx) => {
          const cur = await tx.get('senders', s.id);
          if (!cur || cur.runnerId !== runnerId) return;
          await tx.put('senders', { ...cur, runnerId: null, runnerLeaseUntil: null, pollCursor: cursors.get(cur.id) ?? cur.pollCursor ?? null, updatedAt: now });
        });
      } catch {
        // The lease simply expires.
      }
    }
  }

  return { prepareSender, senderFailure, senderGate, release };
}

export type Leases = ReturnType<typeof createLeases>;
