/**
 * The `api` channel adapter: messages arrive through the HTTP API (POST .../messages); outbound
 * messages are recorded only (status `sent`, nothing leaves Trellis). It serves every kind, so a
 * channel of any kind can be fed by an integration that calls the API itself.
 */
import { defineAdapter } from '../../../core/registry/index.ts';
import { CHANNEL_KINDS, channelAdapter, channelAdaptersPoint } from '../../../plugins/channels/api.ts';

export default defineAdapter({
  id: 'channels-api',
  description: 'Channel adapter `api`: messages through the API only',
  extends: channelAdaptersPoint,
  setup(ctx) {
    ctx.extend(channelAdaptersPoint, channelAdapter({ id: 'api', kinds: CHANNEL_KINDS, description: 'Messages arrive and leave through the HTTP API only' }));
  },
});
