/**
 * A custom plugin, the smallest useful one: a table of its own, a permission, and two routes.
 *
 * Load it by adding it to the plugin list you pass to `buildApp`/`startServer` (see
 * core/main.ts), e.g. `startServer({ config, plugins: [...plugins, notes], adapters })`.
 * Everything it needs arrives through `ctx`; it never reads process.env or imports another
 * plugin's internals.
 */
import Type from 'typebox';
import { uuidv7 } from '../../core/crypto/index.ts';
import { NotFound } from '../../core/errors/index.ts';
import { definePlugin } from '../../core/registry/index.ts';

const Note = Type.Object({ id: Type.String(), text: Type.String(), createdAt: Type.String() });

export default definePlugin({
  id: 'notes',
  description: 'Short notes per workspace (an example plugin)',
  config: Type.Object({ maxLength: Type.Integer({ default: 280, minimum: 1 }) }),
  permissions: {
    'notes.read': { description: 'Read notes', roles: ['editor', 'viewer'] },
    'notes.write': { description: 'Write notes', roles: ['editor'] },
  },
  migrations: [
    {
      name: '0001_notes',
      up: `CREATE TABLE notes_notes (
             id uuid PRIMARY KEY,
             workspace_id uuid NOT NULL REFERENCES core_workspaces(id) ON DELETE CASCADE,
             text text NOT NULL,
             created_at timestamptz NOT NULL DEFAULT now())`,
    },
  ],
  setup(ctx) {
    ctx.routes((app) => {
      app.post(
        '/notes',
        {
          config: { permission: 'notes.write' },
          schema: { body: Type.Object({ text: Type.String({ minLength: 1, maxLength: ctx.config.maxLength }) }, { additionalProperties: false }), response: { 201: Note } },
        },
        async (request, reply) => {
          const [n] = await ctx.db.query<{ id: string; text: string; created_at: Date }>(
            'INSERT INTO notes_notes (id, workspace_id, text) VALUES ($1, $2, $3) RETURNING id, text, created_at',
            [uuidv7(), request.workspace!.id, request.body.text],
          );
          return reply.code(201).send({ id: n.id, text: n.text, createdAt: n.created_at.toISOString() });
        },
      );
      app.get(
        '/notes/:noteId',
        { config: { permission: 'notes.read' }, schema: { params: Type.Object({ noteId: Type.String({ format: 'uuid' }) }), response: { 200: Note } } },
        async (request) => {
          const [n] = await ctx.db.query<{ id: string; text: string; created_at: Date }>(
            'SELECT id, text, created_at FROM notes_notes WHERE id = $1 AND workspace_id = $2',
            [request.params.noteId, request.workspace!.id],
          );
          if (!n) throw new NotFound('Note was not found.');
          return { id: n.id, text: n.text, createdAt: n.created_at.toISOString() };
        },
      );
    });
  },
});
