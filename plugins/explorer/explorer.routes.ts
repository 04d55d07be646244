import type { FastifyRequest } from 'fastify';
import type { App } from '../../core/registry/index.ts';
import {
  CreateFolderBody,
  CreateFolderResponse,
  FoldersResponse,
  ListQuery,
  ListResponse,
  MoveBody,
  NodeIdParams,
  NodeSchema,
  RenameBody,
} from './explorer.schemas.ts';
import type { ExplorerService } from './explorer.service.ts';

const tags = ['explorer'];
const ws = (request: FastifyRequest) => request.workspace!;
const actor = (request: FastifyRequest) => {
  const p = request.principal;
  return p ? (p.kind === 'session' ? p.user.id : `apiKey:${p.keyId}`) : null;
};

export function explorerRoutes(app: App, service: ExplorerService): void {
  app.get(
    '/workspace-nodes',
    {
      config: { permission: 'explorer.read' },
      schema: {
        tags,
        summary: 'List one folder: its subfolders and the items placed in it',
        description:
          "`?folderId=<folder id>` picks the folder (absent or `root`: the root; an unknown id: 404); `?kind=` filters. Folders come first, then items, by name. `breadcrumbs` runs from the top folder down to the current one (empty at the root).",
        querystring: ListQuery,
        response: { 200: ListResponse },
      },
    },
    async (request) => service.list(ws(request).id, request.query),
  );

  app.get(
    '/workspace-nodes/folders',
    {
      config: { permission: 'explorer.read' },
      schema: { tags, summary: 'Every folder usable as a move target, the root first', response: { 200: FoldersResponse } },
    },
    async (request) => ({ folders: await service.folders(ws(request).id) }),
  );

  app.post(
    '/workspace-nodes/folders',
    {
      config: { permission: 'explorer.write' },
      schema: {
        tags,
        summary: 'Create a folder',
        description: 'Body `{name, parentId?}` (parentId null/absent/`root` = the root). Answers 201 `{folder, node}`. A sibling with the same name (case-insensitive) answers 409.',
        body: CreateFolderBody,
        response: { 201: CreateFolderResponse },
      },
    },
    async (request, reply) => reply.code(201).send(await service.createFolder(ws(request).id, actor(request), request.body.name, request.body.parentId)),
  );

  app.patch(
    '/workspace-nodes/:nodeId/rename',
    {
      config: { permission: 'explorer.write' },
      schema: {
        tags,
        summary: 'Rename a node',
        description: "A folder is renamed (409 on a sibling with that name). An item (`<kind>:<sourceId>`) gets a display name in the explorer; the file, table or app keeps its own name.",
        params: NodeIdParams,
        body: RenameBody,
        response: { 200: NodeSchema },
      },
    },
    async (request) => service.rename(ws(request).id, request.params.nodeId, request.body.name),
  );

  app.post(
    '/workspace-nodes/:nodeId/move',
    {
      config: { permission: 'explorer.write' },
      schema: {
        tags,
        summary: 'Move a node into a folder',
        description: 'Body `{parentId}` (null or `root` = the root). Moving a folder into itself or one of its subfolders answers 400. Answers the moved Node.',
        params: NodeIdParams,
        body: MoveBody,
        response: { 200: NodeSchema },
      },
    },
    async (request) => service.move(ws(request).id, request.params.nodeId, request.body.parentId),
  );

  app.delete(
    '/workspace-nodes/:nodeId',
    {
      config: { permission: 'explorer.write' },
      schema: {
        tags,
        summary: 'Delete an empty folder',
        description:
          'Only empty folders are deleted (204). A folder with subfolders or live items answers 409 `conflict` (`details.reason: not_empty`): move or delete the contents first. Item nodes answer 400: files, tables and apps are deleted through their own APIs (their node disappears with them).',
        params: NodeIdParams,
      },
    },
    async (request, reply) => {
      await service.delete(ws(request).id, request.params.nodeId);
      return reply.code(204).send();
    },
  );
}
