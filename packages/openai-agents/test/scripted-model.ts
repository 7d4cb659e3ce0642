import { Usage, type AgentInputItem, type Model, type ModelRequest, type ModelResponse } from '@openai/agents-core';

/** Options of `ScriptedModel`. */
export interface ScriptedModelOptions {
  /** Whether each response starts with a reasoning item. Default true. */
  reasoning?: boolean;
}

/**
 * A model for the real Agents runner that needs no network: asked `weather in <city>?`, it calls
 * the `weather` tool; given the tool's result, it answers with it; otherwise it echoes the last user
 * text. Every response carries a reasoning item with provider data (unless `reasoning: false`). It
 * records each request's input, and refuses an input holding a tool output whose call is not before
 * it, as the Responses API does (HTTP 400 "No tool call found for function call output").
 */
export class ScriptedModel implements Model {
  readonly inputs: AgentInputItem[][] = [];
  readonly #reasoning: boolean;
  #calls = 0;

  constructor(options: ScriptedModelOptions = {}) {
    this.#reasoning = options.reasoning ?? true;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const input = typeof request.input === 'string' ? [{ role: 'user' as const, content: request.input }] : request.input;
    this.inputs.push(structuredClone(input));
    checkToolOutputs(input);
    const n = ++this.#calls;
    const last = input.at(-1);
    const reasoning: AgentInputItem[] = this.#reasoning
      ? [
          {
            type: 'reasoning',
            id: `rs_${n}`,
            content: [{ type: 'input_text', text: `thinking ${n}` }],
            providerData: { encryptedContent: `enc-${n}` },
          },
        ]
      : [];
    if (last?.type === 'function_call_result') {
      const output = typeof last.output === 'string' ? last.output : 'text' in last.output ? last.output.text : JSON.stringify(last.output);
      return response([...reasoning, assistant(`msg_${n}`, `It is ${output}.`)]);
    }
    const text = last && 'role' in last && last.role === 'user' ? userText(last) : '';
    const city = /^weather in (\w+)\?$/.exec(text)?.[1];
    if (city) {
      return response([
        ...reasoning,
        {
          type: 'function_call',
          id: `fc_${n}`,
          callId: `call_${n}`,
          name: 'weather',
          arguments: JSON.stringify({ city }),
          status: 'completed',
        },
      ]);
    }
    return response([...reasoning, assistant(`msg_${n}`, `re: ${text}`)]);
  }

  // biome-ignore lint/correctness/useYield: the runner only streams when asked to; these tests never do.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('ScriptedModel does not stream');
  }
}

/** Throws as the Responses API answers (400) an input with a function call output whose call is not before it. */
function checkToolOutputs(input: readonly AgentInputItem[]): void {
  const calls = new Set<string>();
  for (const item of input) {
    if (item.type === 'function_call') calls.add(item.callId);
    else if (item.type === 'function_call_result' && !calls.has(item.callId)) {
      throw new Error(`400 No tool call found for function call output with call_id ${item.callId}.`);
    }
  }
}

function response(output: AgentInputItem[]): ModelResponse {
  return {
    usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }),
    output: output as ModelResponse['output'],
  };
}

function assistant(id: string, text: string): AgentInputItem {
  return { type: 'message', id, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] };
}

function userText(item: Extract<AgentInputItem, { role: 'user' }>): string {
  if (typeof item.content === 'string') return item.content;
  return item.content.map((part) => (part.type === 'input_text' ? part.text : '')).join('');
}
