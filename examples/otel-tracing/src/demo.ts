import { type ContextProvider, createAgent, createAuditProvider, defineTool, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { createOtelEventHandler } from '@ctx/otel';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { formatSpanTree } from './span-tree.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const weather = defineTool({
  name: 'get_weather',
  description: 'The forecast for a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: async ({ city }: { city: string }) => {
    await pause(8);
    return { city, forecast: 'sunny, 24 °C' };
  },
});

const flights = defineTool({
  name: 'find_flights',
  description: 'Flights between two cities.',
  parameters: { type: 'object', properties: { from: { type: 'string' }, to: { type: 'string' } }, required: ['from', 'to'] },
  execute: async ({ from, to }: { from: string; to: string }) => {
    await pause(12);
    return [{ flight: 'TP 557', from, to, departs: 'Fri 18:05' }];
  },
});

/** A retrieval provider: travel-guide passages before every model call. */
const guides: ContextProvider = {
  sourceId: 'guides',
  async beforeRun({ context }) {
    await pause(4);
    context.extendMessages('guides', [
      Message.system('Guide: Lisbon trams 28 and 12 cross the old town.'),
      Message.system('Guide: book Belém tower tickets a day ahead.'),
    ]);
  },
};

/** The scripted model: asks for both tools at once, then answers from their results. */
function model(): ScriptedChatClient {
  return new ScriptedChatClient({
    modelId: 'gpt-4o-mini',
    replies: [
      {
        delayMs: 6,
        toolCalls: [
          { name: 'get_weather', arguments: { city: 'Lisbon' }, callId: 'call_weather' },
          { name: 'find_flights', arguments: { from: 'Berlin', to: 'Lisbon' }, callId: 'call_flights' },
        ],
        usage: { inputTokens: 212, outputTokens: 38 },
      },
      {
        delayMs: 6,
        text: 'Fly TP 557 on Friday at 18:05; Lisbon will be sunny, 24 °C. Ride tram 28 and book Belém a day ahead.',
        usage: { inputTokens: 301, outputTokens: 29, cachedInputTokens: 192 },
      },
    ],
  });
}

/** What `runDemo` did: the answer streamed and the spans the run produced. */
export interface DemoResult {
  answer: string;
  spans: ReadableSpan[];
}

/**
 * One streaming run of a trip planner with a retrieval provider, core's audit provider and two tools
 * the model calls in parallel, traced with `@ctx/otel` into an in-memory exporter; prints the
 * answer and the span tree.
 */
export async function runDemo(print: (line: string) => void = console.log): Promise<DemoResult> {
  // An OpenTelemetry setup; an app would export to its collector instead of keeping spans in memory.
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

  const agent = createAgent({
    name: 'trip-planner',
    client: model(),
    instructions: 'You plan short trips.',
    tools: [weather, flights],
    contextProviders: [guides, createAuditProvider({})],
    onEvent: createOtelEventHandler({ tracer: provider.getTracer('otel-tracing-example') }),
  });

  let answer = '';
  for await (const update of agent.runStream('Plan a weekend in Lisbon from Berlin.', { session: agent.createSession() })) {
    for (const content of update.contents) if (content.type === 'text') answer += content.text;
  }
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  await provider.shutdown();
  print(`Answer: ${answer}`);
  print('');
  for (const line of formatSpanTree(spans)) print(line);
  return { answer, spans };
}
