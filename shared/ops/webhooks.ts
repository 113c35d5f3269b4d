/**
 * Webhooks: endpoints that receive the workspace's events, signed as the Standard Webhooks
 * specification says, and their delivery log. Server-only: an endpoint's secret never reaches a
 * document (documents replicate to every desktop), so endpoints live in the sync server's own tables
 * behind ctx.webhooks, and a desktop forwards these operations to its server.
 *
 *   webhooks.create, webhooks.list, webhooks.update, webhooks.delete, webhooks.rotateSecret,
 *   webhooks.sendTest, webhooks.deliveries.list, webhooks.deliveries.redeliver
 *
 * Every one needs the `admin` permission (owner or admin), reads included: an endpoint's URL is often
 * a capability by itself (Zapier, Make and n8n "catch hook" URLs accept whatever is posted to them),
 * and the log holds every event's body; and a webhook sends the workspace's data out of it, which,
 * like managing members, is the owner's and admins' decision.
 */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { TEST_EVENT_TYPE, WEBHOOK_EVENT_TYPES, eventBody, newEventId } from '../webhooks/events.ts';
import { MAX_ENDPOINTS, PREVIOUS_SECRET_VALID_MS, SECRET_BYTES } from '../webhooks/port.ts';
import type { WebhookEndpointView, WebhookPort } from '../webhooks/port.ts';
import { webhookSecret } from '../webhooks/secret.ts';
import { mutation, opsByName, query } from './define.ts';
import { cursor, DEFAULT_PAGE_SIZE, dryRun, pageLimit, uuid } from './params.ts';

const eventType = z.enum(WEBHOOK_EVENT_TYPES, { message: `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}` });
const eventList = z
  .array(eventType)
  .min(1, 'choose at least one event')
  .max(WEBHOOK_EVENT_TYPES.length)
  .transform((list) => WEBHOOK_EVENT_TYPES.filter((t) => list.includes(t)));
const urlInput = z.string().trim().min(1).max(2_000).url({ message: 'must be an absolute URL (https://...)' });
const description = z.string().trim().max(200);

const endpointOut = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  disabledReason: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  secretCreatedAt: z.string(),
  previousSecretExpiresAt: z.string().nullable(),
  failingSince: z.string().nullable(),
  lastSuccessAt: z.string().nullable(),
  pendingDeliveries: z.number().int(),
});

const attemptOut = z.object({
  attempt: z.number().int(),
  at: z.string(),
  durationMs: z.number().int(),
  requestHeaders: z.record(z.string(), z.string()),
  responseStatus: z.number().int().nullable(),
  responseExcerpt: z.string(),
  error: z.string().nullable(),
});

const deliveryOut = z.object({
  id: z.string(),
  endpointId: z.string(),
  eventId: z.string(),
  type: z.string(),
  status: z.enum(['pending', 'succeeded', 'failed']),
  attempts: z.number().int(),
  createdAt: z.string(),
  nextAttemptAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  redeliveryOf: z.string().nullable(),
  body: z.string(),
  attemptLog: z.array(attemptOut),
});

/** The port, or the sentence that says where webhooks live. */
function portOf(ctx: Ctx): WebhookPort {
  if (!ctx.webhooks) throw new DomainError('SERVER_ONLY', 'Webhooks are kept and delivered by the sync server: connect this workspace to one to use them.');
  return ctx.webhooks;
}

async function endpointOrNotFound(ctx: Ctx, endpointId: string): Promise<WebhookEndpointView> {
  const e = await portOf(ctx).get(ctx.actor.workspaceId, endpointId);
  if (!e) throw notFound('Webhook endpoint', endpointId);
  return e;
}

/** Refuses a URL the server will not call, with the sentence that says why (nothing is stored). */
async function checkUrl(ctx: Ctx, raw: string): Promise<string> {
  const port = portOf(ctx);
  const url = new URL(raw);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && port.allowHttp)) {
    const why = url.protocol === 'http:'
      ? 'Webhook URLs must use https: events carry your leads\' names, emails and replies, and plain http would send them readable to anyone on the way (the operator can allow http with WEBHOOKS_ALLOW_HTTP=1, for a receiver on a private network).'
      : `Webhook URLs must use ${port.allowHttp ? 'https or http (this server allows http: WEBHOOKS_ALLOW_HTTP=1)' : 'https'}, not ${url.protocol.replace(/:$/, '')}.`;
    throw new DomainError('URL_NOT_ALLOWED', why, { field: 'url', protocol: url.protocol });
  }
  if (url.username !== '' || url.password !== '') {
    throw new DomainError('INVALID_INPUT', 'url: put no user name or password in a webhook URL; deliveries are signed instead.', { issues: [{ path: 'url', message: 'has credentials' }] });
  }
  const refusal = await port.urlRefusal(url);
  if (refusal) throw new DomainError('URL_NOT_ALLOWED', refusal, { field: 'url', host: url.hostname });
  return url.href;
}

const create = mutation({
  name: 'webhooks.create',
  summary:
    "Adds a webhook endpoint: the URL (https; the server's address guard refuses loopback, private and metadata addresses) and the events it receives. The answer holds its signing secret (whsec_...), shown this once.",
  input: z.object({ url: urlInput, events: eventList, description: description.optional() }),
  output: endpointOut.extend({ secret: z.string() }),
  permission: 'admin',
  serverOnly: true,
  async handler(input, ctx) {
    const port = portOf(ctx);
    const existing = await port.list(ctx.actor.workspaceId);
    if (existing.length >= MAX_ENDPOINTS) {
      throw new DomainError('RULE_VIOLATION', `A workspace has at most ${MAX_ENDPOINTS} webhook endpoints; delete one first.`, { max: MAX_ENDPOINTS });
    }
    const url = await checkUrl(ctx, input.url);
    const id = ctx.ids.uuid();
    const secret = webhookSecret(port.randomBytes(SECRET_BYTES));
    const at = nowIso(ctx);
    await port.create(ctx.actor.workspaceId, { id, url, description: input.description ?? '', events: input.events, secret, at, by: ctx.actor.memberId });
    const created = await endpointOrNotFound(ctx, id);
    return { ...created, secret };
  },
});

const list = query({
  name: 'webhooks.list',
  summary: "The workspace's webhook endpoints (never their secrets), oldest first, each with its state and waiting deliveries.",
  input: z.object({}),
  output: z.object({ endpoints: z.array(endpointOut) }),
  permission: 'admin',
  serverOnly: true,
  async handler(_input, ctx) {
    return { endpoints: await portOf(ctx).list(ctx.actor.workspaceId) };
  },
});

const update = mutation({
  name: 'webhooks.update',
  summary:
    'Changes an endpoint: URL (checked like at creation), events, description, or enabled. Enabling a disabled endpoint clears the reason and sends what waited for it, in order. dryRun previews.',
  input: z.object({ endpointId: uuid, url: urlInput.optional(), events: eventList.optional(), description: description.optional(), enabled: z.boolean().optional(), dryRun }),
  output: endpointOut,
  permission: 'admin',
  dryRun: true,
  serverOnly: true,
  async handler(input, ctx) {
    const current = await endpointOrNotFound(ctx, input.endpointId);
    if (input.url === undefined && input.events === undefined && input.description === undefined && input.enabled === undefined) {
      throw new DomainError('NO_FIELDS_TO_UPDATE', 'Say what to change: url, events, description or enabled.');
    }
    const url = input.url === undefined ? current.url : await checkUrl(ctx, input.url);
    const at = nowIso(ctx);
    const enabled = input.enabled ?? current.enabled;
    const disabledReason = enabled ? null : current.enabled ? `Disabled by a person on ${at.slice(0, 10)}.` : current.disabledReason;
    const change = {
      url,
      events: input.events ?? current.events,
      description: input.description ?? current.description,
      enabled,
      disabledReason,
      at,
    };
    if (!ctx.dryRun) await portOf(ctx).update(ctx.actor.workspaceId, current.id, change);
    const reEnabled = enabled && !current.enabled;
    return {
      ...current,
      ...change,
      updatedAt: at,
      failingSince: reEnabled ? null : current.failingSince,
    };
  },
});

const deleteOp = mutation({
  name: 'webhooks.delete',
  summary: 'Deletes an endpoint with its waiting deliveries and its delivery log. dryRun says how many deliveries would go.',
  input: z.object({ endpointId: uuid, dryRun }),
  output: z.object({ endpointId: z.string(), deleted: z.boolean(), deliveriesDeleted: z.number().int() }),
  permission: 'admin',
  dryRun: true,
  serverOnly: true,
  async handler(input, ctx) {
    const current = await endpointOrNotFound(ctx, input.endpointId);
    const port = portOf(ctx);
    if (ctx.dryRun) return { endpointId: current.id, deleted: true, deliveriesDeleted: await port.deliveryCount(ctx.actor.workspaceId, current.id) };
    return { endpointId: current.id, deleted: true, deliveriesDeleted: await port.remove(ctx.actor.workspaceId, current.id) };
  },
});

const rotateSecret = mutation({
  name: 'webhooks.rotateSecret',
  summary:
    'Makes a new signing secret (shown this once). For 24 hours deliveries carry two signatures, with the new and the previous secret, so a receiver can switch without losing one; then only the new one signs.',
  input: z.object({ endpointId: uuid }),
  output: z.object({ endpointId: z.string(), secret: z.string(), previousSecretExpiresAt: z.string() }),
  permission: 'admin',
  serverOnly: true,
  async handler(input, ctx) {
    const current = await endpointOrNotFound(ctx, input.endpointId);
    const port = portOf(ctx);
    const secret = webhookSecret(port.randomBytes(SECRET_BYTES));
    const now = ctx.clock.now();
    const previousSecretExpiresAt = new Date(now.getTime() + PREVIOUS_SECRET_VALID_MS).toISOString();
    await port.rotate(ctx.actor.workspaceId, current.id, secret, previousSecretExpiresAt, now.toISOString());
    return { endpointId: current.id, secret, previousSecretExpiresAt };
  },
});

const sendTest = mutation({
  name: 'webhooks.sendTest',
  summary: `Queues a ${TEST_EVENT_TYPE} event for one endpoint, signed like every event, after what already waits for it (at once when nothing does); it shows in the delivery log.`,
  input: z.object({ endpointId: uuid }),
  output: z.object({ endpointId: z.string(), deliveryId: z.string(), eventId: z.string(), type: z.string() }),
  permission: 'admin',
  serverOnly: true,
  async handler(input, ctx) {
    const current = await endpointOrNotFound(ctx, input.endpointId);
    if (!current.enabled) throw new DomainError('ENDPOINT_DISABLED', 'This endpoint is disabled; enable it to send to it.', { endpointId: current.id, disabledReason: current.disabledReason });
    const at = nowIso(ctx);
    const eventId = newEventId(ctx.ids);
    const deliveryId = ctx.ids.uuid();
    const body = eventBody({ type: TEST_EVENT_TYPE, timestamp: at, data: { endpointId: current.id, message: 'A test event: this endpoint receives signed webhooks from Outreach CRM.' } });
    await portOf(ctx).enqueue(ctx.actor.workspaceId, current.id, { id: eventId, type: TEST_EVENT_TYPE, body, deliveryId, at });
    return { endpointId: current.id, deliveryId, eventId, type: TEST_EVENT_TYPE };
  },
});

const deliveriesList = query({
  name: 'webhooks.deliveries.list',
  summary:
    "An endpoint's delivery log, newest first, a page at a time: each event sent (its id is the webhook-id header), its status (pending, succeeded, failed), and every attempt with its request headers, response status, the first bytes of the answer, duration and time.",
  input: z.object({ endpointId: uuid, status: z.enum(['pending', 'succeeded', 'failed']).optional(), cursor, limit: pageLimit }),
  output: z.object({ deliveries: z.array(deliveryOut), nextCursor: z.string().nullable() }),
  permission: 'admin',
  serverOnly: true,
  async handler(input, ctx) {
    await endpointOrNotFound(ctx, input.endpointId);
    return portOf(ctx).deliveries(ctx.actor.workspaceId, { endpointId: input.endpointId, status: input.status, cursor: input.cursor, limit: input.limit ?? DEFAULT_PAGE_SIZE });
  },
});

const deliveriesRedeliver = mutation({
  name: 'webhooks.deliveries.redeliver',
  summary:
    'Sends a delivery again, with the same webhook-id. One still waiting for a retry is sent now (with whatever waits ahead of it for the endpoint, in order), not queued a second time: `waiting` is true and `deliveryId` is that delivery. A finished one (delivered or given up) is queued as a new delivery of the same event after what waits for the endpoint (a receiver that has it already can skip it by its webhook-id).',
  input: z.object({ deliveryId: uuid }),
  output: z.object({ deliveryId: z.string(), redeliveryOf: z.string(), eventId: z.string(), endpointId: z.string(), waiting: z.boolean() }),
  permission: 'admin',
  serverOnly: true,
  async handler(input, ctx) {
    const port = portOf(ctx);
    const d = await port.delivery(ctx.actor.workspaceId, input.deliveryId);
    if (!d) throw notFound('Webhook delivery', input.deliveryId);
    const endpoint = await endpointOrNotFound(ctx, d.endpointId);
    if (!endpoint.enabled) throw new DomainError('ENDPOINT_DISABLED', 'This endpoint is disabled; enable it to send to it.', { endpointId: endpoint.id, disabledReason: endpoint.disabledReason });
    const sent = await port.redeliver(ctx.actor.workspaceId, d.id, ctx.ids.uuid(), nowIso(ctx));
    return { deliveryId: sent.deliveryId, redeliveryOf: d.id, eventId: d.eventId, endpointId: d.endpointId, waiting: sent.waiting };
  },
});

export const ops = opsByName(create, list, update, deleteOp, rotateSecret, sendTest, deliveriesList, deliveriesRedeliver);
