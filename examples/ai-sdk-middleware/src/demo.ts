// An AI SDK app that already has its generateText / streamText calls, with ctx added by one
// middleware: the conversation kept per session, shop documents retrieved for each question, and
// an order-lookup tool a provider contributes. The model is the AI SDK's own mock, so it runs offline.
import { type CtxCallMetadata, ctxMiddleware } from '@ctx/ai-sdk';
import { type ContextProvider, defineTool, InMemoryRetriever, InMemorySessionStore, TextSearchProvider } from '@ctx/core';
import { generateText, type LanguageModel, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { z } from 'zod';
import { createShopModel, type PromptLine } from './shop-model.js';

/** The shop's help pages, searched before every model call. */
export const documents = [
  { id: 'shipping', title: 'Shipping', content: 'Shipping to Norway takes 5 working days.' },
  { id: 'returns', title: 'Returns', content: 'Items can be returned within 30 days with the receipt.' },
  { id: 'opening', title: 'Opening hours', content: 'The shop is open Monday to Saturday.' },
];

/** A provider that contributes the order-lookup tool ctx runs inside a model call. */
const orders: ContextProvider = {
  sourceId: 'orders',
  beforeRun({ context }) {
    context.extendTools('orders', [
      defineTool({
        name: 'get_order',
        description: 'The status of an order by its id',
        parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        execute: ({ id }: { id: string }) => ({ id, status: 'shipped on Monday' }),
      }),
    ]);
  },
};

/** What one turn of the demo did: the reply, the prompt the model got, and what ctx added. */
export interface DemoTurn {
  question: string;
  reply: string;
  prompt: PromptLine[];
  ctx: CtxCallMetadata;
}

/** Runs three turns of one customer's conversation (the last one streamed) and returns them. */
export async function runDemo(sessionId = 'customer-42'): Promise<{ turns: DemoTurn[]; store: InMemorySessionStore }> {
  const shop = createShopModel();
  const store = new InMemorySessionStore();
  // The only ctx lines of the app: the middleware and the wrapped model.
  const model: LanguageModel = wrapLanguageModel({
    model: shop.model,
    middleware: ctxMiddleware({
      sessionStore: store,
      contextProviders: [
        new TextSearchProvider({ retriever: new InMemoryRetriever({ documents }), sourceId: 'help-pages', topK: 1 }),
        orders,
      ],
    }),
  });
  // An app tool: the AI SDK runs it, as before.
  const tools = {
    openTicket: tool({
      description: 'Opens a support ticket',
      inputSchema: z.object({ subject: z.string() }),
      execute: async ({ subject }) => ({ ticket: 'T-1001', subject }),
    }),
  };
  const ask = { system: 'You are the shop assistant.', tools, stopWhen: stepCountIs(3), providerOptions: { ctx: { sessionId } } };

  const turns: DemoTurn[] = [];
  const record = (question: string, reply: string, metadata: unknown) =>
    turns.push({ question, reply, prompt: shop.prompts.at(-1) ?? [], ctx: metadata as CtxCallMetadata });

  for (const question of ['Where is my order A7? How long is shipping to Norway?', 'It arrived broken. Please open a ticket.']) {
    const res = await generateText({ model, prompt: question, ...ask });
    record(question, res.text, res.providerMetadata?.ctx);
  }
  const question = 'Can it be returned instead?';
  const res = streamText({ model, prompt: question, ...ask });
  let reply = '';
  for await (const delta of res.textStream) reply += delta;
  record(question, reply, (await res.providerMetadata)?.ctx);
  return { turns, store };
}
