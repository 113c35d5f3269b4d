/** A unique violation of an invariant index is told by the index's name and the commit's own writes,
 * never by the server's message text, which follows the database's locale (lc_messages). */
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../shared/errors.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { uniqueViolation } from '../../sync-server/pg-store.ts';

const enrollment = (id: string, leadId: string, campaignId: string, status: string): AnyWrite =>
  ({ collection: 'enrollments', id, before: null, after: { id, leadId, campaignId, status } }) as unknown as AnyWrite;

/** pg's error for a unique violation, as a German-speaking server words it. */
const violation = (constraint: string) =>
  Object.assign(new Error('doppelter Schlüsselwert verletzt Unique-Constraint'), { code: '23505', constraint, detail: 'Schlüssel existiert bereits.' });

describe('unique violations of the invariant indexes', () => {
  it('names the lead of the running sequence from the writes, whatever the language of the message', () => {
    const err = uniqueViolation(violation('enrollments_one_running'), [enrollment('e1', 'lead-1', 'c1', 'IN_PROGRESS'), enrollment('e2', 'lead-2', 'c1', 'STOPPED')]);
    expect(err).toBeInstanceOf(DomainError);
    expect(err?.code).toBe('CONFLICT');
    expect(err?.details).toMatchObject({ reason: 'ALREADY_RUNNING', constraint: 'enrollments_one_running', leadId: 'lead-1' });
    expect(err?.message).toContain('lead-1');
  });

  it('names the lead and campaign of a second enrollment, and no lead when the writes point at several', () => {
    expect(uniqueViolation(violation('enrollments_one_per_campaign'), [enrollment('e1', 'lead-1', 'c1', 'STOPPED')])?.details).toMatchObject({ reason: 'ALREADY_ENROLLED', leadId: 'lead-1', campaignId: 'c1' });
    const many = uniqueViolation(violation('enrollments_one_per_campaign'), [enrollment('e1', 'lead-1', 'c1', 'IN_PROGRESS'), enrollment('e2', 'lead-2', 'c1', 'IN_PROGRESS')]);
    expect(many?.details.reason).toBe('ALREADY_ENROLLED');
    expect(many?.details).not.toHaveProperty('leadId');
    expect(many?.details).toMatchObject({ campaignId: 'c1' });
  });

  it('reports another unique index as a duplicate and leaves other errors alone', () => {
    expect(uniqueViolation(violation('documents_pkey'), [])?.details).toMatchObject({ reason: 'DUPLICATE', constraint: 'documents_pkey' });
    expect(uniqueViolation(Object.assign(new Error('x'), { code: '40001' }), [])).toBeNull();
  });
});
