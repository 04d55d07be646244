import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { LocalStorage } from '../../../adapters/storage/local/index.ts';
import { storageContract } from '../../contracts/storage.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'trellis-local-storage-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const backend = new LocalStorage(dir);
await backend.init();
storageContract(t, backend, { partSize: 64 * 1024 });

t.test('interrupted writes leave nothing behind after a restart', async (t) => {
  t.same(await backend.openUploads(), [], 'no open multipart uploads left by the contract');
  const again = new LocalStorage(dir);
  await again.init();
  t.same(await again.list(''), [], 'no objects left by the contract');
});
