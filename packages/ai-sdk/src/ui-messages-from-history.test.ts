import { Message } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { uiMessagesFromHistory } from './ui-messages-from-history.js';

const call = (callId: string, name: string, args: string) => ({ type: 'function-call' as const, callId, name, arguments: args });

describe('uiMessagesFromHistory', () => {
  it('makes one UI message per user message and one per assistant turn, a step per model call, results merged into their calls', () => {
    const history = [
      Message.system('Be brief.', { id: 's' }),
      Message.user(
        [
          { type: 'text', text: 'Photo:' },
          { type: 'data', mediaType: 'image/png', data: 'AAA=', name: 'a.png' },
        ],
        { id: 'u1' },
      ),
      Message.assistant(
        [
          { type: 'reasoning', text: 'thinking' },
          { type: 'text', text: 'Looking.' },
          call('c1', 'weather', '{"city":"Oslo"}'),
          call('c2', 'weather', 'not json'),
        ],
        {
          id: 'a1',
        },
      ),
      Message.tool(
        [
          { type: 'function-result', callId: 'c1', result: { celsius: -3 } },
          { type: 'function-result', callId: 'c2', result: { error: 'bad arguments' }, isError: true },
          { type: 'function-result', callId: 'elsewhere', result: 'no call for it' },
        ],
        { id: 't1' },
      ),
      Message.assistant(
        [
          { type: 'text', text: '' },
          { type: 'refusal', refusal: 'I will not guess.' },
        ],
        { id: 'a2' },
      ),
      Message.user('Thanks', { id: 'u2' }),
      Message.assistant('You are welcome.', { id: 'a3' }),
    ];
    expect(uiMessagesFromHistory(history, { messageMetadata: (messages) => ({ stored: messages.map((m) => m.id) }) })).toEqual([
      {
        id: 'u1',
        role: 'user',
        metadata: { stored: ['u1'] },
        parts: [
          { type: 'text', text: 'Photo:' },
          { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,AAA=', filename: 'a.png' },
        ],
      },
      {
        id: 'a1',
        role: 'assistant',
        metadata: { stored: ['a1', 't1', 'a2'] },
        parts: [
          { type: 'step-start' },
          { type: 'text', text: 'Looking.', state: 'done' },
          { type: 'tool-weather', toolCallId: 'c1', state: 'output-available', input: { city: 'Oslo' }, output: { celsius: -3 } },
          { type: 'tool-weather', toolCallId: 'c2', state: 'output-error', input: 'not json', errorText: 'bad arguments' },
          { type: 'step-start' },
          { type: 'text', text: 'I will not guess.', state: 'done' },
        ],
      },
      { id: 'u2', role: 'user', metadata: { stored: ['u2'] }, parts: [{ type: 'text', text: 'Thanks' }] },
      {
        id: 'a3',
        role: 'assistant',
        metadata: { stored: ['a3'] },
        parts: [{ type: 'step-start' }, { type: 'text', text: 'You are welcome.', state: 'done' }],
      },
    ]);
  });

  it('shows waiting, approved and denied calls, in either approval mode', () => {
    const history = [
      Message.user('Two tables', { id: 'u1' }),
      Message.assistant([call('c1', 'book', '{"people":2}'), call('c2', 'book', '{"people":3}'), call('c3', 'book', '')], { id: 'a1' }),
      Message.tool(
        [
          { type: 'function-result', callId: 'c1', result: 'booked' },
          { type: 'function-result', callId: 'c2', result: { error: 'Not run: the call was denied: too late' }, isError: true },
        ],
        { id: 't1' },
      ),
    ];
    const pendingApprovals = [{ callId: 'c3', toolName: 'book', arguments: '' }];
    const tools = [{ name: 'book', needsApproval: true }];
    expect(uiMessagesFromHistory(history, { pendingApprovals, tools })[1]!.parts.slice(1)).toEqual([
      {
        type: 'tool-book',
        toolCallId: 'c1',
        state: 'output-available',
        input: { people: 2 },
        output: 'booked',
        approval: { id: 'c1', approved: true },
      },
      {
        type: 'tool-book',
        toolCallId: 'c2',
        state: 'output-denied',
        input: { people: 3 },
        approval: { id: 'c2', approved: false, reason: 'too late' },
      },
      { type: 'tool-book', toolCallId: 'c3', state: 'approval-requested', input: {}, approval: { id: 'c3' } },
    ]);
    expect(uiMessagesFromHistory(history, { pendingApprovals, tools, approvals: 'input-available' })[1]!.parts.slice(1)).toEqual([
      { type: 'tool-book', toolCallId: 'c1', state: 'output-available', input: { people: 2 }, output: 'booked' },
      {
        type: 'tool-book',
        toolCallId: 'c2',
        state: 'output-error',
        input: { people: 3 },
        errorText: 'Not run: the call was denied: too late',
      },
      { type: 'tool-book', toolCallId: 'c3', state: 'input-available', input: {} },
    ]);
  });
});
