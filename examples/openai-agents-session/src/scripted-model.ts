import { type AgentInputItem, type Model, type ModelRequest, type ModelResponse, Usage } from '@openai/agents';

/** A model that needs no network: it calls `weather` when asked about the weather, reports the tool's answer, and otherwise says how many items it was sent. */
export class ScriptedModel implements Model {
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const input = typeof request.input === 'string' ? [{ role: 'user' as const, content: request.input }] : request.input;
    const last = input.at(-1);
    const usage = new Usage({ requests: 1, inputTokens: input.length, outputTokens: 1, totalTokens: input.length + 1 });
    if (last?.type === 'function_call_result') {
      const output = typeof last.output === 'string' ? last.output : 'text' in last.output ? last.output.text : '';
      return { usage, output: [say(`It is ${output}.`)] };
    }
    const asked = last && 'role' in last && last.role === 'user' && typeof last.content === 'string' ? last.content : '';
    const city = /weather in (\w+)/i.exec(asked)?.[1];
    if (city) {
      return {
        usage,
        output: [
          {
            type: 'function_call',
            callId: `call_${input.length}`,
            name: 'weather',
            arguments: JSON.stringify({ city }),
            status: 'completed',
          },
        ],
      };
    }
    return { usage, output: [say(`I was sent ${input.length} items of this conversation.`)] };
  }

  // biome-ignore lint/correctness/useYield: the example never streams.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('ScriptedModel does not stream');
  }
}

function say(text: string): AgentInputItem {
  return { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] };
}
