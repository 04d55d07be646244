import { readdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import local, { LocalStorage } from '../../../adapters/storage/local/index.ts';
import type { TestApp } from '../../../core/testing/index.ts';
import { expirySuite, filesSuite, loopbackSuite, type Backend } from './suite.ts';

const storageOf = (app: TestApp) => new LocalStorage(path.join(app.config.dataDir, 'storage'));

const backend: Backend = {
  name: 'local',
  adapter: local,
  pluginConfig: {},
  partSize: 64 * 1024,
  verifiesParts: true,
  storedKeys: (app) => storageOf(app).list(''),
};

filesSuite(t, backend);
expirySuite(t, backend, async (app) => {
  const dir = path.join(app.config.dataDir, 'storage');
  return [...(await storageOf(app).openUploads()), ...(await readdir(path.join(dir, 'tmp')))];
});
loopbackSuite(t, backend);
