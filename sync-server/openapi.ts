/** The OpenAPI 3.1 document, generated from the operation registry's zod schemas (z.toJSONSchema), so
 * it can never drift from what the server validates. */
import { z } from 'zod';
import { ERROR_STATUS } from '../shared/errors.ts';
import type { OpDef } from '../shared/ops/define.ts';
import { operations } from '../shared/ops/index.ts';

type JsonSchema = Record<string, unknown>;
type Extra = { paths?: Record<string, unknown>; schemas?: Record<string, unknown> };

function toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  delete out.$schema;
  return out;
}

const errorRef = { $ref: '#/components/schemas/ErrorBody' };
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: errorRef } } });

const ERROR_DESCRIPTIONS: Record<string, string> = {
  '400': 'Malformed input (INVALID_INPUT): details.issues lists each problem.',
  '401': 'Missing, unknown or revoked API key (UNAUTHENTICATED).',
  '403': 'Not the author or creator, missing permission, or no active subscription.',
  '404': 'An id that is not in this workspace (NOT_FOUND); ids of other workspaces are not found too.',
  '405': 'The operation exists with the other HTTP method (METHOD_NOT_ALLOWED).',
  '409': 'The object is in the wrong state, a concurrent change won (CONFLICT), or the Idempotency-Key was used for another request.',
  '413': 'The request body is larger than the server accepts (PAYLOAD_TOO_LARGE).',
  '422': 'A domain rule refuses the request (see the error code).',
  '429': 'Rate limit of the API key reached (RATE_LIMITED); wait Retry-After seconds.',
  '500': 'Unexpected server error (INTERNAL); the request id is in details.requestId.',
  '502': "The sender's network could not be reached (CHANNEL_ERROR).",
};

function errorStatuses(op: OpDef): string[] {
  const s = ['400', '401', '404', '405', '429', '500'];
  if (op.mutates || op.permission !== 'member') s.push('403');
  if (op.mutates) s.push('409', '422');
  if (op.method === 'POST') s.push('413');
  if (op.needsChannel) s.push('502');
  return [...new Set(s)].sort();
}

function operationObject(op: OpDef): Record<string, unknown> {
  const input = toSchema(op.input, 'input');
  const responses: Record<string, unknown> = {
    '200': { description: 'Success.', content: { 'application/json': { schema: toSchema(op.output, 'output') } } },
  };
  for (const status of errorStatuses(op)) responses[status] = errorResponse(ERROR_DESCRIPTIONS[status] ?? 'Error.');
  const base: Record<string, unknown> = {
    operationId: op.name,
    summary: op.summary,
    tags: [op.name.split('.')[0]],
    security: [{ bearer: [] }],
    responses,
    'x-permission': op.permission,
    'x-mutates': op.mutates,
    'x-dry-run': op.dryRun,
    ...(op.serverOnly ? { 'x-server-only': true } : {}),
  };
  if (op.method === 'GET') {
    const props = (input.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((input.required ?? []) as string[]);
    base.parameters = Object.entries(props).map(([name, schema]) => ({
      name,
      in: 'query',
      required: required.has(name),
      // Lists are repeated parameters or one comma list.
      ...(schema.type === 'array' ? { style: 'form', explode: true } : {}),
      schema,
      ...(typeof schema.description === 'string' ? { description: schema.description } : {}),
    }));
  } else {
    base.requestBody = { required: true, content: { 'application/json': { schema: input } } };
    base.parameters = [
      {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: 'Replays the first response for 24 hours when the same key comes with the same body; the same key with another body is refused (409 IDEMPOTENCY_KEY_REUSED).',
        schema: { type: 'string', maxLength: 255 },
      },
    ];
  }
  return base;
}

/** Builds the document; `extra` adds the replication routes. */
export function openApiDocument(opts: { serverUrl?: string; extra?: Extra } = {}): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  const failures: string[] = [];
  for (const op of Object.values(operations as Record<string, OpDef>)) {
    try {
      paths[`/${op.name}`] = { [op.method.toLowerCase()]: operationObject(op) };
    } catch (e) {
      failures.push(`${op.name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  if (failures.length > 0) throw new Error(`OpenAPI generation failed for ${failures.join('; ')}`);
  paths['/healthz'] = {
    get: {
      operationId: 'healthz',
      summary: 'Liveness and database check; no authentication.',
      security: [],
      responses: {
        '200': { description: 'The server and its database answer.', content: { 'application/json': { schema: { type: 'object', properties: { ok: { const: true }, database: { type: 'string' } } } } } },
        '503': errorResponse('The database does not answer.'),
      },
    },
  };
  paths['/openapi.json'] = {
    get: { operationId: 'openapi', summary: 'This document; no authentication.', security: [], responses: { '200': { description: 'OpenAPI 3.1 document.' } } },
  };
  Object.assign(paths, opts.extra?.paths ?? {});
  return {
    openapi: '3.1.0',
    info: {
      title: 'Outreach CRM API',
      version: '1.0.0',
      description:
        'Every operation is addressed as /<operation name>. GET operations take query parameters (booleans true/false, lists as repeated parameters or comma lists); POST operations take a JSON object body. Authenticate with Authorization: Bearer live_... . Errors have the body {"error": {"code", "message", "details"}}. Rate limit per key: RATE_LIMIT_PER_MINUTE (default 1200).',
    },
    ...(opts.serverUrl ? { servers: [{ url: opts.serverUrl }] } : {}),
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A workspace API key: live_ followed by 40 base62 characters.' } },
      schemas: {
        ErrorBody: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message', 'details'],
              properties: {
                code: { type: 'string', enum: Object.keys(ERROR_STATUS) },
                message: { type: 'string', description: 'A human sentence saying what is wrong and what to do.' },
                details: { type: 'object', additionalProperties: true },
              },
            },
          },
        },
        ...(opts.extra?.schemas ?? {}),
      },
    },
  };
}
