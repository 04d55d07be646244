import Type from 'typebox';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Timestamp = Type.String({ format: 'date-time' });

export const FolderSchema = Type.Object(
  { id: Type.String(), name: Type.String(), path: Type.String() },
  { description: "A folder. The root folder is `{id: 'root', name: '', path: ''}`." },
);

export const NodeSchema = Type.Object(
  {
    id: Type.String({ description: 'Folder nodes: the folder id (uuid). Contributed items: `<kind>:<sourceId>` (stable).' }),
    name: Type.String(),
    path: Type.String({ description: 'Folder path and name joined with `/`' }),
    type: Type.String({ description: "'folder', or the item's kind" }),
    owner: Nullable(Type.String()),
    sizeBytes: Nullable(Type.Number()),
    kind: Type.Union([Type.Literal('folder'), Type.Literal('file'), Type.Literal('table'), Type.Literal('app')]),
    sourceId: Nullable(Type.String()),
    parentId: Nullable(Type.String({ description: 'Containing folder id; null at the root' })),
    href: Nullable(Type.String()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
);

const Name = Type.String({ minLength: 1, maxLength: 255, description: "No '/', control characters, surrounding spaces, '.' or '..'" });
const ParentId = Nullable(Type.String({ minLength: 1, maxLength: 100, description: "A folder id; null or 'root' for the root" }));

export const ListQuery = Type.Object(
  {
    folderId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "The folder to list; absent or 'root' lists the root" })),
    kind: Type.Optional(NodeSchema.properties.kind),
  },
  { additionalProperties: false },
);

export const ListResponse = Type.Object({ items: Type.Array(NodeSchema), currentFolder: Nullable(FolderSchema), breadcrumbs: Type.Array(FolderSchema) });
export const FoldersResponse = Type.Object({ folders: Type.Array(FolderSchema) });
export const CreateFolderBody = Type.Object({ name: Name, parentId: Type.Optional(ParentId) }, { additionalProperties: false });
export const CreateFolderResponse = Type.Object({ folder: FolderSchema, node: NodeSchema });
export const NodeIdParams = Type.Object({ nodeId: Type.String({ minLength: 1, maxLength: 200 }) });
export const RenameBody = Type.Object({ name: Name }, { additionalProperties: false });
export const MoveBody = Type.Object({ parentId: ParentId }, { additionalProperties: false });
