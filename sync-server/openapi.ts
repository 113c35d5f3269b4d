/** The OpenAPI 3.1 document, generated from the operation registry's zod schemas (z.toJSONSchema), so
 * it can never drift from what the server validates. On top of the schemas: a description per
 * operation (permission, writes, dry run), declared tags per area, servers, examples, each output
 * as a named component schema, responses left open (API-CONTRACT: every response may carry more
 * fields), timestamps as date-time, and a GET parameter required exactly when the server refuses
 * the call without it. */
import { z } from 'zod';
import { ERROR_STATUS } from '../shared/errors.ts';
import type { OpDef } from '../shared/ops/define.ts';
import { operations } from '../shared/ops/index.ts';

type JsonSchema = Record<string, unknown>;
/** Routes served beside the operations, with their component schemas (openapi-replication.ts). */
export type Extra = { paths?: Record<string, unknown>; schemas?: Record<string, unknown> };

/** A zod schema as the document's JSON Schema: requests strict, answers open, *At fields date-times. */
export function toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
    // Requests are strict (unknown fields refused); responses may carry more fields than listed.
    override: io === 'output' ? (c) => { if (c.jsonSchema.additionalProperties === false) delete c.jsonSchema.additionalProperties; } : undefined,
  }) as JsonSchema;
  delete out.$schema;
  return io === 'output' ? openObjects(withTimestamps(out)) : withTimestamps(out);
}

/** Walks a JSON schema, calling `f` on every subschema (properties, items, unions, ...). */
function walk(schema: unknown, f: (s: JsonSchema, key: string | null) => void, key: string | null = null): void {
  if (schema === null || typeof schema !== 'object') return;
  if (Array.isArray(schema)) {
    for (const x of schema) walk(x, f, null);
    return;
  }
  const s = schema as JsonSchema;
  f(s, key);
  for (const [k, v] of Object.entries(s)) {
    if (k === 'properties' && v && typeof v === 'object') for (const [name, sub] of Object.entries(v as JsonSchema)) walk(sub, f, name);
    else if (k === 'examples' || k === 'example' || k === 'default' || k === 'const' || k === 'enum') continue;
    else if (typeof v === 'object') walk(v, f, null);
  }
}

/** Responses are open: a client must accept fields it does not know (API-CONTRACT "Strict inputs"). */
function openObjects(schema: JsonSchema): JsonSchema {
  walk(schema, (s) => {
    if (s.additionalProperties === false) delete s.additionalProperties;
  });
  return schema;
}

/** Fields named *At (createdAt, dueAt, ...) hold ISO 8601 instants. */
function withTimestamps(schema: JsonSchema): JsonSchema {
  walk(schema, (s, key) => {
    if (!key || !/[a-z]At$/.test(key) || s.format !== undefined) return;
    const type = s.type;
    if (type === 'string' || (Array.isArray(type) && type.includes('string'))) s.format = 'date-time';
  });
  return schema;
}

/** A value that fits `schema`, for the document's examples. */
function exampleOf(schema: unknown, key: string | null = null, depth = 0): unknown {
  if (schema === null || typeof schema !== 'object' || depth > 6) return null;
  const s = schema as JsonSchema;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  for (const union of ['anyOf', 'oneOf'] as const) {
    const options = s[union];
    if (Array.isArray(options)) {
      const pick = (options as JsonSchema[]).find((o) => o.type !== 'null') ?? options[0];
      return exampleOf(pick, key, depth + 1);
    }
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0) return exampleOf(s.allOf[0], key, depth + 1);
  const type = Array.isArray(s.type) ? ((s.type as string[]).find((t) => t !== 'null') ?? 'null') : s.type;
  switch (type) {
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = new Set((s.required ?? []) as string[]);
      const out: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries(props)) if (required.has(name) || depth === 0) out[name] = exampleOf(sub, name, depth + 1);
      return out;
    }
    case 'array':
      return [exampleOf(s.items, key, depth + 1)];
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' ? s.minimum : key === 'limit' ? 50 : 1;
    case 'boolean':
      return false;
    case 'string':
      return exampleString(s, key);
    default:
      return null;
  }
}

function exampleString(s: JsonSchema, key: string | null): string {
  const k = key ?? '';
  if (s.format === 'date-time') return '2026-11-16T09:30:00.000Z';
  if (s.format === 'date') return '2026-11-16';
  if (s.format === 'email' || k === 'email') return 'ada@example.com';
  if (s.format === 'uri' || s.format === 'url' || /url$/i.test(k)) return 'https://example.com';
  if (s.format === 'uuid' || /(^id$|Id$|Ids$)/.test(k)) return '0b6f3c1e-5d2a-4c8e-9f1a-2b3c4d5e6f70';
  if (k === 'name') return 'Q4 outreach';
  if (k === 'timezone') return 'Europe/Berlin';
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const base = k || 'text';
  return base.length >= min ? base : base.padEnd(min, 'x');
}

/** Query parameters the server refuses the call without: those an empty input reports as missing. */
function requiredByServer(op: OpDef): Set<string> {
  const out = new Set<string>();
  try {
    const r = op.input.safeParse({});
    if (!r.success) for (const issue of r.error.issues) if (typeof issue.path[0] === 'string') out.add(issue.path[0]);
  } catch {
    // An asynchronous refinement: the schema's own `required` stands.
  }
  return out;
}

/** PascalCase component name of an operation's output: campaigns.leads.search -> CampaignsLeadsSearchOutput. */
const componentName = (op: OpDef, suffix: string): string =>
  `${op.name
    .split('.')
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('')}${suffix}`;

/** The areas of the API, in the order the docs page lists them. */
const AREA_DESCRIPTIONS: Record<string, string> = {
  workspace: 'The workspace, its members, API keys and subscription.',
  members: 'People of the workspace and their roles.',
  apiKeys: 'API keys of the workspace members.',
  campaigns: "Campaigns, their sequences, their lead groups' leads, enrollments, activity and metrics.",
  leads: 'Leads: people and companies to reach, with their fields, tags, notes and tasks.',
  leadGroups: 'Lead groups: the lists of leads a campaign works on.',
  sdrProfiles: "Senders (an SDR's email, LinkedIn or connector account) and their limits, credentials and hosting.",
  tags: 'Tags for leads.',
  notes: 'Notes on leads.',
  tasks: 'Tasks and reminders.',
  activities: 'The timeline of what happened with each lead.',
  bulk: 'Bulk operations on a filter selection of leads, with a dry run that previews them.',
  social: 'Social selling: posts and engagement.',
  replication: 'The replication endpoints desktops sync with (RxDB protocol: pull, push, live stream).',
  system: 'Health, metrics, the docs page and this document.',
};

/** Readable description of an operation: its summary, who may call it, what it changes. */
function describe(op: OpDef): string {
  const who: Record<string, string> = {
    member: 'Any member of the workspace may call it.',
    admin: 'Owners and admins may call it.',
    owner: 'Only the owner may call it.',
  };
  const lines = [op.summary, who[op.permission] ?? `Permission: ${op.permission}.`];
  lines.push(op.mutates ? 'It changes data in one transaction: all of it or nothing. Send an Idempotency-Key header to retry safely.' : 'It only reads.');
  if (op.dryRun) lines.push('With `dryRun: true` it answers exactly what the real call would, and changes nothing.');
  if (op.serverOnly) lines.push('It runs on the sync server only (the desktop forwards it).');
  if (op.needsChannel) lines.push("It reaches the sender's network (SMTP, connector): it cannot run offline, and a network failure is 502 CHANNEL_ERROR.");
  return lines.join('\n\n');
}

export const errorRef = { $ref: '#/components/schemas/ErrorBody' };
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
  '503': 'The database cannot be reached right now, during a restart or failover (UNAVAILABLE); retry after Retry-After seconds.',
};

function errorStatuses(op: OpDef): string[] {
  const s = ['400', '401', '404', '405', '429', '500', '503'];
  if (op.mutates || op.permission !== 'member') s.push('403');
  if (op.mutates) s.push('409', '422');
  if (op.method === 'POST') s.push('413');
  if (op.needsChannel) s.push('502');
  return [...new Set(s)].sort();
}

function operationObject(op: OpDef, components: Record<string, unknown>): Record<string, unknown> {
  const input = toSchema(op.input, 'input');
  const output = toSchema(op.output, 'output');
  const outputName = componentName(op, 'Output');
  components[outputName] = output;
  const responses: Record<string, unknown> = {
    '200': {
      description: 'Success. The answer may carry fields this document does not list yet: ignore those you do not know.',
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${outputName}` }, example: exampleOf(output) } },
    },
  };
  for (const status of errorStatuses(op)) responses[status] = errorResponse(ERROR_DESCRIPTIONS[status] ?? 'Error.');
  const base: Record<string, unknown> = {
    operationId: op.name,
    summary: op.summary,
    description: describe(op),
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
    const required = new Set([...((input.required ?? []) as string[]), ...requiredByServer(op)]);
    base.parameters = Object.entries(props).map(([name, schema]) => ({
      name,
      in: 'query',
      required: required.has(name),
      // Lists are repeated parameters or one comma list.
      ...(schema.type === 'array' ? { style: 'form', explode: true } : {}),
      schema,
      example: exampleOf(schema, name),
      ...(typeof schema.description === 'string' ? { description: schema.description } : {}),
    }));
  } else {
    base.requestBody = { required: true, content: { 'application/json': { schema: input, example: exampleOf(input) } } };
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

/** Builds the document; `extra` adds routes served beside the operations (replicationOpenApi()). */
export function openApiDocument(opts: { serverUrl?: string; extra?: Extra } = {}): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  const components: Record<string, unknown> = {};
  const failures: string[] = [];
  for (const op of Object.values(operations as Record<string, OpDef>)) {
    try {
      paths[`/${op.name}`] = { [op.method.toLowerCase()]: operationObject(op, components) };
    } catch (e) {
      failures.push(`${op.name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  if (failures.length > 0) throw new Error(`OpenAPI generation failed for ${failures.join('; ')}`);
  paths['/healthz'] = {
    get: {
      operationId: 'healthz',
      summary: 'Liveness and database check; no authentication.',
      description: 'For load balancers and container health checks: 200 when the server and its database answer, 503 otherwise.',
      tags: ['system'],
      security: [],
      responses: {
        '200': { description: 'The server and its database answer.', content: { 'application/json': { schema: { type: 'object', properties: { ok: { const: true }, database: { type: 'string' } } } } } },
        '503': errorResponse('The database does not answer.'),
      },
    },
  };
  paths['/openapi.json'] = {
    get: { operationId: 'openapi', summary: 'This document; no authentication.', tags: ['system'], security: [], responses: { '200': { description: 'OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object' } } } } } },
  };
  paths['/docs'] = {
    get: { operationId: 'docs', summary: 'The API reference page over this document (served by this server, works offline); no authentication.', tags: ['system'], security: [], responses: { '200': { description: 'An HTML page.', content: { 'text/html': { schema: { type: 'string' } } } } } },
  };
  paths['/metrics'] = {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus metrics: requests by operation and status, latency, open replication streams, refused requests, runner actions.',
      description: 'Text exposition format. When the server has METRICS_TOKEN set, send it as Authorization: Bearer <token>.',
      tags: ['system'],
      security: [{}, { metricsToken: [] }],
      responses: { '200': { description: 'Metrics.', content: { 'text/plain': { schema: { type: 'string' } } } }, '401': errorResponse('METRICS_TOKEN is set and the request did not carry it.') },
    },
  };
  Object.assign(paths, opts.extra?.paths ?? {});
  const usedTags = new Set<string>();
  for (const methods of Object.values(paths) as Record<string, { tags?: string[] }>[]) for (const m of Object.values(methods)) for (const t of m.tags ?? []) usedTags.add(t);
  const order = Object.keys(AREA_DESCRIPTIONS);
  const rank = (t: string): number => (order.includes(t) ? order.indexOf(t) : order.length);
  const tags = [...usedTags].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).map((name) => ({ name, description: AREA_DESCRIPTIONS[name] ?? `Operations named ${name}.*.` }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Outreach CRM API',
      version: '1.0.0',
      description:
        'Every operation is addressed as /<operation name>. GET operations take query parameters (booleans true/false, lists as repeated parameters or comma lists); POST operations take a JSON object body and refuse fields they do not declare. Answers may carry fields this document does not list yet: ignore those you do not know. Authenticate with Authorization: Bearer live_... . Errors have the body {"error": {"code", "message", "details"}}.\n\nRate limit per API key: RATE_LIMIT_PER_MINUTE (default 1200), for all server processes together. Every authenticated answer carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset; a refusal (429 RATE_LIMITED) carries Retry-After. Too many unknown or invalid keys from one address are refused the same way.',
    },
    servers: [...(opts.serverUrl ? [{ url: opts.serverUrl, description: 'This server.' }] : []), { url: '/', description: 'The server that serves this document.' }],
    tags,
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A workspace API key: live_ followed by 40 base62 characters (npm run sync-server -- create-member prints one).' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN of the server, for GET /metrics only.' },
      },
      schemas: {
        ErrorBody: {
          type: 'object',
          description: 'The body of every refusal. code is stable (switch on it); message is for people; details name the field, limit or id at fault.',
          examples: [{ error: { code: 'INVALID_INPUT', message: 'name: give a name.', details: { issues: [{ path: 'name', message: 'give a name' }] } } }],
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
        ...components,
        ...(opts.extra?.schemas ?? {}),
      },
    },
  };
}
