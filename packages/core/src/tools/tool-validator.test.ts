import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import type { Tool } from '../contracts/run-view.js';
import type { ToolValidator } from '../contracts/tool-validator.js';
import { checkUniqueToolNames, compileToolChecks } from './tool-validator.js';

const tool = (name: string, extra: Partial<Tool> = {}): Tool => ({ name, parameters: { type: 'object' }, ...extra });

describe('compileToolChecks', () => {
  it('compiles a check for each tool without its own validate, keyed by name', async () => {
    const compiled: string[] = [];
    const validator: ToolValidator = {
      compile: (t) => {
        compiled.push(t.name);
        return (args) => ({ success: false, issues: [`${t.name} got ${JSON.stringify(args)}`] });
      },
    };
    const standard = tool('standard', { validate: async (args) => ({ success: true, value: args }) });
    const checks = compileToolChecks([tool('plain'), standard], validator);
    expect(compiled).toEqual(['plain']);
    expect([...checks.keys()]).toEqual(['plain']);
    expect(await checks.get('plain')!({ a: 1 })).toEqual({ success: false, issues: ['plain got {"a":1}'] });
    expect(compileToolChecks([tool('plain')], undefined).size).toBe(0);
  });

  it('turns anything but a CtxError thrown by compile into a ConfigurationError naming the tool', () => {
    const throwing: ToolValidator = {
      compile: () => {
        throw new Error('unknown keyword "foo"');
      },
    };
    let thrown: unknown;
    try {
      compileToolChecks([tool('lookup')], throwing);
    } catch (error) {
      thrown = error;
    }
    expect(ConfigurationError.isInstance(thrown)).toBe(true);
    expect((thrown as Error).message).toBe(
      'The toolValidator could not compile the parameters of tool "lookup": Error: unknown keyword "foo". Fix the tool\'s JSON Schema.',
    );
    const own = new ConfigurationError('Tool "lookup": its JSON Schema cannot be compiled: nope.');
    expect(() =>
      compileToolChecks([tool('lookup')], {
        compile: () => {
          throw own;
        },
      }),
    ).toThrow(own);
    expect(() => compileToolChecks([tool('lookup')], { compile: () => undefined as never })).toThrow(
      /compile\(\) returned no check for tool "lookup"/,
    );
  });
});

describe('checkUniqueToolNames', () => {
  it('refuses two tools with one name, naming the name and where they were given', () => {
    expect(() => checkUniqueToolNames([tool('a'), tool('b')], 'createAgent({ tools })')).not.toThrow();
    expect(() => checkUniqueToolNames([tool('a'), tool('b'), tool('a')], 'createAgent({ tools })')).toThrow(
      new ConfigurationError(
        'createAgent({ tools }) has two tools named "a"; the model is offered each name once: rename one or leave one out.',
      ),
    );
  });
});
