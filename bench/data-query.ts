/**
 * bench/data-query: GET .../query with a filter and a sort (`filter.status=open&sort=-createdAt`,
 * 25 rows a page, pages spread over the first 40) on a definition of BENCH_ROWS rows (default
 * 1,000,000) at BENCH_CONNECTIONS (default 50) for BENCH_SECONDS (default 10): req/s, p50, p99.
 * Baseline in the same run: a bare fastify route running the same page and count SQL on the
 * same pool (no auth, validation, definition lookup or count cache).
 *
 * Index strategy (plugins/data/migrations.ts): the page comes from the partial B-tree
 * (definition_id, created_at, id) WHERE deleted_at IS NULL read backwards, filtering status on
 * the way (a selective filter reads few extra rows); the equality filter is `data @> {...}`, which
 * the GIN jsonb_path_ops index also serves; `total` is a count over the filter, cached per
 * (definition, data_version, filter) so repeated pages between writes do not recount.
 */
import Fastify from 'fastify';
import { envInt, load, row } from './lib.ts';
import { api, createOrders, fillRows, startDataBench } from './data-lib.ts';

const total = envInt('BENCH_ROWS', 1_000_000);
const connections = envInt('BENCH_CONNECTIONS', 50);
const seconds = envInt('BENCH_SECONDS', 10);

const b = await startDataBench({ pool: 20 });
try {
  const def = await createOrders(b);
  let t0 = performance.now();
  await fillRows(b, def.id, total);
  console.log(`data-query: ${total} rows filled in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${connections} connections, ${seconds} s, Node ${process.version}`);

  const qs = (page: number) => `filter.status=open&sort=-createdAt&pageSize=25&page=${page}`;
  const first = await api<{ total: number; items: unknown[] }>(b, 'GET', `/data-definitions/${def.id}/query?${qs(1)}`);
  if (first.items.length !== 25 || first.total !== total / 4) throw new Error(`unexpected first page: total ${first.total}`);

  const bare = Fastify({ logger: false });
  bare.get('/page', async (request) => {
    const page = Number((request.query as { page?: string }).page ?? 1);
    const where = `r.workspace_id = $1 AND r.definition_id = $2 AND r.deleted_at IS NULL AND r.data @> $3::jsonb`;
    const params = [b.workspaceId, def.id, JSON.stringify({ status: 'open' })];
    const [rows, count] = await Promise.all([
      b.trellis.db.query(`SELECT r.id, r.data, r.created_at, r.updated_at, r.deleted_at FROM data_rows r WHERE ${where} ORDER BY r.created_at DESC, r.id DESC LIMIT 25 OFFSET ${(page - 1) * 25}`, params),
      b.trellis.db.query<{ n: string }>(`SELECT count(*) AS n FROM data_rows r WHERE ${where}`, params),
    ]);
    return { items: rows, total: Number(count[0].n) };
  });
  // Second baseline: the page SQL alone (no count), i.e. what the endpoint costs beyond its SQL.
  bare.get('/page-only', async (request) => {
    const page = Number((request.query as { page?: string }).page ?? 1);
    const rows = await b.trellis.db.query(
      `SELECT r.id, r.data, r.created_at, r.updated_at, r.deleted_at FROM data_rows r WHERE r.workspace_id = $1 AND r.definition_id = $2 AND r.deleted_at IS NULL AND r.data @> $3::jsonb ORDER BY r.created_at DESC, r.id DESC LIMIT 25 OFFSET ${(page - 1) * 25}`,
      [b.workspaceId, def.id, JSON.stringify({ status: 'open' })],
    );
    return { items: rows };
  });
  await bare.listen({ host: '127.0.0.1', port: 0 });
  const barePort = (bare.server.address() as { port: number }).port;

  // autocannon hits one URL per run; spread pages by running on page 7 (offset 150) as a middle case.
  const page = 7;
  const subjectUrl = `${b.base}/data-definitions/${def.id}/query?${qs(page)}`;
  const baseUrl = `http://127.0.0.1:${barePort}/page?page=${page}`;
  await load(subjectUrl, { connections, seconds: 2, headers: { authorization: b.headers.authorization } });
  await load(baseUrl, { connections, seconds: 2 });
  const subject = await load(subjectUrl, { connections, seconds, headers: { authorization: b.headers.authorization } });
  const baseline = await load(baseUrl, { connections, seconds });
  const pageOnly = await load(`http://127.0.0.1:${barePort}/page-only?page=${page}`, { connections, seconds });
  console.log(row('baseline (bare SQL page + count)', baseline));
  console.log(row('baseline (bare SQL page only)', pageOnly));
  console.log(row('GET .../query (filter + sort)', subject));
  console.log(`ratio endpoint / bare page+count: ${(subject.rps / baseline.rps).toFixed(2)} (the count is cached per data version);  endpoint / bare page only: ${(subject.rps / pageOnly.rps).toFixed(2)}`);

  // Deep page and first page latency, single request, for the record
  t0 = performance.now();
  await api(b, 'GET', `/data-definitions/${def.id}/query?${qs(400)}`);
  console.log(`single deep page (page 400, offset 9975): ${(performance.now() - t0).toFixed(1)} ms`);
  t0 = performance.now();
  await api(b, 'GET', `/data-definitions/${def.id}/query?filter.amount.gte=990&sort=amount&pageSize=25`);
  console.log(`range filter + sort on a field (uncached count, no field index): ${(performance.now() - t0).toFixed(1)} ms`);
  await bare.close();
} finally {
  await b.close();
}
