/** Builds a plausible input for any operation from its zod schema (through JSON Schema), filling
 * every id the operation takes from a fixture set, so one loop can call every operation. */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { OpDef } from '../../../shared/ops/define.ts';
import type { Fixtures } from './fixtures.ts';

/** The part of JSON Schema the input builders read (zod's export and the OpenAPI document). */
export type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  default?: unknown;
};

export type Sample = { input: Record<string, unknown>; ids: string[] };

/** The fixture id an input field names, or undefined when the field is not an id. */
export function idFor(field: string, opName: string, f: Fixtures): string | string[] | undefined {
  const task = /task/i.test(opName);
  switch (field) {
    case 'leadId':
      return f.leadId;
    case 'leadIds':
      return [f.leadId];
    case 'survivorId':
      return f.leadId;
    case 'mergedId':
      return f.otherLeadId;
    case 'campaignId':
      return f.campaignId;
    case 'campaignIds':
      return [f.campaignId];
    case 'activityId':
      return task ? f.taskId : f.noteId;
    case 'sdrProfileId':
    case 'senderProfileId':
      return f.senderId;
    case 'targetSdrProfileId':
      return f.otherSenderId;
    case 'sdrProfileIds':
      return [f.senderId];
    case 'tagId':
      return f.tagId;
    case 'pipelineStageId':
      return f.stageId;
    case 'leadGroupId':
      return f.leadGroupId;
    case 'stepId':
    case 'afterStepId':
      return f.stepId;
    case 'variableTypeId':
      return f.columnId;
    case 'assigneeId':
      return f.memberId;
    case 'enrollmentId':
      return f.enrollmentId;
    case 'messageId':
      return f.messageId;
    case 'chatId':
      return f.chatId;
    case 'id':
      return opName.startsWith('apiKeys.') ? f.apiKeyId : undefined;
    default:
      return undefined;
  }
}

const SKIP = new Set(['cursor', 'excludeLeadIds', 'dryRun']);

function textFor(field: string, s: Schema, now: string): string {
  if (s.enum && s.enum.length > 0) return String(s.enum[0]);
  if (s.format === 'date-time' || /At$/.test(field)) return new Date(Date.parse(now) + 3 * 86_400_000).toISOString();
  if (s.format === 'email' || field === 'email') return 'someone@test.example';
  if (s.pattern?.includes('#')) return '#123456';
  if (field === 'color' || field === 'colorHex') return '#123456';
  if (/url$/i.test(field)) return 'https://social.example/post/42';
  if (field === 'timeZone') return 'Europe/Berlin';
  if (field === 'start') return '09:00';
  if (field === 'end') return '17:00';
  const base = field === 'name' ? 'Test name' : 'Hello from the test';
  return base.length >= (s.minLength ?? 0) ? base.slice(0, s.maxLength ?? base.length) : base.padEnd(s.minLength ?? 0, 'x');
}

function pickVariant(s: Schema): Schema {
  const variants = s.anyOf ?? s.oneOf;
  if (!variants) return s;
  const nonNull = variants.filter((v) => v.type !== 'null');
  return pickVariant(nonNull[0] ?? variants[0] ?? {});
}

function sample(field: string, raw: Schema, op: OpDef, f: Fixtures, now: string, full: boolean, ids: string[]): unknown {
  const s = pickVariant(raw);
  const id = idFor(field, op.name, f);
  if (id !== undefined) {
    ids.push(...(Array.isArray(id) ? id : [id]));
    return id;
  }
  if (s.const !== undefined) return s.const;
  if (s.enum && s.enum.length > 0) return s.enum[0];
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const required = new Set(s.required ?? []);
      for (const [k, v] of Object.entries(s.properties ?? {})) {
        if (SKIP.has(k)) continue;
        const isId = idFor(k, op.name, f) !== undefined;
        // An optional uuid that names nothing of the fixtures would only be refused for that.
        const unmappedId = !isId && pickVariant(v).format === 'uuid';
        if (required.has(k) || isId || (full && !unmappedId)) out[k] = sample(k, v, op, f, now, full, ids);
      }
      return out;
    }
    case 'array': {
      const n = Math.max(1, s.minItems ?? 1);
      return Array.from({ length: n }, () => sample(field.replace(/s$/, ''), s.items ?? {}, op, f, now, full, ids));
    }
    case 'string':
      return s.format === 'uuid' ? randomUUID() : textFor(field, s, now);
    case 'integer':
    case 'number':
      return Math.max(s.minimum ?? 1, Math.min(s.maximum ?? 10, 10));
    case 'boolean':
      return false;
    default:
      // Preprocessed query fields (booleans, numbers, lists of GET operations) have no JSON type.
      if (/^(limit|pageSize)$/.test(field)) return 10;
      if (field === 'pageNumber') return 1;
      return undefined;
  }
}

/** `full` also fills optional fields (for operations that need at least one of them). */
export function sampleInput(op: OpDef, f: Fixtures, now: string, full = false): Sample {
  const schema = z.toJSONSchema(op.input, { io: 'input', unrepresentable: 'any' }) as Schema;
  const ids: string[] = [];
  const value = sample('', schema, op, f, now, full, ids);
  const input = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  for (const [k, v] of Object.entries(input)) if (v === undefined) delete input[k];
  return { input, ids };
}
