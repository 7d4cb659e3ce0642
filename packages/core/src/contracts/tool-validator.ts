import type { ToolValidation } from './run-view.js';
import type { ToolDefinition } from './tool-definition.js';

/** Checks one tool's parsed arguments; what `ToolValidator.compile` returns. */
export type ToolArgumentsCheck = (args: unknown) => ToolValidation<unknown> | Promise<ToolValidation<unknown>>;

/**
 * Validates the arguments of tools whose `parameters` are a plain JSON Schema, for every such tool
 * of an agent: its own, a run's and those providers add (`createAgent({ toolValidator })`). Tools
 * with their own `validate` (a Standard Schema in `defineTool`) keep it. `jsonSchemaValidator()`
 * from `@ctx/core/json-schema` implements it; an adapter for another validator is one method.
 */
export interface ToolValidator {
  /** The contract version this validator implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /**
   * Prepares the check of `tool.parameters`. Called for the agent's tools when it is created and
   * for every tool of a run before its first model call, so cache by schema object. The check
   * returns `{ success: false, issues }` (one `path: message` each) for arguments the schema
   * rejects, and the value `execute` receives otherwise.
   * @throws ConfigurationError naming the tool when its schema cannot be compiled.
   */
  compile(tool: ToolDefinition): ToolArgumentsCheck;
}
