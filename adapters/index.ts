/**
 * The built-in adapters. Each extends exactly one plugin through its extension point and loads
 * only when that plugin loads.
 */
import type { AnyAdapter } from '../core/registry/index.ts';
import channelsApi from './channels/api/index.ts';
import channelsCron from './channels/cron/index.ts';
import channelsDiscord from './channels/discord/index.ts';
import channelsEmail from './channels/email/index.ts';
import channelsSlack from './channels/slack/index.ts';
import channelsSms from './channels/sms/index.ts';
import channelsTelegram from './channels/telegram/index.ts';
import channelsWebhook from './channels/webhook/index.ts';
import modelsOpenai from './models/openai/index.ts';
import pushExpo from './push/expo/index.ts';
import queryDuckdb from './query/duckdb/index.ts';
import storageLocal from './storage/local/index.ts';
import storageS3 from './storage/s3/index.ts';

export const adapters: AnyAdapter[] = [channelsApi, channelsWebhook, channelsSlack, channelsTelegram, channelsDiscord, channelsSms, channelsEmail, channelsCron, storageLocal, storageS3, queryDuckdb, pushExpo, modelsOpenai];
