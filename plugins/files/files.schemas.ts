import Type from 'typebox';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Timestamp = Type.String({ format: 'date-time' });
const NonEmptyString = Type.String({ minLength: 1 });
const Metadata = Type.Record(Type.String({ minLength: 1, maxLength: 128 }), Type.String({ maxLength: 2048 }), {
  description: 'A map of string to string (at most 64 entries).',
  maxProperties: 64,
});
const Sha256 = Type.String({ pattern: '^[A-Fa-f0-9]{64}$', description: 'SHA-256 of the content, hex. When given it is verified: a mismatch makes the file `failed` with an errorMessage.' });
const Directory = Type.String({
  maxLength: 1024,
  description: "Folder-like prefix, segments separated by `/` (no `.`, `..` or empty segments; leading/trailing `/` ignored; '' means none). `path` is `directory/name`.",
});
const Name = Type.String({ minLength: 1, maxLength: 255, description: 'File name without `/` or control characters.' });
const ContentType = Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(\\s*;.*)?$' });

export const FileSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    originalName: Type.String(),
    directory: Nullable(Type.String()),
    path: Type.String(),
    contentType: Nullable(Type.String()),
    extension: Nullable(Type.String()),
    sizeBytes: Type.Number({ minimum: 0 }),
    checksumSha256: Nullable(Type.String()),
    metadata: Nullable(Type.Record(Type.String(), Type.String())),
    source: Type.Union([Type.Literal('document'), Type.Literal('direct'), Type.Literal('multipart'), Type.Literal('externalUrl')]),
    status: Type.Union([Type.Literal('pending_upload'), Type.Literal('uploading'), Type.Literal('importing'), Type.Literal('uploaded'), Type.Literal('failed')], {
      description:
        'document: uploaded at once. direct: pending_upload, uploading while the server receives the PUT (local storage), then uploaded or failed. multipart: uploading until POST complete, then uploaded (or failed on a size/checksum mismatch). externalUrl: importing, then uploaded or failed. An upload not finished before its expiry is aborted and the file deleted.',
    }),
    externalUrl: Nullable(Type.String()),
    etag: Nullable(Type.String()),
    errorMessage: Nullable(Type.String()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    completedAt: Nullable(Timestamp),
  },

);

const PartRequest = Type.Object({
  partNumber: Type.Integer({ minimum: 1 }),
  method: Type.Literal('PUT'),
  url: Type.String(),
  headers: Type.Record(Type.String(), Type.String()),
  expiresAt: Timestamp,
});

export const DirectDescriptor = Type.Object(
  {
    type: Type.Literal('direct'),
    method: Type.Literal('PUT'),
    url: Type.String({ description: 'Send the bytes as the body of one PUT to this URL (no credentials needed; it is signed and expires).' }),
    headers: Type.Record(Type.String(), Type.String(), { description: 'Headers to send with the PUT.' }),
    expiresAt: Timestamp,
  },
  {
    description:
      'Direct descriptor: one PUT of the whole body to `url` before `expiresAt` makes the file `uploaded` with no further call. Local storage: the URL is the server\'s own signed upload target, which answers with the File once stored. S3: the URL is a presigned S3 PUT; nothing calls back, so the server completes the file (HeadObject, then size and SHA-256 from the object) at the next read of it (GET /files/{id}, its content, or the list) or at the next sweep (`sweepIntervalMs`), whichever comes first.',
  },
);

export const MultipartDescriptor = Type.Object(
  {
    type: Type.Literal('multipart'),
    uploadId: Type.String(),
    partSizeBytes: Type.Integer(),
    partCount: Type.Integer({ description: 'Parts 1..partCount, each partSizeBytes except the last.' }),
    parts: Type.Array(PartRequest, { description: 'URLs for the first parts (at most 100); get the others with POST /files/{id}/parts.' }),
    expiresAt: Timestamp,
  },
  {
    description:
      'Multipart descriptor: PUT each part to its URL, keep the `ETag` response header of each, then call POST /files/{id}/complete with `{parts: [{partNumber, etag}]}`. Uploads not completed before `expiresAt` are aborted and the file disappears.',
  },
);

const Common = {
  directory: Type.Optional(Directory),
  contentType: Type.Optional(ContentType),
  checksumSha256: Type.Optional(Sha256),
  metadata: Type.Optional(Metadata),
};

export const CreateFileBody = Type.Union(
  [
    Type.Object(
      { mode: Type.Literal('document'), name: Name, content: Type.String({ description: 'Markdown or plain text, stored in the database.' }), ...Common },
      { additionalProperties: false, description: 'document: text kept in the database; `uploaded` at once. contentType defaults to text/markdown for .md names, else text/plain.' },
    ),
    Type.Object(
      { mode: Type.Literal('direct'), name: Name, sizeBytes: Type.Optional(Type.Integer({ minimum: 0, description: 'When given, the upload must have exactly this size.' })), ...Common },
      { additionalProperties: false, description: 'direct: `pending_upload` with a direct descriptor (one PUT).' },
    ),
    Type.Object(
      {
        mode: Type.Literal('multipart'),
        name: Name,
        sizeBytes: Type.Integer({ minimum: 1 }),
        partSizeBytes: Type.Optional(Type.Integer({ minimum: 1 })),
        ...Common,
      },
      { additionalProperties: false, description: 'multipart: `uploading` with a multipart descriptor; POST /files/{id}/complete is required.' },
    ),
    Type.Object(
      { mode: Type.Literal('externalUrl'), externalUrl: NonEmptyString, name: Type.Optional(Name), ...Common },
      {
        additionalProperties: false,
        description:
          'externalUrl: `importing`; the server fetches the http(s) URL through the SSRF guard, then the file is `uploaded`, or `failed` with errorMessage (refused address, HTTP error, size or time limit). A URL that is not http(s) answers 400.',
      },
    ),
  ],
  { description: 'One of four modes, chosen by `mode`.' },
);

export const CreateFileResponse = Type.Object({ file: FileSchema, upload: Nullable(Type.Union([DirectDescriptor, MultipartDescriptor])) });

export const FileIdParams = Type.Object({ fileId: Type.String({ minLength: 1, maxLength: 100 }) });

export const ListQuery = Type.Object(
  {
    directory: Type.Optional(Type.String({ maxLength: 1024, description: "Only files directly in this directory ('' = files without a directory)." })),
    status: Type.Optional(FileSchema.properties.status),
    source: Type.Optional(FileSchema.properties.source),
    limit: Type.Integer({ minimum: 1, maximum: 1000, default: 1000 }),
    offset: Type.Integer({ minimum: 0, default: 0 }),
  },
  { additionalProperties: false },
);

export const PartsBody = Type.Object({ partNumbers: Type.Array(Type.Integer({ minimum: 1, maximum: 10000 }), { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false });
export const PartsResponse = Type.Object({ parts: Type.Array(PartRequest) });

export const CompleteBody = Type.Object(
  { parts: Type.Array(Type.Object({ partNumber: Type.Integer({ minimum: 1, maximum: 10000 }), etag: NonEmptyString }, { additionalProperties: false }), { minItems: 1, maxItems: 10000 }) },
  { additionalProperties: false },
);

export const ContentQuery = Type.Object(
  { disposition: Type.Union([Type.Literal('attachment'), Type.Literal('inline')], { default: 'attachment', description: 'Content-Disposition type.' }) },
  { additionalProperties: false },
);

export const UploadQuery = Type.Object(
  {
    expires: Type.Integer({ description: 'Unix seconds' }),
    sig: Type.String({ minLength: 1, maxLength: 128 }),
    partNumber: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
  },
  { additionalProperties: false },
);
