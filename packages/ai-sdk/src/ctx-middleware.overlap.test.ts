// ctxMiddleware under overlap, aborts and windows, over a real redis-server on loopback (Redis
// history and Redis session store), on `ai` 5, 6 and 7.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APICallError } from '@ai-sdk/provider';
import { ConcurrencyError, type Message } from '@ctx/core';
import { RedisHistoryProvider, RedisSessionStore } from '@ctx/redis';
import { startRedisServer } from '@ctx/redis-test-server';
import * as ai6 from 'ai';
import * as ai5 from 'ai-v5';
import * as ai7 from 'ai-v7';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallOptions } from './language-model.js';
import { ctxMiddleware, type CtxMiddlewareOptions } from './ctx-middleware.js';
import { type ScriptedTurn, scriptedModel, type Version } from './test-helpers.js';

const SDKS: { name: string; version: Version; ai: typeof ai6 }[] = [
  { name: 'ai 5', version: 'v2', ai: ai5 as unknown as typeof ai6 },
  { name: 'ai 6', version: 'v3', ai: ai6 },
  { name: 'ai 7', version: 'v4', ai: ai7 as unknown as typeof ai6 },
];

let dir: string;
let server: Awaited<ReturnType<typeof startRedisServer>>;
let redis: Redis;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctx-ai-sdk-redis-'));
  server = await startRedisServer({ dir });
  redis = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1, commandTimeout: 5000 });
});
afterAll(async () => {
  await redis?.quit().catch(() => redis.disconnect());
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const chargeSchema = { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] as string[] } as const;

/** Each stored message as a line: role, then its text, calls and results. */
function lines(messages: readonly Message[]): string[] {
  return messages.map(
    (m) =>
      `${m.role}: ${m.contents
        .map((c) =>
          c.type === 'text'
            ? c.text
            : c.type === 'function-call'
              ? `call ${c.callId}`
              : c.type === 'function-result'
                ? `result ${c.callId} ${JSON.stringify(c.result)}`
                : c.type,
        )
        .join(' | ')}`,
  );
}

/** The texts of a prompt's user messages, and whether its last message holds tool results. */
function readPrompt(call: CallOptions): { users: string[]; results: string[] } {
  const users: string[] = [];
  const results: string[] = [];
  for (const m of call.prompt) {
    if (m.role === 'user') for (const p of m.content) if (p.type === 'text') users.push(p.text);
    if (m.role === 'tool') {
      for (const p of m.content as { type: string; output?: { value?: unknown } }[]) {
        if (p.type === 'tool-result') results.push(String(p.output?.value));
      }
    }
  }
  return { users, results };
}

/**
 * A model that charges whoever the newest user message names ("charge NAME"), then, once the
 * prompt holds that charge's result, answers with the result (any other message it answers with
 * "Re: ..."): its answers depend on the prompt, not on the order of the calls.
 */
function charging(call: CallOptions): ScriptedTurn {
  const { users, results } = readPrompt(call);
  const last = users.at(-1) ?? '';
  if (!last.startsWith('charge ')) return { text: `Re: ${last}` };
  const who = last.slice('charge '.length);
  const done = results.find((r) => r === `charged ${who}`);
  if (done) return { text: `Done: ${done}.` };
  return { toolCalls: [{ id: `call_${who}_${users.length}`, name: 'charge', input: { who } }] };
}

describe.each(SDKS)('ctxMiddleware over Redis with $name', ({ version, ai }) => {
  const setup = (options: CtxMiddlewareOptions & { respond?: (call: CallOptions) => ScriptedTurn; delayMs?: number } = {}) => {
    const { respond, delayMs, ...middlewareOptions } = options;
    const prefix = `t${Math.random().toString(36).slice(2, 8)}`;
    const history = new RedisHistoryProvider({ client: redis, prefix });
    const sessionStore = new RedisSessionStore({ client: redis, prefix });
    const scripted = scriptedModel(version, [], { ...(respond ? { respond } : {}), ...(delayMs ? { delayMs, streamDelayMs: 1 } : {}) });
    const middleware = ctxMiddleware({ contextProviders: [history], sessionStore, ...middlewareOptions });
    const wrapped = ai.wrapLanguageModel({ model: scripted.model as never, middleware });
    const stored = async (sessionId: string) => lines(await history.getMessages(sessionId, { state: {} }));
    return { ...scripted, wrapped, history, sessionStore, stored };
  };
  const chargeTool = (executed: string[], delayMs = 5) =>
    ai.tool({
      description: 'Charge a customer',
      inputSchema: ai.jsonSchema<{ who: string }>(chargeSchema),
      execute: async ({ who }: { who: string }) => {
        executed.push(who);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        return `charged ${who}`;
      },
    });

  it('serialises two concurrent tool loops on one session: each caller gets its own answer, each turn stored whole', async () => {
    for (let round = 0; round < 3; round++) {
      const { wrapped, stored } = setup({ respond: charging, delayMs: 3 });
      const executed: string[] = [];
      const ask = (who: string) =>
        ai.generateText({
          model: wrapped,
          prompt: `charge ${who}`,
          tools: { charge: chargeTool(executed) },
          stopWhen: ai.stepCountIs(4),
          maxRetries: 0,
          providerOptions: { ctx: { sessionId: 'shop' } },
        });
      const [ann, bo] = await Promise.all([ask('ann'), ask('bo')]);
      expect(ann.text).toBe('Done: charged ann.');
      expect(bo.text).toBe('Done: charged bo.');
      expect(executed.sort()).toEqual(['ann', 'bo']);
      const history = await stored('shop');
      const turn = (who: string, n: number) => [
        `user: charge ${who}`,
        `assistant: call call_${who}_${n}`,
        `tool: result call_${who}_${n} "charged ${who}"`,
        `assistant: Done: charged ${who}.`,
      ];
      // One turn after the other, whole; the second one's model saw the first.
      const first = history[0] === 'user: charge ann' ? 'ann' : 'bo';
      const second = first === 'ann' ? 'bo' : 'ann';
      expect(history).toEqual([...turn(first, 1), ...turn(second, 2)]);
    }
  });

  it('serialises them across processes too: two middlewares on one Redis store take turns through its lease', async () => {
    const one = setup({ respond: charging, delayMs: 3 });
    // A second middleware (another process) on the same store and history.
    const other = ai.wrapLanguageModel({
      model: scriptedModel(version, [], { respond: charging, delayMs: 3 }).model as never,
      middleware: ctxMiddleware({ contextProviders: [one.history], sessionStore: one.sessionStore }),
    });
    const executed: string[] = [];
    const ask = (model: typeof other, who: string) =>
      ai.generateText({
        model,
        prompt: `charge ${who}`,
        tools: { charge: chargeTool(executed) },
        stopWhen: ai.stepCountIs(4),
        maxRetries: 0,
        providerOptions: { ctx: { sessionId: 'shop' } },
      });
    const [ann, bo] = await Promise.all([ask(one.wrapped, 'ann'), ask(other, 'bo')]);
    expect([ann.text, bo.text]).toEqual(['Done: charged ann.', 'Done: charged bo.']);
    const history = await one.stored('shop');
    expect(history).toHaveLength(8);
    const first = history[0] === 'user: charge ann' ? 'ann' : 'bo';
    expect(history.slice(0, 4)).toEqual([
      `user: charge ${first}`,
      `assistant: call call_${first}_1`,
      `tool: result call_${first}_1 "charged ${first}"`,
      `assistant: Done: charged ${first}.`,
    ]);
  });

  it('keeps the session for the next step of a loop that ended in tool calls for stepGapMs; a call waiting longer than waitMs fails storing nothing', async () => {
    const executed: string[] = [];
    const loopEnds = (model: ai6.LanguageModel) =>
      ai.generateText({
        model,
        prompt: 'charge ann',
        tools: { charge: chargeTool(executed, 1) },
        maxRetries: 0, // the default stopWhen ends the loop after the step that calls the tool
        providerOptions: { ctx: { sessionId: 'gap' } },
      });
    const ask = (model: ai6.LanguageModel) =>
      ai.generateText({ model, prompt: 'Hello?', maxRetries: 0, providerOptions: { ctx: { sessionId: 'gap' } } });
    const held = setup({ respond: charging, stepGapMs: 60_000, runningTurns: { waitMs: 50 } });
    await loopEnds(held.wrapped);
    const refused = await ask(held.wrapped).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConcurrencyError);
    expect((refused as ConcurrencyError).turnRunning).toBe(true);
    expect((refused as ConcurrencyError).turnStored).toBe(false);
    expect(await held.stored('gap')).toEqual(['user: charge ann', 'assistant: call call_ann_1']);
    // With a short gap, the next turn waits for it, then runs.
    const short = setup({ respond: charging, stepGapMs: 30 });
    await loopEnds(short.wrapped);
    await ask(short.wrapped);
    expect((await short.stored('gap')).slice(2)).toEqual(['user: Hello?', 'assistant: Re: Hello?']);
  });

  it('loads the session once per turn, not per step of a tool loop, and takes its lease beside that load', async () => {
    const counted = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1, commandTimeout: 5000 });
    try {
      const names: string[] = [];
      const send = counted.sendCommand.bind(counted) as (...args: unknown[]) => unknown;
      (counted as unknown as { sendCommand: (...args: unknown[]) => unknown }).sendCommand = (...args: unknown[]) => {
        names.push(String((args[0] as { name: string }).name).toLowerCase());
        return send(...args);
      };
      const prefix = `t${Math.random().toString(36).slice(2, 8)}`;
      const scripted = scriptedModel(version, [], { respond: charging });
      const wrapped = ai.wrapLanguageModel({
        model: scripted.model as never,
        middleware: ctxMiddleware({
          contextProviders: [new RedisHistoryProvider({ client: counted, prefix })],
          sessionStore: new RedisSessionStore({ client: counted, prefix }),
        }),
      });
      const loop = (who: string) =>
        ai.generateText({
          model: wrapped,
          prompt: `charge ${who}`,
          tools: { charge: chargeTool([], 1) },
          stopWhen: ai.stepCountIs(3),
          maxRetries: 0,
          providerOptions: { ctx: { sessionId: 'counted' } },
        });
      // The first turns load the store's scripts into the server.
      await loop('ann');
      await loop('cy');
      names.length = 0;
      const res = await loop('bo');
      expect(res.steps).toHaveLength(2);
      await new Promise((resolve) => setTimeout(resolve, 20)); // the lease's release goes out after the answer
      // One session load (HMGET) for the two model calls; per call one history load (LRANGE), one history write and one session write (scripts); the lease and its release.
      expect(names.filter((n) => n === 'hmget')).toHaveLength(1);
      expect(names.filter((n) => n === 'lrange')).toHaveLength(2);
      expect(names).toHaveLength(1 + 2 * 3 + 2);
    } finally {
      counted.disconnect();
    }
  });

  it("lets another process take the next step of a turn held between its steps: the app's own loop across requests", async () => {
    const one = setup({ respond: charging, stepGapMs: 60_000, runningTurns: { waitMs: 200 } });
    const other = ai.wrapLanguageModel({
      model: scriptedModel(version, [], { respond: charging }).model as never,
      middleware: ctxMiddleware({
        contextProviders: [one.history],
        sessionStore: one.sessionStore,
        stepGapMs: 60_000,
        runningTurns: { waitMs: 200 },
      }),
    });
    const ctx = { ctx: { sessionId: 'relay' } };
    // Request 1: the model calls the tool; the AI SDK runs it and stops (one step).
    const first = await ai.generateText({
      model: one.wrapped,
      prompt: 'charge ann',
      tools: { charge: chargeTool([], 1) },
      maxRetries: 0,
      providerOptions: ctx,
    });
    // Request 2, in another process: the app sends its list with the tool's result.
    const messages = [{ role: 'user' as const, content: 'charge ann' }, ...(first.response.messages as ai6.ModelMessage[])];
    const second = await ai.generateText({ model: other, messages, maxRetries: 0, providerOptions: ctx });
    expect(second.text).toBe('Done: charged ann.');
    expect(await one.stored('relay')).toEqual([
      'user: charge ann',
      'assistant: call call_ann_1',
      'tool: result call_ann_1 "charged ann"',
      'assistant: Done: charged ann.',
    ]);
    // The turn is over: a new one runs at once in either process.
    expect((await ai.generateText({ model: one.wrapped, prompt: 'Thanks', maxRetries: 0, providerOptions: ctx })).text).toBe('Re: Thanks');
  });

  it('answers two concurrent calls without tools, each with its own answer, both stored', async () => {
    for (let round = 0; round < 3; round++) {
      const { wrapped, stored } = setup({ respond: (call) => ({ text: `Re: ${readPrompt(call).users.at(-1)}` }), delayMs: 3 });
      const ask = (prompt: string) =>
        ai.generateText({ model: wrapped, prompt, maxRetries: 0, providerOptions: { ctx: { sessionId: 'chat' } } });
      const [a, b] = await Promise.all([ask('one'), ask('two')]);
      expect([a.text, b.text]).toEqual(['Re: one', 'Re: two']);
      const history = await stored('chat');
      expect(history.slice().sort()).toEqual(['assistant: Re: one', 'assistant: Re: two', 'user: one', 'user: two']);
      // Each answer right after its question.
      expect(history.indexOf('assistant: Re: one')).toBe(history.indexOf('user: one') + 1);
      expect(history.indexOf('assistant: Re: two')).toBe(history.indexOf('user: two') + 1);
    }
  });

  it('keeps the tool result of a tool loop aborted while its second step streams: the call is never stored without it', async () => {
    const { wrapped, stored, calls } = setup({
      respond: (call) =>
        readPrompt(call).results.length
          ? { text: 'The charge went through and the receipt is on its way to you now.' }
          : { toolCalls: [{ id: 'call_pay', name: 'charge', input: { who: '5 EUR' } }] },
      delayMs: 1,
    });
    const controller = new AbortController();
    const executed: string[] = [];
    const result = ai.streamText({
      model: wrapped,
      prompt: 'Pay the invoice.',
      tools: { charge: chargeTool(executed, 1) },
      stopWhen: ai.stepCountIs(3),
      abortSignal: controller.signal,
      maxRetries: 0,
      providerOptions: { ctx: { sessionId: 'pay' } },
      onError: () => {},
    });
    let deltas = 0;
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta' && ++deltas === 2) controller.abort();
    }
    expect(executed).toEqual(['5 EUR']);
    expect(calls).toHaveLength(2);
    expect(await stored('pay')).toEqual(['user: Pay the invoice.', 'assistant: call call_pay', 'tool: result call_pay "charged 5 EUR"']);
    // The next turn is sent the whole turn so far, result included, and nothing is stored twice.
    await ai.generateText({ model: wrapped, prompt: 'Did it work?', maxRetries: 0, providerOptions: { ctx: { sessionId: 'pay' } } });
    const history = await stored('pay');
    expect(history.slice(0, 4)).toEqual([
      'user: Pay the invoice.',
      'assistant: call call_pay',
      'tool: result call_pay "charged 5 EUR"',
      'user: Did it work?',
    ]);
    expect(history).toHaveLength(5);
  });

  it("stores a step's tool results once when the AI SDK retries the step after a failure", async () => {
    let failed = false;
    const busy = new APICallError({ message: 'Overloaded', url: 'http://x', requestBodyValues: {}, statusCode: 529, isRetryable: true });
    const { wrapped, stored } = setup({
      respond: (call) => {
        if (readPrompt(call).results.length && !failed) {
          failed = true;
          return { error: busy };
        }
        return charging(call);
      },
    });
    const res = await ai.generateText({
      model: wrapped,
      prompt: 'charge ann',
      tools: { charge: chargeTool([], 1) },
      stopWhen: ai.stepCountIs(3),
      maxRetries: 1,
      providerOptions: { ctx: { sessionId: 'retry' } },
    });
    expect(failed).toBe(true);
    expect(res.text).toBe('Done: charged ann.');
    expect(await stored('retry')).toEqual([
      'user: charge ann',
      'assistant: call call_ann_1',
      'tool: result call_ann_1 "charged ann"',
      'assistant: Done: charged ann.',
    ]);
  });

  it('stores nothing twice for an app that sends a window of its own message list', async () => {
    const { wrapped, stored, calls } = setup({ respond: (call) => ({ text: `Re: ${readPrompt(call).users.at(-1)}` }) });
    const messages: ai6.ModelMessage[] = [];
    for (let i = 1; i <= 7; i++) {
      messages.push({ role: 'user', content: `q${i}` });
      const res = await ai.generateText({
        model: wrapped,
        messages: messages.slice(-3),
        maxRetries: 0,
        providerOptions: { ctx: { sessionId: 'window' } },
      });
      messages.push(...(res.response.messages as ai6.ModelMessage[]));
    }
    expect(messages).toHaveLength(14);
    const history = await stored('window');
    expect(history).toEqual(Array.from({ length: 7 }, (_, i) => [`user: q${i + 1}`, `assistant: Re: q${i + 1}`]).flat());
    // The model got the stored conversation once: the window's messages are not repeated after it.
    expect(readPrompt(calls[6]!).users).toEqual(['q1', 'q2', 'q3', 'q4', 'q5', 'q6', 'q7']);
  });

  it('frees the session of a stream nobody reads after runningTurns.leaseMs: the next call runs, a late reader gets a ConcurrencyError', async () => {
    let started = () => {};
    const called = new Promise<void>((resolve) => (started = resolve));
    const { wrapped, stored } = setup({
      respond: (call) => {
        started();
        const last = readPrompt(call).users.at(-1);
        return { text: last === 'first' ? 'A long answer, word by word. '.repeat(20) : `Re: ${last}` };
      },
      delayMs: 1,
      runningTurns: { leaseMs: 100, waitMs: 5_000 },
    });
    const ctx = { ctx: { sessionId: 'unread' } };
    const unread = ai.streamText({ model: wrapped, prompt: 'first', maxRetries: 0, providerOptions: ctx, onError: () => {} });
    await called; // the unread call holds the session
    // ai 5 and 6 read the model's stream themselves; ai 7 reads it only as the app does.
    const next = await ai.generateText({ model: wrapped, prompt: 'second', maxRetries: 0, providerOptions: ctx });
    expect(next.text).toBe('Re: second');
    expect((await stored('unread')).slice(-2)).toEqual(['user: second', 'assistant: Re: second']);
    const parts: { type: string; error?: unknown }[] = [];
    for await (const part of unread.fullStream) parts.push(part);
    if (version === 'v4') {
      expect(parts.find((p) => p.type === 'error')?.error).toBeInstanceOf(ConcurrencyError);
      expect(await stored('unread')).toEqual(['user: second', 'assistant: Re: second']);
    } else expect(parts.some((p) => p.type === 'error')).toBe(false);
  });

  it('stores nothing for a call aborted before its first step, and leaves the session free', async () => {
    const { wrapped, stored, calls } = setup({ respond: (call) => ({ text: `Re: ${readPrompt(call).users.at(-1)}` }) });
    const ctx = { ctx: { sessionId: 'early' } };
    const controller = new AbortController();
    controller.abort(new Error('the user left'));
    const parts: string[] = [];
    const streamed = ai.streamText({
      model: wrapped,
      prompt: 'first',
      abortSignal: controller.signal,
      maxRetries: 0,
      providerOptions: ctx,
      onError: () => {},
    });
    for await (const part of streamed.fullStream) parts.push(part.type);
    expect(parts).not.toContain('text-delta');
    await expect(
      ai.generateText({ model: wrapped, prompt: 'first', abortSignal: controller.signal, maxRetries: 0, providerOptions: ctx }),
    ).rejects.toThrow('the user left');
    expect(calls).toHaveLength(0);
    expect(await stored('early')).toEqual([]);
    expect((await ai.generateText({ model: wrapped, prompt: 'second', maxRetries: 0, providerOptions: ctx })).text).toBe('Re: second');
    expect(await stored('early')).toEqual(['user: second', 'assistant: Re: second']);
  });

  it('stores a resent list once: a regenerated answer, a repeated request and an edited message add only their last message', async () => {
    const { wrapped, stored } = setup({ respond: (call) => ({ text: `Re: ${readPrompt(call).users.at(-1)}` }), delayMs: 3 });
    const ask = (messages: ai6.ModelMessage[]) =>
      ai.generateText({ model: wrapped, messages, maxRetries: 0, providerOptions: { ctx: { sessionId: 'resent' } } });
    const messages: ai6.ModelMessage[] = [];
    // The user says "yes" twice; the app sends its whole list.
    for (const q of ['yes', 'q2', 'yes']) {
      messages.push({ role: 'user', content: q });
      messages.push(...((await ask(messages)).response.messages as ai6.ModelMessage[]));
    }
    // The last answer regenerated: the list up to the question again (its first messages are the newest stored).
    expect((await ask(messages.slice(0, -1))).text).toBe('Re: yes');
    // A double submit of the whole list: the second request waits, then is a turn of its own.
    const twice = [...messages, { role: 'user' as const, content: 'q4' }];
    const answers = await Promise.all([ask(twice), ask(twice)]);
    expect(answers.map((a) => a.text)).toEqual(['Re: q4', 'Re: q4']);
    // An earlier message edited, sent with the list before it; then a "yes" sent alone.
    await ask([...messages.slice(0, 2), { role: 'user', content: 'q2 edited' }]);
    await ask([{ role: 'user', content: 'yes' }]);
    expect(await stored('resent')).toEqual([
      'user: yes',
      'assistant: Re: yes',
      'user: q2',
      'assistant: Re: q2',
      'user: yes',
      'assistant: Re: yes',
      'user: yes',
      'assistant: Re: yes',
      'user: q4',
      'assistant: Re: q4',
      'user: q4',
      'assistant: Re: q4',
      'user: q2 edited',
      'assistant: Re: q2 edited',
      'user: yes',
      'assistant: Re: yes',
    ]);
  });
});
