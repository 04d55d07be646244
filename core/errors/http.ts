/**
 * The only place errors are serialized (DESIGN rule 3). Every response that is not a success is
 * `{code, message, details?}` or the spec's `HttpApiDecodeError` body; a 500 says only
 * `internal_error` and the cause is logged with the request id.
 */
import type { FastifyError } from 'fastify';
import type { App } from '../registry/index.ts';
import { AppError, DecodeError, decodeErrorBody, decodeIssuesFromAjv, type AjvLikeError } from './index.ts';

const FASTIFY_CODES: Record<string, { status: number; code: string; message?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', message: 'The request body is too large.' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type', message: 'The request content type is not supported; send application/json.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_request', message: 'The JSON body is empty.' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_request', message: 'The body is not valid JSON.' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'invalid_request', message: 'Content-Length does not match the body.' },
};

const STATUS_CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'authentication_required',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
  503: 'service_unavailable',
};

export function installErrorHandling(app: App): void {
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ code: 'not_found', message: `Route ${request.method} ${request.url.split('?')[0]} was not found.` });
  });

  app.setErrorHandler((err: FastifyError & { validationContext?: string }, request, reply) => {
    if (err instanceof AppError) {
      if (err.headers) reply.headers(err.headers);
      return reply.code(err.statusCode).send(err.toJSON());
    }
    if (err instanceof DecodeError) return reply.code(400).send(err.toJSON());
    if (err.validation) {
      const issues = decodeIssuesFromAjv(err.validation as unknown as AjvLikeError[]);
      return reply.code(400).send(decodeErrorBody(issues, err.validationContext));
    }
    const known = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (known) return reply.code(known.status).send({ code: known.code, message: known.message ?? err.message });
    if (err instanceof SyntaxError && (err as { statusCode?: number }).statusCode === 400) {
      return reply.code(400).send({ code: 'invalid_request', message: 'The body is not valid JSON.' });
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.code(status).send({ code: STATUS_CODES[status] ?? 'invalid_request', message: err.message });
    }
    if ((err as { code?: string }).code === '23505') {
      return reply.code(409).send({ code: 'conflict', message: 'The resource already exists.' });
    }
    request.log.error({ err, reqId: request.id }, 'unhandled error');
    return reply.code(500).send({ code: 'internal_error', message: `An internal error occurred (request id ${request.id}).` });
  });
}
