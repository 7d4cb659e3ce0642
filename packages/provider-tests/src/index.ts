export { describeHistoryProvider } from './history-provider-suite.js';
export type { HistoryProviderCapabilities, HistoryProviderCreateOptions, HistoryProviderSuiteOptions } from './history-provider-suite.js';
export { describeHostedConcurrency } from './hosted-concurrency-suite.js';
export type { HostedConcurrencySuiteOptions } from './hosted-concurrency-suite.js';
export { describeSessionStore } from './session-store-suite.js';
export type { SessionStoreCapabilities, SessionStoreSuiteOptions } from './session-store-suite.js';
export type { ConformanceSuiteOptions, MaybePromise } from './suite-options.js';
export { BLANK_SESSION_IDS, describeId, HOSTILE_SESSION_IDS, messagesOfEveryKind } from './fixtures.js';
