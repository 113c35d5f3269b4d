/** One error type for every foreseeable refusal; transports map `code` to a status. */

export const ERROR_STATUS = {
  INVALID_INPUT: 400,
  UNAUTHENTICATED: 401,
  NOT_AUTHOR: 403,
  NOT_CREATOR: 403,
  PERMISSION_DENIED: 403,
  SUBSCRIPTION_INACTIVE: 403,
  NOT_FOUND: 404,
  UNKNOWN_OPERATION: 404,
  METHOD_NOT_ALLOWED: 405,
  CAMPAIGN_NOT_PAUSED: 409,
  TASK_NOT_OPEN: 409,
  TASK_ALREADY_OPEN: 409,
  /** A disabled webhook endpoint cannot be sent to (webhooks.sendTest, deliveries.redeliver): enable it first. */
  ENDPOINT_DISABLED: 409,
  CONFLICT: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  /** Another lead already has this email or social URL (one person is one lead per workspace). */
  DUPLICATE_LEAD: 409,
  CLOSE_REASON_REQUIRED: 422,
  WAKE_DATE_REQUIRED: 422,
  INVALID_SCHEDULE: 422,
  LAST_SENDER: 422,
  LAST_STEP_OF_BRANCH: 422,
  UNKNOWN_MERGE_FIELD: 422,
  STEP_INVALID: 422,
  COLUMN_IN_USE: 422,
  READINESS_FAILED: 422,
  NO_FIELDS_TO_UPDATE: 422,
  RULE_VIOLATION: 422,
  /** A webhook URL the server will not call: not https, or an address of its own network. */
  URL_NOT_ALLOWED: 422,
  SERVER_ONLY: 422,
  /** A new email sender could not log in (SMTP or IMAP): it is not created; details.lines say why. */
  SENDER_CHECK_FAILED: 422,
  CLIENT_OUTDATED: 426,
  RATE_LIMITED: 429,
  PAYLOAD_TOO_LARGE: 413,
  CHANNEL_ERROR: 502,
  /** The server cannot reach its database for now (a restart, a failover): retry after Retry-After. */
  UNAVAILABLE: 503,
  INTERNAL: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorDetails = Record<string, unknown>;

export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toJSON(): ErrorBody {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export type ErrorBody = { error: { code: ErrorCode; message: string; details: ErrorDetails } };

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;

/** Not found in this workspace: ids of other workspaces get the same answer. */
export const notFound = (what: string, id: string): DomainError =>
  new DomainError('NOT_FOUND', `${what} ${id} was not found in this workspace.`, { what, id });
