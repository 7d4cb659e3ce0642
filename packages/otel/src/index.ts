// @ctx/otel: OpenTelemetry traces of ctx agent runs, following the GenAI semantic conventions.
export { genAiProviderName } from './gen-ai.js';
export { createOtelEventHandler } from './otel-event-handler.js';
export type { OtelEventHandlerOptions } from './otel-event-handler.js';
