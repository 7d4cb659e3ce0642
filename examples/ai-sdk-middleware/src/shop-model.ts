// A stand-in for a real model, on the AI SDK's own MockLanguageModelV3: it reads its prompt the way a
// model would (the last message, the tools it was offered, the help page in the prompt) and
// records every prompt, so the demo can show what reached the model.
import type { LanguageModelV3CallOptions, LanguageModelV3Content, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';

/** One prompt message, summarized: its role and its text (tool calls and results as short notes). */
export interface PromptLine {
  role: string;
  text: string;
}

const HELP = /(Shipping to Norway[^.]*\.|Items can be returned[^.]*\.|The shop is open[^.]*\.)/;

export function createShopModel() {
  const prompts: PromptLine[][] = [];
  const answer = (options: LanguageModelV3CallOptions): LanguageModelV3Content[] => {
    const lines = options.prompt.map(summarize);
    prompts.push(lines);
    const last = options.prompt.at(-1);
    const offered = new Set((options.tools ?? []).map((t) => t.name));
    const lastText = lines.at(-1)?.text ?? '';
    const call = (toolName: string, input: object): LanguageModelV3Content => ({
      type: 'tool-call',
      toolCallId: `call_${prompts.length}`,
      toolName,
      input: JSON.stringify(input),
    });
    if (last?.role === 'user' && /order A7/.test(lastText) && offered.has('get_order')) return [call('get_order', { id: 'A7' })];
    if (last?.role === 'user' && /ticket/.test(lastText) && offered.has('openTicket'))
      return [call('openTicket', { subject: 'Order A7 arrived broken' })];
    const help = lines
      .map((l) => HELP.exec(l.text)?.[1])
      .filter(Boolean)
      .at(-1);
    const earlier = lines.filter((l) => l.role === 'user' && !l.text.startsWith('Retrieved context')).length - 1;
    const text =
      last?.role === 'tool' && /T-1001/.test(lastText)
        ? 'I opened ticket T-1001 for the broken order.'
        : `${/shipped/.test(lastText) ? 'Order A7 shipped on Monday. ' : ''}${help ?? 'I could not find that in our help pages.'} (I see ${earlier} earlier user message${earlier === 1 ? '' : 's'}.)`;
    return [{ type: 'text', text }];
  };
  const finish = (content: LanguageModelV3Content[]) => ({
    finishReason: { unified: content[0]?.type === 'tool-call' ? ('tool-calls' as const) : ('stop' as const), raw: undefined },
    usage: {
      inputTokens: { total: 100, noCache: 100, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 20, text: 20, reasoning: undefined },
    },
  });
  const model = new MockLanguageModelV3({
    provider: 'shop',
    modelId: 'shop-model',
    doGenerate: async (options) => {
      const content = answer(options);
      return { content, ...finish(content), warnings: [] };
    },
    doStream: async (options) => {
      const content = answer(options);
      const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      for (const part of content) {
        if (part.type === 'text') {
          parts.push({ type: 'text-start', id: 't' });
          for (const word of part.text.split(/(?<= )/)) parts.push({ type: 'text-delta', id: 't', delta: word });
          parts.push({ type: 'text-end', id: 't' });
        } else if (part.type === 'tool-call') parts.push(part);
      }
      parts.push({ type: 'finish', ...finish(content) });
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      });
      return { stream };
    },
  });
  return { model, prompts };
}

function summarize(message: LanguageModelV3CallOptions['prompt'][number]): PromptLine {
  if (message.role === 'system') return { role: 'system', text: message.content };
  const text = message.content
    .map((part) => {
      switch (part.type) {
        case 'text':
          return part.text;
        case 'tool-call':
          return `[calls ${part.toolName}(${JSON.stringify(part.input)})]`;
        case 'tool-result':
          return `[${part.toolName} result: ${JSON.stringify('value' in part.output ? part.output.value : part.output.type)}]`;
        default:
          return `[${part.type}]`;
      }
    })
    .join(' ');
  return { role: message.role, text };
}
