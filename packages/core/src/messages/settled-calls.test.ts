import { describe, expect, it } from 'vitest';
import { createAgent } from '../run/create-agent.js';
import { answerInterruptedCalls } from '../run/interrupted-calls.js';
import { pairResults } from '../run/pair-results.js';
import type { FunctionCallContent, FunctionResultContent } from '../contracts/message.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { Message } from './message.js';
import { CallScan, isMarkedSettled, isSettled, markSettled } from './settled-calls.js';

const call = (callId: string): FunctionCallContent => ({ type: 'function-call', callId, name: 'f', arguments: '{}' });
const result = (callId: string): FunctionResultContent => ({ type: 'function-result', callId, name: 'f', result: callId });
const calls = (...ids: string[]) => Message.assistant(ids.map(call));
const results = (...ids: string[]) => Message.tool(ids.map(result));

describe('isSettled', () => {
  it('accepts calls answered right after their message, over one or several tool messages', () => {
    expect(isSettled([Message.user('q'), calls('a', 'b'), results('a'), results('b'), Message.assistant('done')])).toBe(true);
    expect(isSettled([])).toBe(true);
  });

  it('accepts a message answering its own calls (server-side tools)', () => {
    expect(isSettled([Message.assistant([call('s'), result('s'), { type: 'text', text: 'found' }]), Message.user('q')])).toBe(true);
  });

  it('rejects an open call, a result apart from its call, a result without a call and a result of an earlier message', () => {
    expect(isSettled([calls('a')])).toBe(false);
    expect(isSettled([calls('a'), Message.user('meanwhile'), results('a')])).toBe(false);
    expect(isSettled([results('x')])).toBe(false);
    expect(isSettled([calls('a'), results('a'), calls('b'), results('a', 'b')])).toBe(false);
    expect(isSettled([Message.assistant([result('x')])])).toBe(false);
  });

  it('is true of settled lists one after the other, and a scan resumes where it stopped', () => {
    const first = [Message.user('q'), calls('a'), results('a')];
    const second = [calls('b'), results('b'), Message.assistant('ok')];
    const scan = new CallScan();
    for (const m of first) scan.add(m);
    expect(scan.settled).toBe(true);
    for (const m of second) scan.add(m);
    expect(scan.settled).toBe(isSettled([...first, ...second]));
    expect(scan.settled).toBe(true);
  });

  it('trusts a list marked settled without reading it', () => {
    const open = [calls('a')];
    expect(isMarkedSettled(open)).toBe(false);
    expect(isSettled(markSettled(open))).toBe(true);
  });

  it('holds only of lists that pairResults leaves as they are and where answerInterruptedCalls answers nothing', () => {
    // Random short conversations over a few call ids: every settled one must need no repair.
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const ids = ['a', 'b', 'c'];
    const pick = () => ids[random(ids.length)]!;
    const kinds = [
      () => Message.user('u'),
      () => Message.assistant('t'),
      () => calls(pick()),
      () => calls(pick(), pick()),
      () => results(pick()),
      () => results(pick(), pick()),
      () => Message.assistant([call(pick()), result(pick())]),
      (): Message => ({ ...Message.tool(result(pick())), contents: [result(pick()), { type: 'text', text: 'note' }] }),
    ];
    let settled = 0;
    for (let n = 0; n < 5000; n++) {
      const list = Array.from({ length: 1 + random(7) }, () => kinds[random(kinds.length)]!());
      if (!isSettled(list)) continue;
      settled++;
      expect(pairResults(list)).toBe(list);
      expect(answerInterruptedCalls(list)).toEqual({ messages: list, answered: 0 });
    }
    expect(settled).toBeGreaterThan(200);
  });
});

describe('runs and settled history', () => {
  it('still answers a call an interrupted run left open in a stored history that was settled before', async () => {
    const client = new ScriptedChatClient({ replies: ['one', 'two', 'three'] });
    const warnings: string[] = [];
    const agent = createAgent({ client, onEvent: (e) => (e.type === 'warning' ? warnings.push(e.code) : undefined) });
    const session = agent.createSession();
    await agent.run('first', { session });
    await agent.run('second', { session });
    // A killed run stored its call and nothing after it.
    (session.state.memory!.messages as unknown as Message[]).push(Message.assistant([call('lost')]));
    await agent.run('third', { session });
    expect(warnings).toEqual(['interrupted-calls']);
    const sent = client.calls[2]!.messages;
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'assistant', 'tool', 'user']);
  });
});
