/** The lead panel shows one field per custom column name: a lead on two lists with a column of the
 * same name on each sees it once (saving sets both), with the other list's value where it differs. */
import { describe, expect, it } from 'vitest';
import { customFields } from '../../renderer/src/screens/lead/custom-fields.ts';

const v = (id: string, name: string, value: string, builtInType = '') => ({ variableTypeId: id, name, value, builtInType });

describe('lead panel custom fields', () => {
  it('merges same-named columns of several lists and keeps built-in columns out', () => {
    const out = customFields([v('c1', 'First name', 'Ann', 'firstName'), v('c2', 'Pain point', 'churn'), v('c3', 'pain point ', 'churn'), v('c4', 'Team size', '40')]);
    expect(out.map((f) => [f.variableTypeId, f.name, f.value, f.otherValues])).toEqual([
      ['c2', 'Pain point', 'churn', []],
      ['c4', 'Team size', '40', []],
    ]);
  });

  it('shows the values the other lists hold when they differ, each once', () => {
    const out = customFields([v('c2', 'Pain point', 'churn'), v('c3', 'Pain Point', 'hiring'), v('c5', 'PAIN POINT', 'hiring'), v('c6', 'Pain point', '')]);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ variableTypeId: 'c2', value: 'churn', otherValues: ['hiring'] });
  });
});
