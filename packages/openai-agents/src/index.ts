// Any ctx history provider as an OpenAI Agents SDK Session.
export { AGENTS_ITEM_KEY, itemToMessage, messageToItems } from './agent-items.js';
export type { ItemToMessageOptions } from './agent-items.js';
export { CtxSession } from './ctx-session.js';
export type { CtxSessionOptions } from './ctx-session.js';
export { AGENTS_TRANSACTION_KEY } from './history-transaction.js';
