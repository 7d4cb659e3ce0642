import { ConfigurationError, CtxError, describe } from '../errors.js';
import type { Tool } from '../contracts/run-view.js';
import type { ToolArgumentsCheck, ToolValidator } from '../contracts/tool-validator.js';

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
