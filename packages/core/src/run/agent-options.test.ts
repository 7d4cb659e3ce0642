import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { jsonSchemaValidator } from '../json-schema/json-schema-validator.js';
import type { ChatClient } from '../contracts/chat-client.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { checkAgentOptions } from './agent-options.js';

const client = new ScriptedChatClient({ replies: [] });

describe('checkAgentOptions', () => {
  it('fills in the defaults', () => {
    const checked = checkAgentOptions({ client });
    expect(checked.name).toBe('agent');
    expect(checked.maxToolRoundtrips).toBe(10);
    expect(checked.contextProviders).toEqual([]);
  });

  it('runs contracts of version v1, or without a version, and rejects any other version by name', () => {
    const unversioned: ContextProvider = { sourceId: 'plain' };
    const v1: ContextProvider = { sourceId: 'v1', specificationVersion: 'v1' };
    expect(() => checkAgentOptions({ client, contextProviders: [unversioned, v1] })).not.toThrow();
    const v2 = { sourceId: 'future', specificationVersion: 'v2' } as unknown as ContextProvider;
    expect(() => checkAgentOptions({ client, contextProviders: [v2] })).toThrow(
      new ConfigurationError(
        'Context provider "future" implements specification "v2", but this copy of @ctx/core runs "v1": upgrade @ctx/core, or wrap it in a v1 adapter.',
      ),
    );
    const v2Client = { ...client, getResponse: client.getResponse, specificationVersion: 'v2' } as unknown as ChatClient;
    expect(() => checkAgentOptions({ client: v2Client })).toThrow(/The chat client implements specification "v2"/);
    const v2Store = { specificationVersion: 'v2', get: async () => undefined, set: async () => '', delete: async () => false };
    expect(() => checkAgentOptions({ client, sessionStore: v2Store as never })).toThrow(/The session store implements specification "v2"/);
    expect(() =>
      checkAgentOptions({ client, compaction: { specificationVersion: 'v2', compact: (m: readonly unknown[]) => [...m] } as never }),
    ).toThrow(/The compaction strategy implements specification "v2"/);
  });

  it('refuses a redact that is not a function, naming what it got', () => {
    for (const redact of ['mask', { redact: () => [] }, null]) {
      expect(() => checkAgentOptions({ client, redact: redact as never })).toThrow(ConfigurationError);
    }
    expect(() => checkAgentOptions({ client, redact: 'mask' as never })).toThrow(/redact must be a function .*got "mask"/);
    expect(checkAgentOptions({ client, redact: (messages) => messages }).redact).toBeTypeOf('function');
  });

  it('refuses two agent tools with one name', () => {
    const a = defineTool({ name: 'lookup', parameters: { type: 'object' }, execute: () => 1 });
    const b = defineTool({ name: 'lookup', parameters: { type: 'object' }, execute: () => 2 });
    expect(() => checkAgentOptions({ client, tools: [a, b] })).toThrow(
      new ConfigurationError(
        'createAgent({ tools }) has two tools named "lookup"; the model is offered each name once: rename one or leave one out.',
      ),
    );
  });

  it("compiles the agent's tool schemas with the toolValidator: one it cannot compile fails createAgent, naming the tool", () => {
    const broken = defineTool({
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { $ref: '#/$defs/city' } } },
      execute: () => 'sunny',
    });
    expect(() => checkAgentOptions({ client, tools: [broken] })).not.toThrow();
    expect(() => checkAgentOptions({ client, tools: [broken], toolValidator: jsonSchemaValidator() })).toThrow(
      new ConfigurationError(
        'Tool "get_weather": its JSON Schema cannot be compiled: $ref "#/$defs/city" at #/properties/city does not resolve (only refs within the schema are supported). Fix the tool\'s `parameters`.',
      ),
    );
  });

  it('refuses a toolValidator that is not one, or speaks another contract version', () => {
    expect(() => checkAgentOptions({ client, toolValidator: {} as never })).toThrow(
      /`toolValidator` must implement ToolValidator \(a `compile` method\), e.g. jsonSchemaValidator\(\) from @ctx\/core\/json-schema/,
    );
    expect(() =>
      checkAgentOptions({
        client,
        toolValidator: { specificationVersion: 'v2', compile: () => () => ({ success: true, value: 1 }) } as never,
      }),
    ).toThrow(/The tool validator implements specification "v2"/);
  });
});
