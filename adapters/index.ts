/**
 * The built-in adapters. Each extends exactly one plugin through its extension point and loads
 * only when that plugin loads.
 */
import type { AnyAdapter } from '../core/registry/index.ts';
import channelsApi from './channels/api/index.ts';
import channelsSlack from './channels/slack/index.ts';
import channelsTelegram from './channels/telegram/index.ts';
import channelsWebhook from './channels/webhook/index.ts';

export const adapters: AnyAdapter[] = [channelsApi, channelsWebhook, channelsSlack, channelsTelegram];
