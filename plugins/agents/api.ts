/**
 * Public API of the agents plugin: the model-provider extension point.
 */
import { createExtensionPoint } from '../../core/registry/index.ts';

export interface ChatTurn {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface Completion {
  content: string;
  model: string;
  usage: { promptTokens: number; completionTokens: number } | null;
}

export interface ModelProvider {
  id: string;
  /** Used when an agent's `model` is null. */
  defaultModel: string;
  complete(request: { model: string; messages: ChatTurn[]; signal: AbortSignal }): Promise<Completion>;
}

export const modelProvidersPoint = createExtensionPoint<ModelProvider>({ id: 'agents.models', plugin: 'agents' });
