// Type tests (checked by `tsc --noEmit`): what ctx writes is the AI SDK's own types, so an app can
// hand `uiMessagesFromHistory(...)` to `useChat({ messages })` and the chunks to any AI SDK stream.
import type * as ai6 from 'ai';
import type * as ai5 from 'ai-v5';
import type * as ai7 from 'ai-v7';
import type { UIMessage, UIMessageChunk } from './ui-message.js';
import { uiMessagesFromHistory } from './ui-messages-from-history.js';

declare const chunk: UIMessageChunk;

export const messages6: ai6.UIMessage[] = uiMessagesFromHistory([]);
export const messages7: ai7.UIMessage[] = uiMessagesFromHistory([]);
export const chunk6: ai6.UIMessageChunk = chunk;
export const chunk7: ai7.UIMessageChunk = chunk;
// @ts-expect-error ai 5's tool parts have no approval states: its apps cast (approvals: 'input-available' never makes them).
export const messages5: ai5.UIMessage[] = uiMessagesFromHistory([]) as UIMessage[];
