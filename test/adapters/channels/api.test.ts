import t from 'tap';
import apiAdapter from '../../../adapters/channels/api/index.ts';
import { contractHarness } from '../../contracts/channels.ts';

// The `api` adapter has no platform: messages arrive through the API itself. Its share of the
// contract: a redelivery (same externalId) stores one message, there is no inbound route, and
// outbound messages are recorded as sent without a queue.
const h = await contractHarness({ name: 'api', kind: 'api', adapterId: 'api', adapters: [apiAdapter], config: {} });
t.teardown(() => h.app.close());

t.test('api adapter contract', async (t) => {
  const ch = await h.createChannel();
  t.equal(ch.inboundUrl, null);
  const post = (payload: unknown) => h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/messages`, headers: h.ws.auth, payload: payload as object });
  const a = await post({ direction: 'inbound', author: { role: 'user' }, text: 'hi', externalId: 'e1' });
  const b = await post({ direction: 'inbound', author: { role: 'user' }, text: 'hi', externalId: 'e1' });
  t.equal(a.statusCode, 201);
  t.equal(b.statusCode, 200);
  t.equal(b.json().id, a.json().id);
  const concurrent = await Promise.all(Array.from({ length: 10 }, () => post({ direction: 'inbound', author: { role: 'user' }, text: 'race', externalId: 'e2' })));
  t.same(concurrent.map((r) => r.statusCode).sort(), [200, 200, 200, 200, 200, 200, 200, 200, 200, 201], 'one of ten concurrent deliveries creates');
  t.equal((await h.messages(ch.id)).length, 2, 'one message per externalId');
  const out = await post({ direction: 'outbound', author: { role: 'agent' }, text: 'recorded' });
  t.equal(out.json().status, 'sent');
  t.notOk(out.json().metadata?.delivery, 'no delivery attempt');
  const inbound = await h.app.inject({ method: 'POST', url: `/api/v1/channels/${ch.id}/inbound`, payload: { any: 1 } });
  t.equal(inbound.statusCode, 404, 'no inbound route for the api adapter');
});
