import t from 'tap';
import s3adapter, { S3Config, S3Storage } from '../../../adapters/storage/s3/index.ts';
import { validateConfig } from '../../../core/config/index.ts';
import { startS3 } from '../../adapters/storage/s3rver.ts';
import { expirySuite, filesSuite, type Backend } from './suite.ts';

const s3 = await startS3();
t.teardown(() => s3.close());
const cfg = s3.config('trellis-files');
const direct = new S3Storage(validateConfig(S3Config, cfg, '') as never);
t.teardown(() => direct.close());

const backend: Backend = {
  name: 's3',
  adapter: s3adapter,
  pluginConfig: { 'storage-s3': cfg, files: { backend: 's3' } },
  partSize: 5 * 1024 * 1024,
  // ListParts comes from the test server's front (s3rver lacks it), so ETags are checked as on S3.
  verifiesParts: true,
  storedKeys: () => direct.list(''),
};

filesSuite(t, backend);
expirySuite(t, backend, () => s3.uploadDirs('trellis-files'));
