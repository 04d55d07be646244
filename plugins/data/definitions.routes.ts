import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../../core/registry/index.ts';
import { CreateDefinitionBody, DefinitionIdParams, DefinitionView, PatchDefinitionBody } from './definitions.schemas.ts';
import { toView, type DefinitionsService } from './definitions.service.ts';

const tags = ['data'];
const wsId = (request: FastifyRequest) => request.workspace!.id;

export function definitionsRoutes(app: App, defs: DefinitionsService): void {
  app.get(
    '/data-definitions',
    { config: { permission: 'data.read' }, schema: { tags, summary: 'List the live data definitions (a bare array, oldest first)', response: { 200: Type.Array(DefinitionView) } } },
    async (request) => (await defs.list(wsId(request))).map(toView),
  );

  app.get(
    '/data-definitions/:definitionId',
    {
      config: { permission: 'data.read' },
      schema: {
        tags,
        summary: 'One live data definition',
        description: 'The path segment accepts the id, a name-id slug (`<name-slug>-<id>`), the handle, or the legacy handle URL form (the `url`, or any URL-encoded path whose last segment is one of these).',
        params: DefinitionIdParams,
        response: { 200: DefinitionView },
      },
    },
    async (request) => toView(await defs.get(wsId(request), request.params.definitionId)),
  );

  app.post(
    '/data-definitions',
    {
      config: { permission: 'data.write' },
      schema: {
        tags,
        summary: 'Create a data definition',
        description:
          'Body `{name, handle?, description?, fields?}`. Field types: text, number, boolean, date, timestamp, json, files, select, multi-select, relationship. ' +
          '`variant` (long-text, url) only on text; `options` (unique values) required on select/multi-select; `dataDefinitionId` required on relationship and must name a live definition of this workspace. ' +
          'Answers 201 with the definition; 409 `conflict` when the handle is taken; 400 decode errors name the offending field.',
        body: CreateDefinitionBody,
        response: { 201: DefinitionView },
      },
    },
    async (request, reply) => {
      const d = await defs.create(wsId(request), request.body);
      return reply.code(201).send(toView(d));
    },
  );

  app.patch(
    '/data-definitions/:definitionId',
    {
      config: { permission: 'data.write' },
      schema: {
        tags,
        summary: 'Change a data definition',
        description: 'Body `{name?, handle?, description?, fields?}`; `fields` replaces the whole field map (validated as on create). 409 `conflict` when the new handle is taken.',
        params: DefinitionIdParams,
        body: PatchDefinitionBody,
        response: { 200: DefinitionView },
      },
    },
    async (request) => {
      return toView(await defs.patch(wsId(request), request.params.definitionId, request.body));
    },
  );

  app.delete(
    '/data-definitions/:definitionId',
    {
      config: { permission: 'data.write' },
      schema: { tags, summary: 'Delete a data definition (soft: it and its rows disappear from every read; the handle becomes free)', params: DefinitionIdParams },
    },
    async (request, reply) => {
      await defs.remove(wsId(request), request.params.definitionId);
      return reply.code(204).send();
    },
  );
}
