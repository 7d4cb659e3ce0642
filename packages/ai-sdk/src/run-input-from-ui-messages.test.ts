import { InvalidInputError } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { runInputFromUIMessages } from './run-input-from-ui-messages.js';

const pending = [{ callId: 'call-1', toolName: 'book_table', arguments: '{"people":4}' }];

describe('runInputFromUIMessages', () => {
  it('takes the last user message as the input, with the id the page gave it, text and files', () => {
    const { input, approvals } = runInputFromUIMessages([
      { id: 'old', role: 'user', parts: [{ type: 'text', text: 'ignored: ctx keeps the history' }] },
      {
        id: 'u-2',
        role: 'user',
        parts: [
          { type: 'text', text: 'What is on this menu?' },
          { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,iVBORw0KGgo=', filename: 'menu.png' },
          { type: 'file', mediaType: 'application/pdf', url: 'https://example.com/menu.pdf' },
          { type: 'data-note', data: { page: 'only' } },
        ],
      },
    ]);
    expect(approvals).toEqual([]);
    expect(input).toHaveLength(1);
    expect(input[0]).toMatchObject({
      id: 'u-2',
      role: 'user',
      contents: [
        { type: 'text', text: 'What is on this menu?' },
        { type: 'data', mediaType: 'image/png', data: 'iVBORw0KGgo=', name: 'menu.png' },
        { type: 'data', mediaType: 'application/pdf', uri: 'https://example.com/menu.pdf' },
      ],
    });
  });

  it('reads approval answers (ai 6 and later) from the last assistant message, with the reason', () => {
    const { input, approvals } = runInputFromUIMessages([
      {
        id: 'a-1',
        role: 'assistant',
        parts: [
          { type: 'step-start' },
          { type: 'tool-weather', toolCallId: 'call-0', state: 'output-available', input: {}, output: 'Sunny' },
          {
            type: 'tool-book_table',
            toolCallId: 'call-1',
            state: 'approval-responded',
            input: {},
            approval: { id: 'call-1', approved: false, reason: 'no' },
          },
          {
            type: 'dynamic-tool',
            toolName: 'x',
            toolCallId: 'call-2',
            state: 'approval-responded',
            input: {},
            approval: { id: 'call-2', approved: true },
          },
        ],
      },
    ]);
    expect(input).toEqual([]);
    expect(approvals).toEqual([
      { callId: 'call-1', approved: false, reason: 'no' },
      { callId: 'call-2', approved: true },
    ]);
  });

  it('reads an ai 5 answer (a tool result { approved }) only for a call that waits', () => {
    const message = {
      id: 'a-1',
      role: 'assistant',
      parts: [
        { type: 'tool-weather', toolCallId: 'call-0', state: 'output-available', input: {}, output: { approved: 'not an answer' } },
        { type: 'tool-book_table', toolCallId: 'call-1', state: 'output-available', input: {}, output: { approved: true, reason: 'fine' } },
      ],
    };
    expect(runInputFromUIMessages([message], { pendingApprovals: pending }).approvals).toEqual([
      { callId: 'call-1', approved: true, reason: 'fine' },
    ]);
    expect(() => runInputFromUIMessages([message])).toThrow(/answers no approval/);
    const bad = { ...message, parts: [{ ...message.parts[1], output: 'yes' }] };
    expect(() => runInputFromUIMessages([bad], { pendingApprovals: pending })).toThrow(/"call-1".*not \{ approved: boolean/);
  });

  it('refuses what is not a useChat request with an InvalidInputError naming the place', () => {
    const cases: [unknown, RegExp][] = [
      [undefined, /non-empty array/],
      [[], /non-empty array/],
      [[null], /messages\[0\] must be a UI message object/],
      [[{ role: 'user', parts: [] }], /messages\[0\]\.id must be a non-empty string/],
      [[{ id: 'u', role: 'user', parts: 'hi' }], /messages\[0\]\.parts must be an array/],
      [[{ id: 'u', role: 'system', parts: [] }], /role must be "user" or "assistant", got "system"/],
      [[{ id: 'u', role: 'user', parts: [] }], /"u"\) has no text or file part/],
      [[{ id: 'u', role: 'user', parts: [{ type: 'text', text: 1 }] }], /parts\[0\]\.text must be a string/],
      [[{ id: 'u', role: 'user', parts: [{ type: 'file', url: 1, mediaType: 'x' }] }], /parts\[0\] is a file part/],
      [
        [{ id: 'a', role: 'assistant', parts: [{ type: 'tool-x', toolCallId: 'c', state: 'approval-responded' }] }],
        /without approval\.approved/,
      ],
    ];
    for (const [messages, message] of cases) {
      let thrown: unknown;
      try {
        runInputFromUIMessages(messages);
      } catch (error) {
        thrown = error;
      }
      expect(InvalidInputError.isInstance(thrown), String(message)).toBe(true);
      expect((thrown as Error).message).toMatch(message);
    }
    const many = Array.from({ length: 3 }, (_, i) => ({ id: `u${i}`, role: 'user', parts: [{ type: 'text', text: 'x' }] }));
    expect(() => runInputFromUIMessages(many, { maxMessages: 2 })).toThrow(/3 UI messages; at most 2/);
  });
});
