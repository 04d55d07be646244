/**
 * The built-in plugins, in declaration order. Operators choose among them with TRELLIS_PLUGINS.
 */
import type { AnyPlugin } from '../core/registry/index.ts';
import agentAuth from './agent-auth/index.ts';
import agents from './agents/index.ts';
import automations from './automations/index.ts';
import channels from './channels/index.ts';
import consolePages from './console/index.ts';
import credentials from './credentials/index.ts';
import data from './data/index.ts';
import explorer from './explorer/index.ts';
import fileQuery from './file-query/index.ts';
import files from './files/index.ts';
import mcp from './mcp/index.ts';
import notifications from './notifications/index.ts';
import openapi from './openapi/index.ts';
import query from './query/index.ts';
import sqlQuery from './sql-query/index.ts';
import workspaces from './workspaces/index.ts';
import workflows from './workflows/index.ts';

export const plugins: AnyPlugin[] = [workspaces, agentAuth, mcp, credentials, agents, consolePages, notifications, openapi, channels, query, data, files, automations, explorer, sqlQuery, workflows, fileQuery];
