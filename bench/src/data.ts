/**
 * Library-neutral, deterministic conversation data shared by every benchmark, so each library
 * stores and reads exactly the same conversation. Converters to each library's message shape
 * live beside the code that uses them.
 */

/** One stored entry of a conversation, before conversion to a library's message type. */
export type Turn =
  | { kind: 'user'; id: string; text: string }
  | { kind: 'assistant'; id: string; text: string }
  | { kind: 'call'; id: string; callId: string; name: string; args: Record<string, unknown> }
  | { kind: 'result'; id: string; callId: string; name: string; output: string };

/** Deterministic PRNG (mulberry32), so every run and every library sees the same data. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const QUESTIONS = [
  'Can you check whether order {n} has shipped yet? The customer says it was due on Monday.',
  'What is the refund policy for items bought during the spring sale?',
  'Please summarise the last three tickets from this customer and tell me if any are still open.',
  'How many units of SKU-{n} do we have left in the Rotterdam warehouse?',
  'Draft a short apology to the customer about the delay, keep it under 80 words.',
  'Does the premium plan include priority support on weekends?',
  'Move the delivery of order {n} to Friday and tell me the new tracking link.',
  'What did we promise this customer in the call last week?',
];

const ANSWERS = [
  'Order {n} left the warehouse yesterday at 16:40 and is with the carrier now. The expected delivery is Thursday before noon; I have added the tracking link to the ticket.',
  'Items bought during the spring sale can be returned within 30 days for store credit, or within 14 days for a full refund to the original payment method, provided they are unused.',
  'There are three recent tickets: a billing question (closed), a damaged item report (closed, replacement sent) and a delivery delay (still open, waiting on the carrier).',
  'We have {n} units in Rotterdam, 212 in Leipzig and a restock of 500 arriving next Tuesday.',
  'Dear customer, we are sorry that your order is late. The carrier has confirmed it will arrive on Thursday, and we have refunded the shipping cost as an apology for the wait.',
  'Yes. The premium plan includes priority support seven days a week, with a four-hour response target on weekends and one hour on weekdays.',
  'Done: the delivery of order {n} is now scheduled for Friday between 9:00 and 13:00. The customer will get an email with the updated tracking link.',
  'We promised a follow-up call this week and a 10% discount on the next renewal, both noted on the account.',
];

const TOOLS = ['lookup_order', 'search_tickets', 'get_inventory', 'reschedule_delivery'];

function fill(template: string, rnd: () => number): string {
  return template.replace(/\{n\}/g, () => String(10000 + Math.floor(rnd() * 90000)));
}

function pick<T>(items: readonly T[], rnd: () => number): T {
  return items[Math.floor(rnd() * items.length)] as T;
}

/**
 * A realistic support conversation of exactly `n` stored entries: user and assistant text, and
 * (in about half of the exchanges) a function call with its result before the answer. The
 * sequence never ends on a dangling function call.
 */
export function conversation(n: number, seed = 42): Turn[] {
  const rnd = prng(seed);
  const out: Turn[] = [];
  let i = 0;
  const id = () => `m-${seed}-${i++}`;
  while (out.length < n) {
    out.push({ kind: 'user', id: id(), text: fill(pick(QUESTIONS, rnd), rnd) });
    if (rnd() < 0.5) {
      const callId = `call_${seed}_${i}`;
      const name = pick(TOOLS, rnd);
      const order = 10000 + Math.floor(rnd() * 90000);
      out.push({ kind: 'call', id: id(), callId, name, args: { orderId: String(order), includeHistory: rnd() < 0.5 } });
      out.push({
        kind: 'result',
        id: id(),
        callId,
        name,
        output: JSON.stringify({ orderId: String(order), status: 'in_transit', carrier: 'DHL', eta: '2025-06-12T12:00:00Z', items: 3 }),
      });
    }
    out.push({ kind: 'assistant', id: id(), text: fill(pick(ANSWERS, rnd), rnd) });
  }
  out.length = n;
  const last = out[n - 1];
  if (last && last.kind === 'call') {
    out[n - 1] = { kind: 'assistant', id: last.id, text: 'Let me look that up for you.' };
  }
  return out;
}

/** The question every measured run asks. */
export const QUESTION = 'And when will the replacement for the damaged item arrive?';

/** The model's fixed reply in every library's fake model. */
export const ANSWER = 'The replacement ships today and should arrive within two business days.';

/**
 * What the four small custom ctx providers add to every run. The alternatives get the same text
 * statically (system prompt / agent instructions), so every model call carries the same content.
 */
export const EXTRA_INSTRUCTIONS = [
  'You are a support agent for Acme. Answer briefly and cite order numbers.',
  'Never promise a refund above 100 EUR without a supervisor.',
];
export const EXTRA_CONTEXT = [
  'Customer profile: premium plan since 2021, language English, timezone Europe/Amsterdam.',
  'Today is Wednesday 11 June 2025; the Leipzig warehouse is closed for inventory.',
];
