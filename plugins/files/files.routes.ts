import { Readable } from 'node:stream';
import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../../core/registry/index.ts';
import { DecodeError, InvalidRequest, PayloadTooLarge } from '../../core/errors/index.ts';
import {
  CompleteBody,
  ContentQuery,
  CreateFileBody,
  CreateFileResponse,
  FileIdParams,
  FileSchema,
  ListQuery,
  PartsBody,
  PartsResponse,
  UploadQuery,
} from './files.schemas.ts';
import { fileView, type CreateBody, type FilesService } from './files.service.ts';

const tags = ['files'];
const ws = (request: FastifyRequest) => request.workspace!;

function createdBy(request: FastifyRequest): string | null {
  const p = request.principal;
  if (!p) return null;
  return p.kind === 'session' ? p.user.id : `apiKey:${p.keyId}`;
}

/** `attachment; filename="ascii"; filename*=UTF-8''percent-encoded` (RFC 6266). */
export function contentDisposition(type: 'attachment' | 'inline', name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${type}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

export function filesRoutes(app: App, service: FilesService): void {
  app.get(
    '/files',
    {
      config: { permission: 'files.read' },
      schema: {
        tags,
        summary: 'List files (bare array, newest first)',
        description: 'Filters: `directory` (exact; empty string = no directory), `status`, `source`; paging with `limit` (1..1000, default 1000) and `offset`. Deleted files and expired uploads are not listed.',
        querystring: ListQuery,
        response: { 200: Type.Array(FileSchema) },
      },
    },
    async (request) => (await service.list(ws(request).id, request.query)).map(fileView),
  );

  app.post(
    '/files',
    {
      config: { permission: 'files.write' },
      schema: {
        tags,
        summary: 'Create a file (document, direct, multipart or externalUrl)',
        description: [
          'Returns `201 {file, upload}`; `upload` is a direct or multipart descriptor, or null (document, externalUrl).',
          'Names: a name already used at the same `path` (`directory/name`) by a live file is kept unique by adding ` (1)`, ` (2)`, ... before the extension; `originalName` keeps the name given.',
          '`checksumSha256`, when given, is verified once the bytes are in: a mismatch makes the file `failed` with an errorMessage (and its bytes are discarded).',
          'Upload URLs and open uploads expire (`upload.expiresAt`); an upload not finished by then is aborted and the file is deleted.',
        ].join('\n\n'),
        body: CreateFileBody,
        response: { 201: CreateFileResponse },
      },
    },
    async (request, reply) => {
      const { file, upload } = await service.create(ws(request).id, createdBy(request), request.body as CreateBody);
      return reply.code(201).send({ file: fileView(file), upload });
    },
  );

  app.get(
    '/files/:fileId',
    { config: { permission: 'files.read' }, schema: { tags, summary: 'One file', params: FileIdParams, response: { 200: FileSchema } } },
    async (request) => fileView(await service.get(ws(request).id, request.params.fileId)),
  );

  app.get(
    '/files/:fileId/content',
    {
      config: { permission: 'files.read' },
      schema: {
        tags,
        summary: 'Read the content (streamed)',
        description:
          'Streams the bytes with the file\'s Content-Type (application/octet-stream when unknown), Content-Length, ETag and Content-Disposition (`?disposition=attachment` by default, or `inline`). A single `Range: bytes=a-b` (or `a-`, `-n`) answers 206 with Content-Range; an unsatisfiable range answers 416; several ranges get the whole body. A file that is not `uploaded` answers 409.',
        params: FileIdParams,
        querystring: ContentQuery,
      },
    },
    async (request, reply) => {
      const { row, body, size, total, range } = await service.content(ws(request).id, request.params.fileId, request.headers.range);
      const type = row.content_type ?? 'application/octet-stream';
      reply
        .header('content-type', /^text\//.test(type) && !/charset=/i.test(type) ? `${type}; charset=utf-8` : type)
        .header('content-length', String(size))
        .header('accept-ranges', 'bytes')
        .header('content-disposition', contentDisposition(request.query.disposition, row.name))
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'private, no-cache');
      if (row.etag) reply.header('etag', `"${row.etag}"`);
      if (range) reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${total}`);
      return reply.send(body);
    },
  );

  app.delete(
    '/files/:fileId',
    { config: { permission: 'files.write' }, schema: { tags, summary: 'Delete a file and its stored bytes (aborts an open upload)', params: FileIdParams } },
    async (request, reply) => {
      await service.delete(ws(request).id, request.params.fileId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/files/:fileId/parts',
    {
      config: { permission: 'files.write' },
      schema: {
        tags,
        summary: 'Presign more multipart part URLs',
        description: 'Body `{partNumbers: [1..partCount]}` (at most 1000 per call); answers `{parts: [{partNumber, method, url, headers, expiresAt}]}`. 409 when the upload is not open.',
        params: FileIdParams,
        body: PartsBody,
        response: { 200: PartsResponse },
      },
    },
    async (request) => ({ parts: await service.parts(ws(request).id, request.params.fileId, request.body.partNumbers) }),
  );

  app.post(
    '/files/:fileId/complete',
    {
      config: { permission: 'files.write' },
      schema: {
        tags,
        summary: 'Complete a multipart upload',
        description:
          'Body `{parts: [{partNumber, etag}]}` with every part 1..partCount once and the ETag each part PUT answered. Answers `{file}` (`uploaded`). A missing, extra or duplicate part, or an ETag that does not match the uploaded part, answers 400 and writes nothing: the upload stays open and can be completed with the right list. A size or checksum mismatch answers 400 and the file becomes `failed`.',
        params: FileIdParams,
        body: CompleteBody,
        response: { 200: Type.Object({ file: FileSchema }) },
      },
    },
    async (request) => ({ file: fileView(await service.complete(ws(request).id, request.params.fileId, request.body.parts)) }),
  );
}

async function readText(body: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    n += (c as Buffer).length;
    if (n > limit) throw new PayloadTooLarge(`A document holds at most ${limit} bytes.`);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Routes whose body is raw bytes, streamed (never buffered): the signed upload target of the
 * local backend and PUT content. Registered in their own encapsulated context whose only content
 * type parser hands the request stream to the handler.
 */
export function rawRoutes(app: App, service: FilesService, maxDocumentBytes: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.put(
    '/files/:fileId/upload',
    {
      config: { auth: 'public' },
      schema: {
        tags,
        summary: 'Signed upload target (local storage): one PUT of the whole file, or of one multipart part',
        description:
          'The URL comes from a direct or multipart descriptor; its `expires` and `sig` authorise it (403 `forbidden` when wrong or expired). The body is streamed to storage. A direct upload answers 200 with the File (`uploaded`, or 400 when the size or checksum does not match: the file is then `failed`); 409 once the URL was used. A part answers 200 `{partNumber, etag}` with an `ETag` header.',
        params: FileIdParams,
        querystring: UploadQuery,
      },
    },
    async (request, reply) => {
      const { fileId } = request.params;
      const { expires, sig, partNumber } = request.query;
      // No body at all (Content-Length: 0) reaches no parser: treat it as empty content.
      const body = (request.body as Readable | undefined) ?? Readable.from([]);
      try {
        service.verifyUploadSignature(fileId, partNumber, expires, sig);
      } catch (err) {
        body.resume();
        throw err;
      }
      if (partNumber !== undefined) {
        const etag = await service.receivePart(fileId, partNumber, body);
        return reply.header('etag', `"${etag}"`).send({ partNumber, etag: `"${etag}"` });
      }
      const len = request.headers['content-length'];
      const row = await service.receiveDirect(fileId, body, len !== undefined ? Number(len) : undefined);
      if (row.status === 'failed') throw new InvalidRequest(row.error_message ?? 'The upload failed.', { status: 'failed', fileId });
      return reply.send(fileView(row));
    },
  );

  app.put(
    '/files/:fileId/content',
    {
      config: { permission: 'files.write' },
      schema: {
        tags,
        summary: 'Replace the content',
        description:
          'Documents: the body is the new text (`text/markdown` or `text/plain` sets the contentType), or JSON `{content, contentType?}`. Other files (`uploaded` or `failed`): the body is the new bytes, streamed; its Content-Type becomes the file\'s. Answers the File (`uploaded`, new size, checksum and etag). 409 while an upload is in progress.',
        params: FileIdParams,
        response: { 200: FileSchema },
      },
    },
    async (request) => {
      const body = request.body as Readable | undefined;
      const type = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
      const row = await service.get(ws(request).id, request.params.fileId);
      if (row.source === 'document') {
        const text = body ? await readText(body, maxDocumentBytes * 2 + 1024) : '';
        let content = text;
        let contentType: string | undefined = type === 'text/markdown' || type === 'text/plain' ? type : undefined;
        if (type === 'application/json') {
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            throw new DecodeError([{ _tag: 'Type', path: [], message: 'The body is not valid JSON.' }]);
          }
          const p = parsed as { content?: unknown; contentType?: unknown };
          if (typeof p !== 'object' || p === null || typeof p.content !== 'string') throw new DecodeError([{ _tag: 'Missing', path: ['content'], message: 'is missing' }]);
          const extra = Object.keys(p).filter((k) => k !== 'content' && k !== 'contentType');
          if (extra.length) throw new DecodeError(extra.map((k) => ({ _tag: 'Unexpected' as const, path: [k], message: 'is not an allowed property' })));
          if (p.contentType !== undefined && p.contentType !== 'text/markdown' && p.contentType !== 'text/plain') {
            throw new DecodeError([{ _tag: 'Type', path: ['contentType'], message: 'must be one of: "text/markdown", "text/plain"' }]);
          }
          content = p.content;
          contentType = p.contentType as string | undefined;
        }
        return fileView(await service.replaceDocument(ws(request).id, row.id, content, contentType));
      }
      return fileView(await service.replaceContent(ws(request).id, row.id, body ?? Readable.from([]), type || undefined));
    },
  );
}
