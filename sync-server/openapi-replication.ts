/** The replication routes of the OpenAPI document (sync-server/replication.ts): their bodies and
 * answers generated from the wire schemas the server parses with and the desktop checks with
 * (shared/wire/replication.ts), the same way openapi.ts generates the operations'. */
import { REPLICATED_COLLECTIONS } from '../shared/model/index.ts';
import {
  collectionsListSchema,
  DEFAULT_PULL_LIMIT,
  pullLimitSchema,
  pullPageSchema,
  pushAnswerSchema,
  pushBodySchema,
  refusalsListSchema,
  streamPageSchema,
} from '../shared/wire/replication.ts';
import { errorRef, toSchema } from './openapi.ts';
import type { Extra } from './openapi.ts';

export function replicationOpenApi(): Required<Extra> {
  const json = (schema: unknown) => ({ 'application/json': { schema } });
  const err = (description: string) => ({ description, content: json(errorRef) });
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  const collection = { name: 'collection', in: 'path', required: true, schema: { type: 'string', enum: REPLICATED_COLLECTIONS } };
  const version = {
    name: 'X-Schema-Version',
    in: 'header',
    required: false,
    description: "The client's schema version of the collection; an older one is answered 426 CLIENT_OUTDATED (update the app). Also accepted as the query parameter schemaVersion.",
    schema: { type: 'integer' },
  };
  const common = { security: [{ bearer: [] }], tags: ['replication'] };
  const errors = { '400': err('Malformed request.'), '401': err('Missing, unknown or revoked key.'), '404': err('Not a replicated collection.'), '426': err('The client schema is outdated (CLIENT_OUTDATED).'), '429': err('Rate limited.'), '503': err('The database cannot be reached right now (UNAVAILABLE); retry after Retry-After seconds.') };
  return {
    schemas: {
      ReplicationCollections: toSchema(collectionsListSchema, 'output'),
      ReplicationRefusals: toSchema(refusalsListSchema, 'output'),
      ReplicationPullPage: toSchema(pullPageSchema, 'output'),
      ReplicationPushBody: toSchema(pushBodySchema, 'input'),
      ReplicationPushAnswer: toSchema(pushAnswerSchema, 'output'),
      ReplicationStreamPage: toSchema(streamPageSchema, 'output'),
    },
    paths: {
      '/replication/collections': {
        get: {
          ...common,
          operationId: 'replication.collections',
          summary: 'The replicated collections with their schema version, RxDB JSON schema, and the field limits every pushed document must also keep.',
          responses: { '200': { description: 'Collections.', content: json(ref('ReplicationCollections')) }, '401': errors['401'] },
        },
      },
      '/replication/refusals': {
        get: {
          ...common,
          operationId: 'replication.refusals',
          summary: "Why the server refused documents the caller pushed (the caller's own refusals), after `since`.",
          parameters: [{ name: 'since', in: 'query', required: false, schema: { type: 'string', format: 'date-time' } }],
          responses: { '200': { description: 'Refusals, oldest first.', content: json(ref('ReplicationRefusals')) }, '400': errors['400'], '401': errors['401'] },
        },
      },
      '/replication/{collection}/pull': {
        get: {
          ...common,
          operationId: 'replication.pull',
          summary: 'Documents changed after the checkpoint, in server order; exactly `limit` unless caught up; with count=true also how many remain.',
          parameters: [
            collection,
            version,
            { name: 'checkpoint', in: 'query', required: false, description: 'The checkpoint of the previous page, as JSON: {"seq": n}. Omit on the first pull.', schema: { type: 'string' } },
            { name: 'limit', in: 'query', required: false, schema: { ...toSchema(pullLimitSchema, 'input'), default: DEFAULT_PULL_LIMIT } },
            {
              name: 'count',
              in: 'query',
              required: false,
              description:
                "true: the answer also carries `remaining`, how many of the workspace's documents of the collection changed after the checkpoint (this page's included), read with the page. A client asks it once when a pull starts (from no checkpoint or a resumed one), not on every page: it walks every row still to be pulled. Anything but true or false is answered 400.",
              schema: { type: 'string', enum: ['true', 'false'], default: 'false' },
            },
          ],
          responses: { '200': { description: 'A page.', content: json(ref('ReplicationPullPage')) }, ...errors },
        },
      },
      '/replication/{collection}/push': {
        post: {
          ...common,
          operationId: 'replication.push',
          summary: 'Writes documents in one transaction. Returns the conflicts: the server state of each row whose assumed state was outdated or that the rules refused (refusals are recorded for the caller). A row breaking the schema refuses the whole batch (400).',
          parameters: [collection, version],
          requestBody: { required: true, content: json(ref('ReplicationPushBody')) },
          responses: { '200': { description: 'Conflicting server documents.', content: json(ref('ReplicationPushAnswer')) }, ...errors, '413': err('The body is too large.') },
        },
      },
      '/replication/{collection}/stream': {
        get: {
          ...common,
          operationId: 'replication.stream',
          summary: 'Server-Sent Events: `data: RESYNC` on connect, then `data: {"documents": [...], "checkpoint": {"seq": n}}` (ReplicationStreamPage) for every change; `: ping` comments keep it alive.',
          parameters: [collection, version],
          responses: { '200': { description: 'An event stream; each event\'s data is RESYNC or a ReplicationStreamPage.', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...errors },
        },
      },
    },
  };
}
