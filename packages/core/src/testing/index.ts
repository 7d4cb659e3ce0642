export { ScriptedChatClient } from './scripted-chat-client.js';
export type { ScriptedCall, ScriptedChatClientOptions, ScriptedReply, ScriptedResponder, ScriptedToolCall } from './scripted-chat-client.js';
