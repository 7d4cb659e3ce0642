export { createInspector, isLoopback } from './inspector.js';
export type { Inspector, InspectorOptions } from './inspector.js';
export { createInspectorModel, DEFAULT_MAX_RUNS } from './model.js';
export type {
  CacheView,
  CallItem,
  CallView,
  DiagnosticView,
  DiffEntry,
  InspectorModel,
  InspectorModelOptions,
  InspectorSnapshot,
  RemovedView,
  RunView,
  SessionView,
  SourceTokens,
  ToolCallView,
} from './model.js';
