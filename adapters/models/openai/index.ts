/**
 * Model provider for any OpenAI-compatible chat completions API (`POST {baseUrl}/chat/completions`).
 * Base URL, API key and default model are operator configuration.
 */
import Type from 'typebox';
import { defineAdapter } from '../../../core/registry/index.ts';
import { modelProvidersPoint } from '../../../plugins/agents/api.ts';

export default defineAdapter({
  id: 'models-openai',
  description: 'OpenAI-compatible chat completions',
  extends: modelProvidersPoint,
  config: Type.Object({
    baseUrl: Type.String({ default: 'https://api.openai.com/v1', pattern: '^https?://' }),
    apiKey: Type.Optional(Type.String({ minLength: 1 })),
    defaultModel: Type.String({ default: 'gpt-4o-mini', minLength: 1 }),
  }),
  setup(ctx) {
    const base = ctx.config.baseUrl.replace(/\/+$/, '');
    ctx.extend(modelProvidersPoint, {
      id: 'openai',
      defaultModel: ctx.config.defaultModel,
      async complete({ model, messages, signal }) {
        const res = await fetch(`${base}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(ctx.config.apiKey ? { authorization: `Bearer ${ctx.config.apiKey}` } : {}) },
          body: JSON.stringify({ model, messages }),
          signal,
        });
        const json = (await res.json().catch(() => null)) as {
          model?: string;
          choices?: { message?: { content?: string | null } }[];
          usage?: { prompt_tokens?: number; completion_tokens?: number };
          error?: { message?: string };
        } | null;
        if (!res.ok) throw new Error(json?.error?.message ?? `HTTP ${res.status}`);
        const content = json?.choices?.[0]?.message?.content;
        if (typeof content !== 'string') throw new Error('The response has no message content.');
        return {
          content,
          model: json?.model ?? model,
          usage: json?.usage ? { promptTokens: json.usage.prompt_tokens ?? 0, completionTokens: json.usage.completion_tokens ?? 0 } : null,
        };
      },
    });
  },
});
