/**
 * What the webhook operations (shared/ops/webhooks.ts) need from the host that keeps endpoints: the
 * sync server, in tables of its own (sync-server/webhooks/store.ts), never in a replicated document,
 * since an endpoint holds a signing secret and desktops must never see one. A desktop has no such
 * port: it forwards the operations to its sync server.
 */
import type { WebhookEventType } from './events.ts';

/** `whsec_` and the base64 of this many random bytes (Standard Webhooks' symmetric secret). */
export const SECRET_BYTES = 24;

/** How long a rotated-out secret still signs deliveries (beside the new one). */
export const PREVIOUS_SECRET_VALID_MS = 24 * 3_600_000;

/** Most endpoints one workspace may have. */
export const MAX_ENDPOINTS = 20;

export type WebhookEndpointView = {
  id: string;
  url: string;
  description: string;
  events: WebhookEventType[];
  enabled: boolean;
  /** Why it was disabled: by a person, after failing for days, or because it answered 410 Gone. */
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
  /** When the current secret was made (at creation or the last rotation). */
  secretCreatedAt: string;
  /** Until when the previous secret still signs deliveries too; null when there is none. */
  previousSecretExpiresAt: string | null;
  /** Since when every attempt failed; null after a success. */
  failingSince: string | null;
  lastSuccessAt: string | null;
  /** Deliveries waiting (due now or later). */
  pendingDeliveries: number;
};

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export type DeliveryAttemptView = {
  attempt: number;
  at: string;
  durationMs: number;
  /** The request's headers as sent (webhook-id, webhook-timestamp, webhook-signature, ...). */
  requestHeaders: Record<string, string>;
  /** null when no answer came (timeout, refused connection, address refused). */
  responseStatus: number | null;
  /** The first bytes of the answer's body. */
  responseExcerpt: string;
  error: string | null;
};

export type DeliveryView = {
  id: string;
  endpointId: string;
  /** The event's id: the webhook-id header, the same for every attempt and redelivery. */
  eventId: string;
  type: string;
  status: DeliveryStatus;
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  finishedAt: string | null;
  /** The delivery this one sends again (webhooks.deliveries.redeliver); null otherwise. */
  redeliveryOf: string | null;
  /** The request body (the event), exactly as signed and sent. */
  body: string;
  attemptLog: DeliveryAttemptView[];
};

export type NewEndpoint = {
  id: string;
  url: string;
  description: string;
  events: WebhookEventType[];
  secret: string;
  at: string;
  by: string;
};

export type EndpointChange = {
  url?: string;
  description?: string;
  events?: WebhookEventType[];
  enabled?: boolean;
  disabledReason?: string | null;
  at: string;
};

export type WebhookPort = {
  /** Plain http:// endpoints are allowed (the operator's WEBHOOKS_ALLOW_HTTP); otherwise https only. */
  readonly allowHttp: boolean;
  /** Random bytes for secrets (crypto-strength; handlers have no crypto of their own). */
  randomBytes(length: number): Uint8Array;
  /** The address guard's sentence when the server would not connect to this URL's host, else null. */
  urlRefusal(url: URL): Promise<string | null>;
  list(workspaceId: string): Promise<WebhookEndpointView[]>;
  get(workspaceId: string, endpointId: string): Promise<WebhookEndpointView | null>;
  create(workspaceId: string, endpoint: NewEndpoint): Promise<void>;
  update(workspaceId: string, endpointId: string, change: EndpointChange): Promise<void>;
  /** How many deliveries (waiting and logged) the endpoint has. */
  deliveryCount(workspaceId: string, endpointId: string): Promise<number>;
  /** Deletes the endpoint with its deliveries and their log; returns how many deliveries went. */
  remove(workspaceId: string, endpointId: string): Promise<number>;
  /** The new secret signs from now on; the current one keeps signing until `previousUntil`. */
  rotate(workspaceId: string, endpointId: string, secret: string, previousUntil: string, at: string): Promise<void>;
  /** Queues one event for one endpoint (webhooks.sendTest); returns the delivery's id. */
  enqueue(workspaceId: string, endpointId: string, event: { id: string; type: string; body: string; deliveryId: string; at: string }): Promise<void>;
  deliveries(workspaceId: string, q: { endpointId: string; status?: DeliveryStatus | undefined; cursor?: string | null | undefined; limit: number }): Promise<{ deliveries: DeliveryView[]; nextCursor: string | null }>;
  delivery(workspaceId: string, deliveryId: string): Promise<DeliveryView | null>;
  /** Sends the delivery's event again: a delivery of it still waiting for the endpoint (for a retry)
   * is made due now, with those ahead of it (`waiting: true`, its id); otherwise a new delivery with
   * the same event id, `newDeliveryId`, is queued after what waits. */
  redeliver(workspaceId: string, deliveryId: string, newDeliveryId: string, at: string): Promise<{ deliveryId: string; waiting: boolean }>;
};
