// @ctx/core/json-schema: validation of plain JSON Schema tool arguments, for
// `createAgent({ toolValidator: jsonSchemaValidator() })`. Needs the optional peer `@cfworker/json-schema`;
// the main entry stays free of runtime dependencies.
export { jsonSchemaValidator } from './json-schema-validator.js';
export type { JsonSchemaDraft, JsonSchemaValidatorOptions } from './json-schema-validator.js';
export type { ToolArgumentsCheck, ToolValidator } from '../contracts/tool-validator.js';
