/**
 * Runs the OpenAI-protocol test server in its own process, so a benchmark's client side does not
 * share its event loop with the server. Prints the base URL on stdout, then serves until killed.
 */
import { startOpenAITestServer } from '@ctx/openai-test-server';

const [apiKey = 'bench-key', replyWords = '1000'] = process.argv.slice(2);
const WORDS = 'context engineering decides what enters each model call and what is kept afterwards'.split(' ');
const reply = Array.from({ length: Number(replyWords) }, (_, i) => WORDS[i % WORDS.length]).join(' ');
const server = await startOpenAITestServer({ apiKey });
server.respondWith(() => ({ text: reply }));
// The log of every request would grow without bound over a benchmark.
setInterval(() => (server.requests.length = 0), 1000).unref();
process.stdout.write(`${server.url}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
