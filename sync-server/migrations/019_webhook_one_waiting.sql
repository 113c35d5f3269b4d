-- At most one waiting delivery of an event per endpoint (webhooks.deliveries.redeliver): "Send
-- again" on a delivery still waiting for its retry makes that one due now instead of queueing a copy
-- behind it, so a receiver never gets the same webhook-id twice from the queue (the copy used to
-- follow once the original finally succeeded). Copies queued that way before this migration are
-- closed as failed, unsent; the original they copied still goes.
UPDATE webhook_deliveries d SET status = 'failed', finished_at = now(), next_attempt_at = NULL
 WHERE d.status = 'pending'
   AND EXISTS (SELECT 1 FROM webhook_deliveries e
                WHERE e.endpoint_id = d.endpoint_id AND e.event_id = d.event_id AND e.status = 'pending' AND e.seq < d.seq);

CREATE UNIQUE INDEX webhook_deliveries_one_waiting ON webhook_deliveries (endpoint_id, event_id) WHERE status = 'pending';
