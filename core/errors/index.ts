/**
 * Typed errors. Handlers throw; only core serializes (DESIGN rule 3).
 *
 * Every error class is made by `defineError(code, status)` so the wire `code` and the HTTP status
 * live in one table. The body is always `{code, message, details?}`; decode failures use the
 * spec's `HttpApiDecodeError` body instead (see `decodeError`).
 */

export type ErrorDetails = Record<string, string>;

export class AppError extends Error {
  readonly code: string;
  readonly statusCode: number;
  readonly details?: ErrorDetails;
  /** Extra response headers (for example `retry-after`). */
  readonly headers?: Record<string, string>;

  constructor(code: string, statusCode: number, message: string, details?: ErrorDetails, headers?: Record<string, string>) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.statusCode = statusCode;
    this.details = details;
    this.headers = headers;
  }

  toJSON(): { code: string; message: string; details?: ErrorDetails } {
    return this.details ? { code: this.code, message: this.message, details: this.details } : { code: this.code, message: this.message };
  }
}

export interface ErrorClass {
  new (message?: string, details?: ErrorDetails, headers?: Record<string, string>): AppError;
  readonly code: string;
  readonly statusCode: number;
}

/** The one factory for error classes: a wire code, a status and a default message. */
export function defineError(code: string, statusCode: number, defaultMessage: string): ErrorClass {
  const cls = class extends AppError {
    static readonly code = code;
    static readonly statusCode = statusCode;
    constructor(message?: string, details?: ErrorDetails, headers?: Record<string, string>) {
      super(code, statusCode, message ?? defaultMessage, details, headers);
    }
  };
  Object.defineProperty(cls, 'name', { value: `${code}_error` });
  return cls;
}

export const InvalidRequest = defineError('invalid_request', 400, 'The request is invalid.');
export const WorkspaceContextRequired = defineError(
  'workspace_context_required',
  400,
  'This request needs a workspace: send the x-workspace-handle or x-workspace-id header.',
);
export const AuthenticationRequired = defineError('authentication_required', 401, 'Authentication is required.');
export const InvalidApiKey = defineError('invalid_api_key', 401, 'The API key is malformed, unknown, revoked or expired.');
export const SessionRequired = defineError('session_required', 401, 'This operation needs a signed-in session; API keys are not accepted.');
export const InvalidCredentials = defineError('invalid_credentials', 401, 'The email or password is wrong.');
export const InsufficientPermissions = defineError('insufficient_permissions', 403, 'The credential lacks the permission this operation needs.');
export const Forbidden = defineError('forbidden', 403, 'This request is not allowed.');
export const NotFound = defineError('not_found', 404, 'Not found.');
export const Conflict = defineError('conflict', 409, 'The resource already exists.');
export const PayloadTooLarge = defineError('payload_too_large', 413, 'The request body is too large.');
export const UnsupportedMediaType = defineError('unsupported_media_type', 415, 'The request content type is not supported.');
export const TooManyRequests = defineError('too_many_requests', 429, 'Too many requests; try again later.');
export const InternalError = defineError('internal_error', 500, 'An internal error occurred.');
export const ServiceUnavailable = defineError('service_unavailable', 503, 'The service is not ready.');

export function insufficientPermissions(requiredPermission: string): AppError {
  return new InsufficientPermissions(`This operation needs the '${requiredPermission}' permission.`, { requiredPermission });
}

export function notFound(what: string): AppError {
  return new NotFound(`${what} was not found.`);
}

// ---------------------------------------------------------------------------------------------
// Decode errors (the spec's HttpApiDecodeError body)

export type DecodeIssueTag =
  | 'Pointer'
  | 'Unexpected'
  | 'Missing'
  | 'Composite'
  | 'Refinement'
  | 'Transformation'
  | 'Type'
  | 'Forbidden';

export interface DecodeIssue {
  _tag: DecodeIssueTag;
  path: (string | number)[];
  message: string;
}

export interface DecodeErrorBody {
  _tag: 'HttpApiDecodeError';
  message: string;
  issues: DecodeIssue[];
}

/** Thrown by handlers that validate beyond the route schema, serialized as a decode error. */
export class DecodeError extends Error {
  readonly statusCode = 400;
  readonly issues: DecodeIssue[];
  constructor(issues: DecodeIssue[], message?: string) {
    super(message ?? issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; '));
    this.issues = issues;
  }
  toJSON(): DecodeErrorBody {
    return { _tag: 'HttpApiDecodeError', message: this.message, issues: this.issues };
  }
}

/** The subset of an ajv error object we read. */
export interface AjvLikeError {
  keyword: string;
  instancePath: string;
  schemaPath?: string;
  params: Record<string, unknown>;
  message?: string;
}

const KEYWORD_TAGS: Record<string, DecodeIssueTag> = {
  required: 'Missing',
  additionalProperties: 'Unexpected',
  unevaluatedProperties: 'Unexpected',
  type: 'Type',
  const: 'Type',
  enum: 'Type',
  anyOf: 'Composite',
  oneOf: 'Composite',
  allOf: 'Composite',
  not: 'Forbidden',
};

function pointerToPath(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((seg) => (/^(0|[1-9]\d*)$/.test(seg) ? Number(seg) : seg));
}

/** Maps ajv validation errors to decode issues (the spec's `_tag` enum, `path` as an array). */
export function decodeIssuesFromAjv(all: AjvLikeError[]): DecodeIssue[] {
  // A failed union reports each branch's error and then the union itself: fold the branches into
  // one issue on the union ("must be one of" when every branch is a literal).
  const unions = all.filter((e) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && e.schemaPath);
  const branchOf = (e: AjvLikeError) => unions.find((u) => e !== u && e.instancePath === u.instancePath && e.schemaPath?.startsWith(u.schemaPath!.replace(/\/(anyOf|oneOf)$/, '/$1/')));
  const literals = new Map<AjvLikeError, unknown[]>();
  const errors: AjvLikeError[] = [];
  for (const e of all) {
    const u = branchOf(e);
    if (!u) {
      errors.push(e);
      continue;
    }
    const list = literals.get(u) ?? [];
    list.push(e.keyword === 'const' ? e.params.allowedValue : undefined);
    literals.set(u, list);
  }
  for (const [u, values] of literals) {
    if (values.length && values.every((v) => v !== undefined)) {
      u.keyword = 'enum';
      u.params = { allowedValues: values };
    }
  }
  const issues: DecodeIssue[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    const path = pointerToPath(e.instancePath);
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      path.push(String(e.params.missingProperty));
      message = 'is missing';
    } else if (e.keyword === 'additionalProperties') {
      path.push(String(e.params.additionalProperty));
      message = 'is not an allowed property';
    } else if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues)) {
      message = `must be one of: ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    }
    const tag = KEYWORD_TAGS[e.keyword] ?? 'Refinement';
    const key = `${tag}:${JSON.stringify(path)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push({ _tag: tag, path, message });
  }
  return issues;
}

export function decodeErrorBody(issues: DecodeIssue[], part?: string): DecodeErrorBody {
  const where = part ? `${part} ` : '';
  const summary = issues
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'} ${i.message}`)
    .join('; ');
  return { _tag: 'HttpApiDecodeError', message: `Invalid ${where}: ${summary}`.replace(' :', ':'), issues };
}
