import { Message, SessionStateError, type JsonValue } from '@ctx/core';
import type { AgentInputItem } from '@openai/agents-core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { itemsArbitrary } from '../test/items-arbitrary.js';
import { AGENTS_ITEM_KEY, itemToMessage, messageToItems } from './agent-items.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);

/** An item through a ctx message, stored as JSON text and checked as every history provider checks it, and back. */
function roundTrip(item: AgentInputItem): AgentInputItem[] {
  const stored = JSON.parse(JSON.stringify(itemToMessage(item))) as unknown;
  return messageToItems(Message.parse(stored));
}

describe('itemToMessage / messageToItems', () => {
  it('random item lists of every kind round-trip exactly through plain JSON messages', () => {
    fc.assert(
      fc.property(itemsArbitrary, (items) => {
        expect(items.flatMap(roundTrip)).toStrictEqual(items);
      }),
      { numRuns: RUNS },
    );
  });

  it('text, function calls, results and reasoning become ctx contents, the rest rides in metadata', () => {
    const user = itemToMessage({ role: 'user', content: 'hi' }, { id: 'm1', createdAt: '2026-01-01T00:00:00.000Z' });
    expect(user).toEqual({
      id: 'm1',
      role: 'user',
      contents: [{ type: 'text', text: 'hi' }],
      createdAt: '2026-01-01T00:00:00.000Z',
      metadata: { ctx: { sourceId: 'input', sourceType: 'input' }, [AGENTS_ITEM_KEY]: { kind: 'message', rest: {} } },
    });
    const call = itemToMessage({ type: 'function_call', id: 'fc_1', callId: 'c1', name: 'f', arguments: '{"a":1}', status: 'completed' });
    expect(call.role).toBe('assistant');
    expect(call.contents).toEqual([{ type: 'function-call', callId: 'c1', name: 'f', arguments: '{"a":1}' }]);
    expect(call.metadata?.[AGENTS_ITEM_KEY]).toEqual({
      kind: 'function_call',
      rest: { type: 'function_call', id: 'fc_1', status: 'completed' },
    });
    const result = itemToMessage({
      type: 'function_call_result',
      callId: 'c1',
      name: 'f',
      status: 'completed',
      output: { type: 'text', text: 'ok' },
    });
    expect(result.role).toBe('tool');
    expect(result.contents).toEqual([{ type: 'function-result', callId: 'c1', name: 'f', result: { type: 'text', text: 'ok' } }]);
    const reasoning = itemToMessage({ type: 'reasoning', content: [{ type: 'input_text', text: 'hmm' }] });
    expect(reasoning.contents).toEqual([{ type: 'reasoning', text: 'hmm' }]);
    const hosted = itemToMessage({ type: 'hosted_tool_call', name: 'web_search_call', status: 'completed', id: 'ws_1' });
    expect(hosted.contents).toEqual([]);
    expect(hosted.metadata?.[AGENTS_ITEM_KEY]).toEqual({
      kind: 'item',
      rest: { type: 'hosted_tool_call', name: 'web_search_call', status: 'completed', id: 'ws_1' },
    });
  });

  it('bytes are stored as base64 and objects that look like tags are escaped', () => {
    const item = {
      type: 'function_call_result',
      callId: 'c',
      name: 'f',
      status: 'completed',
      output: { type: 'image', image: { data: new Uint8Array([0, 255, 7]), mediaType: 'image/png' } },
      providerData: { a: { $bytes: 'not bytes' }, b: { $object: 1 } },
    } as AgentInputItem;
    const message = itemToMessage(item);
    expect(JSON.stringify(message)).toContain('"$bytes":"AP8H"');
    expect(roundTrip(item)).toStrictEqual([item]);
  });

  it('a new random id per message, since Agents item ids are not unique (Chat Completions items all share one)', () => {
    const item: AgentInputItem = { type: 'message', id: '__fake_id__', role: 'assistant', status: 'completed', content: [] };
    expect(itemToMessage(item).id).not.toBe(itemToMessage(item).id);
  });

  it('refuses metadata that no longer matches the contents with a SessionStateError', () => {
    const message = itemToMessage({ type: 'function_call', callId: 'c', name: 'f', arguments: '{}', status: 'completed' });
    expect(() => messageToItems({ ...message, contents: [] })).toThrow(SessionStateError);
    const text = itemToMessage({ role: 'user', content: [{ type: 'input_text', text: 'a' }] });
    expect(() => messageToItems({ ...text, contents: [...text.contents, { type: 'text', text: 'b' }] })).toThrow(/1 text contents|2 text/);
  });

  it('reads messages a ctx agent stored as the matching items', () => {
    const data = (mediaType: string, name?: string) => ({ type: 'data', mediaType, data: 'AAAA', ...(name ? { name } : {}) }) as const;
    expect(messageToItems(Message.system('be brief'))).toEqual([{ role: 'system', content: 'be brief' }]);
    expect(messageToItems(Message.user('hello'))).toEqual([{ role: 'user', content: 'hello' }]);
    expect(messageToItems(Message.user([{ type: 'text', text: 'see' }, data('image/png'), data('application/pdf', 'a.pdf')]))).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'see' },
          { type: 'input_image', image: 'data:image/png;base64,AAAA' },
          { type: 'input_file', file: 'data:application/pdf;base64,AAAA', filename: 'a.pdf' },
        ],
      },
    ]);
    const result: JsonValue = { hits: [1] };
    expect(
      messageToItems(
        Message.assistant([
          { type: 'reasoning', text: 'think' },
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
          { type: 'function-call', callId: 'c1', name: 'f', arguments: '{}' },
        ]),
      ),
    ).toEqual([
      { type: 'reasoning', content: [{ type: 'input_text', text: 'think' }] },
      {
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [
          { type: 'output_text', text: 'a' },
          { type: 'output_text', text: 'b' },
        ],
      },
      { type: 'function_call', callId: 'c1', name: 'f', arguments: '{}', status: 'completed' },
    ]);
    expect(messageToItems(Message.tool({ type: 'function-result', callId: 'c1', name: 'f', result }))).toEqual([
      { type: 'function_call_result', callId: 'c1', name: 'f', status: 'completed', output: '{"hits":[1]}' },
    ]);
  });
});
