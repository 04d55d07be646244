import t from 'tap';
import { S3Storage, S3Config } from '../../../adapters/storage/s3/index.ts';
import { validateConfig } from '../../../core/config/index.ts';
import { storageContract } from '../../contracts/storage.ts';
import { startS3 } from './s3rver.ts';

const s3 = await startS3();
t.teardown(() => s3.close());
const backend = new S3Storage(validateConfig(S3Config, s3.config(), 'plugins.storage-s3.') as never);
await backend.init();
t.teardown(() => backend.close());
storageContract(t, backend, { partSize: 5 * 1024 * 1024 });
