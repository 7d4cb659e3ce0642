import { Message } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { errorType, genAiMessages, genAiProviderName } from './gen-ai.js';

describe('genAiProviderName', () => {
  it('maps ctx and AI SDK provider names to the conventions well-known values', () => {
    expect(
      [
        'openai',
        'azure-openai',
        'openai.responses',
        'anthropic.messages',
        'google.generative-ai',
        'google.vertex.chat',
        'amazon-bedrock',
        'mistral.chat',
        'xai.chat',
        'groq.chat',
      ].map(genAiProviderName),
    ).toEqual([
      'openai',
      'azure.ai.openai',
      'openai',
      'anthropic',
      'gcp.gemini',
      'gcp.vertex_ai',
      'aws.bedrock',
      'mistral_ai',
      'x_ai',
      'groq',
    ]);
  });

  it('keeps a provider it does not know', () => {
    expect(genAiProviderName('scripted')).toBe('scripted');
    expect(genAiProviderName('my-llm')).toBe('my-llm');
  });
});

describe('genAiMessages', () => {
  it('maps every kind of content to a conventions part', () => {
    const message = Message.user([
      { type: 'text', text: 'Look' },
      { type: 'data', mediaType: 'image/png', uri: 'https://example.com/a.png' },
      { type: 'data', mediaType: 'application/pdf', data: 'JVBERi0=' },
      { type: 'refusal', refusal: 'No.' },
      { type: 'function-call', callId: 'c1', name: 'f', arguments: 'not json' },
      { type: 'function-result', callId: 'c1', result: 'done' },
      { type: 'hosted-tool', item: { type: 'web_search_call', id: 'ws_1' } },
    ]);
    expect(JSON.parse(genAiMessages([message], 'length'))).toEqual([
      {
        role: 'user',
        finish_reason: 'length',
        parts: [
          { type: 'text', content: 'Look' },
          { type: 'uri', uri: 'https://example.com/a.png', mime_type: 'image/png', modality: 'image' },
          { type: 'blob', content: 'JVBERi0=', mime_type: 'application/pdf', modality: 'application/pdf' },
          { type: 'refusal', content: 'No.' },
          { type: 'tool_call', id: 'c1', name: 'f', arguments: 'not json' },
          { type: 'tool_call_response', id: 'c1', response: 'done' },
          { type: 'server_tool_call', name: 'web_search_call' },
        ],
      },
    ]);
  });
});

describe('errorType', () => {
  it('is the class name, or _OTHER when there is none worth naming', () => {
    expect(errorType(new TypeError('x'))).toBe('TypeError');
    expect(errorType(new DOMException('stop', 'AbortError'))).toBe('AbortError');
    expect(errorType(new Error('plain'))).toBe('_OTHER');
    expect(errorType('a string')).toBe('_OTHER');
    expect(errorType(undefined)).toBe('_OTHER');
  });
});
