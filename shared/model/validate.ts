/** JSON-schema validation of documents against the collection schemas (the same schemas RxDB uses). */
import { Ajv } from 'ajv';
import type { ValidateFunction } from 'ajv';
import { COLLECTIONS } from './index.ts';
import type { CollectionName } from './index.ts';

const ajv = new Ajv({ strict: false, allErrors: false });
const validators = new Map<CollectionName, ValidateFunction>();

function validatorFor(c: CollectionName): ValidateFunction {
  let v = validators.get(c);
  if (!v) {
    const { primaryKey: _pk, version: _v, indexes: _i, title: _t, ...schema } = COLLECTIONS[c].schema as Record<string, unknown>;
    v = ajv.compile(schema);
    validators.set(c, v);
  }
  return v;
}

/** The first schema problem of a document, in words, or null when it is valid. */
export function schemaProblem(c: CollectionName, doc: unknown): string | null {
  const v = validatorFor(c);
  if (v(doc)) return null;
  const e = v.errors?.[0];
  if (!e) return 'invalid document';
  return `${e.instancePath || '(document)'} ${e.message ?? 'is invalid'}${e.params && 'additionalProperty' in e.params ? `: ${String(e.params.additionalProperty)}` : ''}`;
}
