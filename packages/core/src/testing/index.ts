// @ctx/core/testing: test doubles for apps and backends.
export { createProviderRunArgs } from './create-provider-run-args.js';
export type { ProviderRunArgsInit, TestProviderRunArgs } from './create-provider-run-args.js';
export { createSessionContext } from './create-session-context.js';
export type { SessionContextInit } from './create-session-context.js';
export type { RunContextInit } from '../run/run-context.js';
export { ScriptedChatClient } from './scripted-chat-client.js';
export type {
  ScriptedCall,
  ScriptedChatClientOptions,
  ScriptedReply,
  ScriptedResponder,
  ScriptedToolCall,
} from './scripted-chat-client.js';
