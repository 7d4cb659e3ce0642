/**
 * Recorded OpenAI responses replayed in-process: what the real service sent
 * (`tooling/openai-test-server/fixtures`), handed to an SDK through its `fetch` option, so a
 * benchmark times nothing but client work (no network, no server sharing the cores).
 */
import { readFileSync } from 'node:fs';

const FIXTURES = new URL('../../tooling/openai-test-server/fixtures/', import.meta.url);

/** A recorded stream as the service sends it: SSE frames, delivered a few frames per network read. */
export function sseBody(file: string, named: boolean): Uint8Array[] {
  const events = readFileSync(new URL(file, FIXTURES), 'utf8').split('\n').filter(Boolean);
  const frames = events.map((data) => `${named ? `event: ${(JSON.parse(data) as { type: string }).type}\n` : ''}data: ${data}\n\n`);
  if (!named) frames.push('data: [DONE]\n\n');
  const reads: Uint8Array[] = [];
  for (let i = 0; i < frames.length; i += 4) reads.push(Buffer.from(frames.slice(i, i + 4).join('')));
  return reads;
}

/** A recorded JSON body, as one read. */
export function jsonBody(file: string): Uint8Array[] {
  return [readFileSync(new URL(file, FIXTURES))];
}

/** A `fetch` that answers every request with `reads` (no network, no server). */
export function replay(reads: Uint8Array[], contentType: string): typeof fetch {
  return async (_input, init) => {
    if (init?.body !== undefined) await new Response(init.body as BodyInit).arrayBuffer(); // the SDK's request is built and read, as on the wire
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const read of reads) controller.enqueue(read);
        controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': contentType } });
  };
}
