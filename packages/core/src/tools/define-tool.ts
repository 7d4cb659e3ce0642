import { ConfigurationError } from '../errors.js';
import { isPlainObject } from '../messages/json.js';
import type { JsonObject } from '../contracts/json.js';
import type { Tool, ToolApprovalCheck, ToolExecuteOptions } from '../contracts/run-view.js';

/** The Standard Schema v1 interface (zod, valibot, arktype...), declared here so core depends on none of them. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The schema library's implementation of the standard. */
  readonly '~standard': {
    /** The version of the standard. */
    readonly version: 1;
    /** The library, e.g. `zod`. */
    readonly vendor: string;
    /** Checks a value: the parsed output, or the issues. */
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    /** The input and output types, for inference only. */
    readonly types?:
      | {
          /** The type the schema accepts. */
          readonly input: Input;
          /** The type it produces. */
          readonly output: Output;
        }
      | undefined;
    /** Standard JSON Schema, offered by some libraries (zod 4.2+, arktype). */
    readonly jsonSchema?:
      | {
          /** The JSON Schema of the input, for a target draft. */
          readonly input: (options: { readonly target: string }) => Record<string, unknown>;
        }
      | undefined;
  };
}

/** What a Standard Schema's `validate` returns. */
export type StandardResult<Output> =
  | {
      /** The parsed value. */
      readonly value: Output;
      /** None: the value is valid. */
      readonly issues?: undefined;
    }
  | {
      /** What is wrong with the value. */
      readonly issues: ReadonlyArray<{
        /** What is wrong. */
        readonly message: string;
        /** Where in the value. */
        readonly path?:
          | ReadonlyArray<
              | PropertyKey
              | {
                  /** One step of the path. */
                  readonly key: PropertyKey;
                }
            >
          | undefined;
      }>;
    };

/** The output type of a Standard Schema. */
export type InferOutput<S> = S extends StandardSchemaV1<unknown, infer O> ? O : never;

interface ToolDefinitionBase {
  /** The tool's name as the model sees it: 1-64 letters, digits, `_` or `-`. */
  name: string;
  /** What the tool does and when to use it, for the model. */
  description?: string;
  /** Any JSON kept with the tool (e.g. `priority` for budgets). */
  metadata?: JsonObject;
}

/** `defineTool` with a Standard Schema: arguments are validated and typed by it. */
export interface StandardSchemaToolDefinition<S extends StandardSchemaV1, R> extends ToolDefinitionBase {
  /** The arguments' schema. */
  parameters: S;
  /** JSON Schema sent to the model, needed when the schema library does not offer Standard JSON Schema. */
  jsonSchema?: JsonObject;
  /** Runs the tool with the validated arguments; its result (JSON) goes back to the model. */
  execute?: (args: InferOutput<S>, options: ToolExecuteOptions) => R | Promise<R>;
  /** Whether a call waits for the caller's approval before `execute` (see `Tool.needsApproval`). Default: never. */
  needsApproval?: boolean | ToolApprovalCheck<InferOutput<S>>;
}

/**
 * `defineTool` with a plain JSON Schema: arguments are parsed JSON, typed as you declare, and
 * checked against `parameters` only when the agent has a `toolValidator` (`jsonSchemaValidator()`
 * from `@ctx/core/json-schema`); without one they reach `execute` unchecked.
 */
export interface JsonSchemaToolDefinition<A, R> extends ToolDefinitionBase {
  /** The arguments' schema. */
  parameters: JsonObject;
  /** Runs the tool with the validated arguments; its result (JSON) goes back to the model. */
  execute?: (args: A, options: ToolExecuteOptions) => R | Promise<R>;
  /** Whether a call waits for the caller's approval before `execute` (see `Tool.needsApproval`). Default: never. */
  needsApproval?: boolean | ToolApprovalCheck<A>;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Defines a tool. `parameters` is a JSON Schema object or a Standard Schema (zod, valibot, ...).
 * @throws ConfigurationError for an invalid name, a Standard Schema with no JSON Schema available, or a
 *   `needsApproval` that is neither a boolean nor a function, or is set on a tool without `execute`.
 */
export function defineTool<S extends StandardSchemaV1, R = unknown>(
  definition: StandardSchemaToolDefinition<S, R>,
): Tool<InferOutput<S>, R>;
export function defineTool<A = JsonObject, R = unknown>(definition: JsonSchemaToolDefinition<A, R>): Tool<A, R>;
export function defineTool(
  definition: ToolDefinitionBase & {
    parameters: unknown;
    jsonSchema?: JsonObject;
    execute?: Tool['execute'];
    needsApproval?: Tool['needsApproval'];
  },
): Tool {
  const { name, description, metadata, execute, needsApproval } = definition;
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    throw new ConfigurationError(`Tool name ${JSON.stringify(name)} is invalid: use 1-64 letters, digits, "_" or "-".`);
  }
  const tool: { -readonly [K in keyof Tool]: Tool[K] } = { name, parameters: {} };
  if (description !== undefined) tool.description = description;
  if (metadata !== undefined) tool.metadata = metadata;
  if (execute) tool.execute = execute;
  if (needsApproval !== undefined) {
    if (typeof needsApproval !== 'boolean' && typeof needsApproval !== 'function') {
      throw new ConfigurationError(`Tool "${name}": \`needsApproval\` must be a boolean or a function, got ${typeof needsApproval}.`);
    }
    if (!execute) {
      throw new ConfigurationError(
        `Tool "${name}": \`needsApproval\` needs \`execute\`; a tool without it is run by the caller, who approves it themselves.`,
      );
    }
    tool.needsApproval = needsApproval;
  }
  const parameters = definition.parameters;
  if (isStandardSchema(parameters)) {
    const standard = parameters['~standard'];
    const schema = definition.jsonSchema ?? (standard.jsonSchema?.input({ target: 'draft-2020-12' }) as JsonObject | undefined);
    if (!schema) {
      throw new ConfigurationError(`Tool "${name}": this ${standard.vendor} schema offers no JSON Schema; pass it as \`jsonSchema\`.`);
    }
    tool.parameters = schema;
    tool.validate = async (args) => {
      const result = await standard.validate(args);
      if (result.issues) return { success: false, issues: result.issues.map(formatIssue) };
      return { success: true, value: result.value };
    };
  } else if (isPlainObject(parameters)) {
    tool.parameters = parameters as JsonObject;
  } else {
    throw new ConfigurationError(`Tool "${name}": \`parameters\` must be a JSON Schema object or a Standard Schema.`);
  }
  return tool;
}

/** Whether a value implements Standard Schema v1 (has `~standard`). */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && '~standard' in value;
}

/** A Standard Schema issue as `path: message`, the way tool argument issues are reported. */
export function formatIssue(issue: { message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> | undefined }): string {
  if (!issue.path?.length) return issue.message;
  const path = issue.path.map((p) => String(typeof p === 'object' ? p.key : p)).join('.');
  return `${path}: ${issue.message}`;
}
