/**
 * bench/data-ingest: rows/s of POST .../data/upsert-many (batches of BENCH_BATCH, default 1000;
 * BENCH_ROWS total, default 100,000; one request at a time over HTTP, with validation, the
 * per-definition version lock, events and the response) against raw writes of the same rows
 * into the same table in the same run: a multi-row INSERT ... VALUES per batch, and COPY.
 * Goal: upsert-many / multi-row INSERT >= 0.5.
 */
import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { from as copyFrom } from 'pg-copy-streams';
import { envInt } from './lib.ts';
import { api, createOrders, orderData, startDataBench } from './data-lib.ts';

const total = envInt('BENCH_ROWS', 100_000);
const batch = envInt('BENCH_BATCH', 1000);

const b = await startDataBench({ pool: 10 });
try {
  const def = await createOrders(b);
  const raw = await api<{ id: string }>(b, 'POST', '/data-definitions', { name: 'Raw', handle: 'raw' });
  const copyDef = await api<{ id: string }>(b, 'POST', '/data-definitions', { name: 'Copy', handle: 'copy' });
  console.log(`data-ingest: ${total} rows in batches of ${batch}, Node ${process.version}`);

  // warm-up (JIT, pool, plans) on a throwaway definition
  const warm = await api<{ id: string }>(b, 'POST', '/data-definitions', { name: 'Warm', handle: 'warm', fields: { title: { name: 'T', type: 'text' } } });
  for (let i = 0; i < 3; i++) await api(b, 'POST', `/data-definitions/${warm.id}/data/upsert-many`, { rows: Array.from({ length: batch }, (_, j) => ({ data: { title: `w${i}-${j}` } })) });

  // The three writers alternate batch by batch (same table, same growing indexes, same moment's
  // machine load), each timing only its own batches.
  const esc = (x: string) => x.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n');
  let subjectMs = 0;
  let insertMs = 0;
  let copyMs = 0;
  for (let from = 0; from < total; from += batch) {
    const n = Math.min(batch, total - from);
    const datas = Array.from({ length: n }, (_, j) => orderData(from + j));

    // Subject: upsert-many over HTTP
    let t0 = performance.now();
    await api(b, 'POST', `/data-definitions/${def.id}/data/upsert-many`, { rows: datas.map((data) => ({ data })) });
    subjectMs += performance.now() - t0;

    // Baseline 1: one multi-row INSERT ... VALUES of the same rows
    t0 = performance.now();
    const values: string[] = [];
    const params: unknown[] = [b.workspaceId, raw.id];
    for (const d of datas) {
      params.push(randomUUID(), JSON.stringify(d));
      values.push(`($${params.length - 1}::uuid, $1::uuid, $2::uuid, $${params.length}::jsonb, 1)`);
    }
    await b.trellis.db.query(`INSERT INTO data_rows (id, workspace_id, definition_id, data, version) VALUES ${values.join(', ')}`, params);
    insertMs += performance.now() - t0;

    // Baseline 2: COPY of the same rows
    t0 = performance.now();
    const client = await b.trellis.db.pool.connect();
    try {
      let text = '';
      for (const d of datas) text += `${randomUUID()}\t${b.workspaceId}\t${copyDef.id}\t${esc(JSON.stringify(d))}\t1\n`;
      await pipeline(Readable.from([text]), client.query(copyFrom('COPY data_rows (id, workspace_id, definition_id, data, version) FROM STDIN')));
    } finally {
      client.release();
    }
    copyMs += performance.now() - t0;
  }

  const [{ n }] = await b.trellis.db.query<{ n: string }>('SELECT count(*) AS n FROM data_rows WHERE definition_id = $1', [def.id]);
  if (Number(n) !== total) throw new Error(`expected ${total} rows, found ${n}`);
  const rate = (msv: number) => (total / msv) * 1000;
  console.log(`upsert-many over HTTP        ${rate(subjectMs).toFixed(0).padStart(8)} rows/s  (${(subjectMs / 1000).toFixed(2)} s)`);
  console.log(`baseline multi-row INSERT    ${rate(insertMs).toFixed(0).padStart(8)} rows/s  (${(insertMs / 1000).toFixed(2)} s)`);
  console.log(`baseline COPY                ${rate(copyMs).toFixed(0).padStart(8)} rows/s  (${(copyMs / 1000).toFixed(2)} s)`);
  console.log(`ratio upsert-many / INSERT: ${(insertMs / subjectMs).toFixed(2)}  (goal >= 0.5);  upsert-many / COPY: ${(copyMs / subjectMs).toFixed(2)}`);
} finally {
  await b.close();
}
