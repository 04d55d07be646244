/**
 * The explorer tree: folders of its own, plus the items other plugins contribute through
 * `explorer.sources` (files, tables, apps), placed in folders by `explorer_placements`.
 *
 * Node ids: a folder's id is its uuid; an item's id is `<kind>:<sourceId>`, stable for the life
 * of the item whatever its folder or display name. Renaming an item changes its display name in
 * the explorer only (the file or table keeps its own name). Moving a folder into itself or one of
 * its descendants answers 400. Deleting a folder needs it to be empty (no subfolders, no live
 * items): otherwise 409 `conflict`; items are deleted through their own API, so deleting an item
 * node answers 400.
 */
import { isUuid } from '../../core/tenancy/index.ts';
import type { Database } from '../../core/db/index.ts';
import { uuidv7 } from '../../core/crypto/index.ts';
import { Conflict, DecodeError, InvalidRequest, NotFound } from '../../core/errors/index.ts';
import type { ExplorerItem, ExplorerSource } from './api.ts';

const CONTROL = /[\u0000-\u001f\u007f]/;
const ROOT = { id: 'root', name: '', path: '' };

type Kind = 'folder' | 'file' | 'table' | 'app';

interface FolderRow {
  id: string;
  parent_id: string | null;
  name: string;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

interface PlacementRow {
  kind: string;
  source_id: string;
  folder_id: string | null;
  display_name: string | null;
}

export interface Folder {
  id: string;
  name: string;
  path: string;
}

export interface Node {
  id: string;
  name: string;
  path: string;
  type: string;
  owner: string | null;
  sizeBytes: number | null;
  kind: Kind;
  sourceId: string | null;
  parentId: string | null;
  href: string | null;
  createdAt: string;
  updatedAt: string;
}

export function checkName(name: string): string {
  const n = name;
  if (n.trim() !== n || n === '.' || n === '..' || n.includes('/') || CONTROL.test(n) || n.length === 0) {
    throw new DecodeError([{ _tag: 'Refinement', path: ['name'], message: "must not contain '/' or control characters, have surrounding spaces, or be '.' or '..'" }]);
  }
  return n;
}

/** The workspace's folders with their paths. */
class Tree {
  readonly byId = new Map<string, FolderRow>();
  readonly #paths = new Map<string, string>();
  constructor(rows: FolderRow[]) {
    for (const r of rows) this.byId.set(r.id, r);
  }
  path(id: string | null): string {
    if (!id) return '';
    const cached = this.#paths.get(id);
    if (cached !== undefined) return cached;
    const r = this.byId.get(id);
    if (!r) return '';
    const parent = this.path(r.parent_id);
    const p = parent ? `${parent}/${r.name}` : r.name;
    this.#paths.set(id, p);
    return p;
  }
  folder(id: string): Folder {
    const r = this.byId.get(id)!;
    return { id: r.id, name: r.name, path: this.path(id) };
  }
  /** From the top folder down to `id`, inclusive. */
  ancestry(id: string | null): Folder[] {
    const out: Folder[] = [];
    for (let cur = id; cur; cur = this.byId.get(cur)?.parent_id ?? null) out.unshift(this.folder(cur));
    return out;
  }
  isWithin(id: string, ancestor: string): boolean {
    for (let cur: string | null = id; cur; cur = this.byId.get(cur)?.parent_id ?? null) if (cur === ancestor) return true;
    return false;
  }
}

export class ExplorerService {
  readonly #db: Database;
  readonly #sources: readonly ExplorerSource[];

  constructor(db: Database, sources: readonly ExplorerSource[]) {
    this.#db = db;
    this.#sources = sources;
  }

  async #tree(workspaceId: string): Promise<Tree> {
    return new Tree(await this.#db.query<FolderRow>('SELECT * FROM explorer_folders WHERE workspace_id = $1', [workspaceId]));
  }

  async #placements(workspaceId: string): Promise<Map<string, PlacementRow>> {
    const rows = await this.#db.query<PlacementRow>('SELECT kind, source_id, folder_id, display_name FROM explorer_placements WHERE workspace_id = $1', [workspaceId]);
    return new Map(rows.map((r) => [`${r.kind}:${r.source_id}`, r]));
  }

  /** Parses a folder id parameter; `null` for the root. 404 for a folder of another workspace. */
  #folderId(tree: Tree, id: string | null | undefined): string | null {
    if (id === undefined || id === null || id === 'root' || id === '') return null;
    if (!isUuid(id) || !tree.byId.has(id)) throw new NotFound('Folder was not found.');
    return id;
  }

  #folderNode(tree: Tree, r: FolderRow): Node {
    return {
      id: r.id,
      name: r.name,
      path: tree.path(r.id),
      type: 'folder',
      owner: r.created_by,
      sizeBytes: null,
      kind: 'folder',
      sourceId: null,
      parentId: r.parent_id,
      href: null,
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    };
  }

  #itemNode(tree: Tree, kind: Exclude<Kind, 'folder'>, item: ExplorerItem, placement: PlacementRow | undefined): Node {
    const parentId = placement?.folder_id && tree.byId.has(placement.folder_id) ? placement.folder_id : null;
    const name = placement?.display_name ?? item.name;
    const folderPath = tree.path(parentId);
    return {
      id: `${kind}:${item.sourceId}`,
      name,
      path: folderPath ? `${folderPath}/${name}` : name,
      type: kind,
      owner: item.owner,
      sizeBytes: item.sizeBytes,
      kind,
      sourceId: item.sourceId,
      parentId,
      href: item.href,
      createdAt: item.createdAt,
      updatedAt: item.updatedAt,
    };
  }

  async #items(workspaceId: string, tree: Tree, kinds?: Kind[]): Promise<Node[]> {
    const placements = await this.#placements(workspaceId);
    const out: Node[] = [];
    for (const source of this.#sources) {
      if (kinds && !kinds.includes(source.kind)) continue;
      for (const item of await source.list(workspaceId)) out.push(this.#itemNode(tree, source.kind, item, placements.get(`${source.kind}:${item.sourceId}`)));
    }
    return out;
  }

  async #item(workspaceId: string, tree: Tree, nodeId: string): Promise<Node> {
    const i = nodeId.indexOf(':');
    const kind = nodeId.slice(0, i) as Kind;
    const sourceId = nodeId.slice(i + 1);
    const source = this.#sources.find((s) => s.kind === kind);
    if (i <= 0 || !source || !sourceId) throw new NotFound('Node was not found.');
    const item = (await source.list(workspaceId)).find((x) => x.sourceId === sourceId);
    if (!item) throw new NotFound('Node was not found.');
    const p = await this.#db.query<PlacementRow>(
      'SELECT kind, source_id, folder_id, display_name FROM explorer_placements WHERE workspace_id = $1 AND kind = $2 AND source_id = $3',
      [workspaceId, kind, sourceId],
    );
    return this.#itemNode(tree, kind as Exclude<Kind, 'folder'>, item, p[0]);
  }

  static #sort(a: Node, b: Node): number {
    if ((a.kind === 'folder') !== (b.kind === 'folder')) return a.kind === 'folder' ? -1 : 1;
    return a.name.localeCompare(b.name) || a.id.localeCompare(b.id);
  }

  async list(workspaceId: string, q: { folderId?: string; kind?: Kind }): Promise<{ items: Node[]; currentFolder: Folder | null; breadcrumbs: Folder[] }> {
    const tree = await this.#tree(workspaceId);
    const folderId = this.#folderId(tree, q.folderId);
    const items: Node[] = [];
    if (!q.kind || q.kind === 'folder') {
      for (const r of tree.byId.values()) if (r.parent_id === folderId) items.push(this.#folderNode(tree, r));
    }
    if (q.kind !== 'folder') {
      for (const n of await this.#items(workspaceId, tree, q.kind ? [q.kind] : undefined)) if (n.parentId === folderId) items.push(n);
    }
    items.sort(ExplorerService.#sort);
    return { items, currentFolder: folderId ? tree.folder(folderId) : null, breadcrumbs: tree.ancestry(folderId) };
  }

  async folders(workspaceId: string): Promise<Folder[]> {
    const tree = await this.#tree(workspaceId);
    const all = [...tree.byId.keys()].map((id) => tree.folder(id));
    all.sort((a, b) => a.path.localeCompare(b.path));
    return [ROOT, ...all];
  }

  async createFolder(workspaceId: string, createdBy: string | null, name: string, parentId: string | null | undefined): Promise<{ folder: Folder; node: Node }> {
    checkName(name);
    const tree = await this.#tree(workspaceId);
    const parent = this.#folderId(tree, parentId);
    const id = uuidv7();
    let row: FolderRow;
    try {
      [row] = await this.#db.query<FolderRow>(
        'INSERT INTO explorer_folders (id, workspace_id, parent_id, name, created_by) VALUES ($1, $2, $3, $4, $5) RETURNING *',
        [id, workspaceId, parent, name, createdBy],
      );
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new Conflict(`A folder named '${name}' already exists here.`);
      throw err;
    }
    tree.byId.set(row.id, row);
    return { folder: tree.folder(row.id), node: this.#folderNode(tree, row) };
  }

  async #node(workspaceId: string, tree: Tree, nodeId: string): Promise<Node> {
    if (isUuid(nodeId)) {
      const r = tree.byId.get(nodeId);
      if (!r) throw new NotFound('Node was not found.');
      return this.#folderNode(tree, r);
    }
    return this.#item(workspaceId, tree, nodeId);
  }

  async #upsertPlacement(workspaceId: string, node: Node, set: { folderId?: string | null; displayName?: string | null }): Promise<void> {
    await this.#db.query(
      `INSERT INTO explorer_placements (workspace_id, kind, source_id, folder_id, display_name) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (workspace_id, kind, source_id) DO UPDATE SET
         folder_id = CASE WHEN $6 THEN EXCLUDED.folder_id ELSE explorer_placements.folder_id END,
         display_name = CASE WHEN $7 THEN EXCLUDED.display_name ELSE explorer_placements.display_name END,
         updated_at = now()`,
      [workspaceId, node.kind, node.sourceId, set.folderId ?? null, set.displayName ?? null, 'folderId' in set, 'displayName' in set],
    );
  }

  async rename(workspaceId: string, nodeId: string, name: string): Promise<Node> {
    checkName(name);
    const tree = await this.#tree(workspaceId);
    const node = await this.#node(workspaceId, tree, nodeId);
    if (node.kind === 'folder') {
      try {
        await this.#db.query('UPDATE explorer_folders SET name = $3, updated_at = now() WHERE workspace_id = $1 AND id = $2', [workspaceId, node.id, name]);
      } catch (err) {
        if ((err as { code?: string }).code === '23505') throw new Conflict(`A folder named '${name}' already exists here.`);
        throw err;
      }
      return this.#node(workspaceId, await this.#tree(workspaceId), nodeId);
    }
    await this.#upsertPlacement(workspaceId, node, { displayName: name });
    return this.#node(workspaceId, tree, nodeId);
  }

  async move(workspaceId: string, nodeId: string, parentId: string | null): Promise<Node> {
    const tree = await this.#tree(workspaceId);
    const node = await this.#node(workspaceId, tree, nodeId);
    const target = this.#folderId(tree, parentId);
    if (node.kind === 'folder') {
      if (target && tree.isWithin(target, node.id)) throw new InvalidRequest('A folder cannot be moved into itself or one of its subfolders.');
      try {
        await this.#db.query('UPDATE explorer_folders SET parent_id = $3, updated_at = now() WHERE workspace_id = $1 AND id = $2', [workspaceId, node.id, target]);
      } catch (err) {
        if ((err as { code?: string }).code === '23505') throw new Conflict(`A folder named '${node.name}' already exists in the target folder.`);
        throw err;
      }
      return this.#node(workspaceId, await this.#tree(workspaceId), nodeId);
    }
    await this.#upsertPlacement(workspaceId, node, { folderId: target });
    return this.#node(workspaceId, tree, nodeId);
  }

  async delete(workspaceId: string, nodeId: string): Promise<void> {
    const tree = await this.#tree(workspaceId);
    const node = await this.#node(workspaceId, tree, nodeId);
    if (node.kind !== 'folder') {
      throw new InvalidRequest(`The explorer deletes folders only; delete a ${node.kind} through its own API (for a file: DELETE /api/v1/files/{id}).`);
    }
    const children = [...tree.byId.values()].filter((r) => r.parent_id === node.id).length;
    const items = (await this.#items(workspaceId, tree)).filter((n) => n.parentId === node.id).length;
    if (children + items > 0) {
      throw new Conflict(`The folder is not empty (${children} folders, ${items} items): move or delete its contents first.`, { reason: 'not_empty' });
    }
    try {
      // Placements of items that no longer exist go with the folder (ON DELETE CASCADE).
      await this.#db.query('DELETE FROM explorer_folders WHERE workspace_id = $1 AND id = $2', [workspaceId, node.id]);
    } catch (err) {
      if ((err as { code?: string }).code === '23503') throw new Conflict('The folder is not empty.', { reason: 'not_empty' });
      throw err;
    }
  }
}
