/**
 * A Trellis server in its own process for the crash test: `node crash-server.ts <dbUrl> <dataDir>`
 * prints `PORT <n>` once listening. The test kills it with SIGKILL mid-upload.
 */
import local from '../../../adapters/storage/local/index.ts';
import { buildApp } from '../../../core/app.ts';
import { loadConfig } from '../../../core/config/index.ts';
import files from '../../../plugins/files/index.ts';
import workspaces from '../../../plugins/workspaces/index.ts';

const [databaseUrl, dataDir, expiry] = process.argv.slice(2);
const config = loadConfig({ TRELLIS_DATA_DIR: dataDir, TRELLIS_LOG_LEVEL: 'silent', PORT: '0' });
config.plugins.files = { uploadExpirySeconds: Number(expiry), sweepIntervalMs: 100, minPartSizeBytes: 1024 };
const trellis = await buildApp({ config, plugins: [workspaces, files], adapters: [local], databaseUrl, logger: process.env.CRASH_DEBUG ? { level: 'debug' } : false });
await trellis.app.listen({ port: 0, host: '127.0.0.1' });
const address = trellis.app.server.address() as { port: number };
process.stdout.write(`PORT ${address.port}\n`);
