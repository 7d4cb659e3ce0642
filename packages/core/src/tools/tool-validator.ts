import { ConfigurationError, CtxError, describe } from '../errors.js';
import type { Tool, ToolValidation } from '../spec/run-view.js';
import type { ToolDefinition } from '../spec/tool-definition.js';

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

/**
 * The checks of the tools that have no `validate` of their own, by tool name.
 * @throws ConfigurationError naming the tool whose schema `validator` cannot compile.
 */
export function compileToolChecks(tools: readonly Tool[], validator: ToolValidator | undefined): Map<string, ToolArgumentsCheck> {
  const checks = new Map<string, ToolArgumentsCheck>();
  if (!validator) return checks;
  for (const tool of tools) {
    if (tool.validate) continue;
    let check: ToolArgumentsCheck;
    try {
      check = validator.compile(tool);
    } catch (error) {
      if (CtxError.isInstance(error)) throw error;
      throw new ConfigurationError(
        `The toolValidator could not compile the parameters of tool "${tool.name}": ${describe(error)}. Fix the tool's JSON Schema.`,
        { cause: error },
      );
    }
    if (typeof check !== 'function') {
      throw new ConfigurationError(`The toolValidator's compile() returned no check for tool "${tool.name}"; it must return a function.`);
    }
    checks.set(tool.name, check);
  }
  return checks;
}

/**
 * Checks that no two tools share a name.
 * @throws ConfigurationError naming the tool and `owner`.
 */
export function checkUniqueToolNames(tools: readonly Tool[], owner: string): void {
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name)) {
      throw new ConfigurationError(
        `${owner} has two tools named "${tool.name}"; the model is offered each name once: rename one or leave one out.`,
      );
    }
    seen.add(tool.name);
  }
}
