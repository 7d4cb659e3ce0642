import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RedisServer, startRedisServer } from '@ctx/redis-test-server';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatAgent } from './chat-agent.js';
import { createChatServer, type MessageView } from './chat-server.js';
import { type Answer, chatApi, messagesOf } from './http-client.js';
import { offlineModel } from './offline-model.js';

let redisServer: RedisServer;
let redis: Redis;
let server: Server;
let base: string;
const dir = mkdtempSync(join(tmpdir(), 'ctx-http-chat-test-'));

beforeAll(async () => {
  redisServer = await startRedisServer({ dir });
  redis = new Redis({ host: redisServer.host, port: redisServer.port });
  server = createChatServer({ agent: createChatAgent({ redis, client: offlineModel() }) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  redis?.disconnect();
  await redisServer?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The `error` of a refusal's JSON body (or of a stream's `error` event). */
const errorOf = (answer: Answer) => (answer.body.error ?? {}) as { type?: string; message?: string; limit?: string; turnStored?: boolean };
const replyText = (answer: Answer) =>
  answer.events
    .filter((e) => e.event === 'text')
    .map((e) => e.data.text)
    .join('');
const lines = (messages: MessageView[]) =>
  messages.map((m) => `${m.role}: ${m.toolCalls ? m.toolCalls.map((c) => c.name).join() : m.text}`);
/** An outcome a caller may end in: success, or a typed conflict that says whether the turn is stored. */
const truthful = (answer: Answer) => answer.status === 200 || (answer.status === 409 && typeof errorOf(answer).turnStored === 'boolean');

describe('http-chat', () => {
  it('streams a turn as server-sent events and stores it once, with the ids the page saw', async () => {
    const ada = chatApi(base, 'ada');
    const chat = await ada.create('First');
    const id = randomUUID();
    const answer = await ada.send(chat, { id, text: 'Hello there' });
    expect(answer.status).toBe(200);
    expect(replyText(answer)).toBe('You said: Hello there');
    expect(answer.events.at(-1)!.event).toBe('done');
    const reply = messagesOf(answer)[0]!;
    const stored = messagesOf(await ada.get(chat));
    expect(stored.map((m) => m.id)).toEqual([id, reply.id]);
    expect(lines(stored)).toEqual(['user: Hello there', 'assistant: You said: Hello there']);
  });

  it('a double submit, and five tabs sending the same message at once: one turn, stored once, every caller told the truth', async () => {
    const ada = chatApi(base, 'ada');
    for (const copies of [2, 5]) {
      const chat = await ada.create(`Double submit x${copies}`);
      const message = { id: randomUUID(), text: 'Only once, please' };
      const answers = await Promise.all(Array.from({ length: copies }, () => ada.send(chat, message)));
      expect(answers.every(truthful)).toBe(true);
      const stored = messagesOf(await ada.get(chat));
      expect(lines(stored)).toEqual(['user: Only once, please', 'assistant: You said: Only once, please']);
      expect(stored[0]!.id).toBe(message.id);
      // Every caller that got a reply got the stored reply's text; the stored reply is one a caller
      // got, ids and all (a submit that overlaps the running turn gets that very reply; one that
      // comes after it ended is a retry, whose reply replaces the earlier one).
      const replied = answers.filter((a) => a.status === 200);
      for (const a of replied) {
        expect(messagesOf(a).map((m) => m.text)).toEqual([stored[1]!.text]);
        const [reply] = messagesOf(a);
        expect(a.events.filter((e) => e.event === 'text').every((e) => e.data.messageId === reply!.id)).toBe(true);
      }
      expect(replied.map((a) => messagesOf(a)[0]!.id)).toContain(stored[1]!.id);
    }
  });

  it('five different messages at once on one conversation (five tabs): each stored exactly once with exactly one reply', async () => {
    const ada = chatApi(base, 'ada');
    const chat = await ada.create('Five tabs');
    const texts = ['one', 'two', 'three', 'four', 'five'];
    const answers = await Promise.all(texts.map((text) => ada.send(chat, { id: randomUUID(), text })));
    expect(answers.every(truthful)).toBe(true);
    const stored = lines(messagesOf(await ada.get(chat)));
    expect(stored).toHaveLength(10);
    for (const text of texts) {
      expect(stored.filter((l) => l === `user: ${text}`)).toHaveLength(1);
      const at = stored.indexOf(`user: ${text}`);
      expect(stored[at + 1]).toBe(`assistant: You said: ${text}`);
    }
  });

  it("another user's conversation is answered as one that does not exist, and is left untouched", async () => {
    const ada = chatApi(base, 'ada');
    const bob = chatApi(base, 'bob');
    const chat = await ada.create('Private');
    await ada.send(chat, { id: randomUUID(), text: 'my secret' });
    const before = messagesOf(await ada.get(chat));
    const missing = await bob.get(randomUUID());
    for (const answer of [
      await bob.get(chat),
      await bob.send(chat, { id: randomUUID(), text: 'let me in' }),
      await bob.approve(chat, [{ callId: 'c1', approved: true }]),
      await bob.remove(chat),
    ]) {
      expect(answer.status).toBe(404);
      expect(answer.body).toEqual(missing.body);
    }
    expect(messagesOf(await ada.get(chat))).toEqual(before);
    const listed = (await bob.list()).body.conversations as { id: string }[];
    expect(listed.map((c) => c.id)).not.toContain(chat);
    expect((await chatApi(base, '').list()).status).toBe(401);
    // A cursor is the client's to send: a forged or foreign one is its mistake, not the server's.
    const forged = await bob.list('garbage');
    expect(forged.status).toBe(400);
    expect(errorOf(forged).type).toBe('InvalidInputError');
  });

  it('an oversize message is a 413 naming the limit, an oversize body a 413, and neither is stored', async () => {
    const ada = chatApi(base, 'ada');
    const chat = await ada.create('Limits');
    const paste = await ada.send(chat, { id: randomUUID(), text: 'x'.repeat(300 * 1024) });
    expect(paste.status).toBe(413);
    expect(errorOf(paste)).toMatchObject({ type: 'InvalidInputError', limit: 'maxMessageBytes' });
    expect(errorOf(paste).message).toMatch(/maxMessageBytes/);
    const huge = await ada.sendRaw(chat, JSON.stringify({ id: 'huge', text: 'x'.repeat(2 * 1024 * 1024) }));
    expect(huge.status).toBe(413);
    expect((await ada.sendRaw(chat, '{not json')).status).toBe(400);
    expect((await ada.send(chat, { id: 'bad id!', text: 'hi' })).status).toBe(400);
    expect(messagesOf(await ada.get(chat))).toEqual([]);
  });

  it('a tool that needs approval waits; wrong answers are the caller’s mistakes (400); the approved call runs', async () => {
    const ada = chatApi(base, 'ada');
    const chat = await ada.create('Booking');
    const booking = await ada.send(chat, { id: randomUUID(), text: 'A table for 4, please' });
    expect(booking.status).toBe(200);
    const waiting = booking.body.pendingApprovals as { callId: string; toolName: string }[];
    expect(waiting.map((w) => w.toolName)).toEqual(['book_table']);
    expect(((await ada.get(chat)).body.pendingApprovals as unknown[]).length).toBe(1);

    for (const wrong of [
      await ada.approve(chat, [{ callId: 'not-a-call', approved: true }]),
      await ada.send(chat, { id: randomUUID(), text: 'Never mind that, hello' }),
    ]) {
      expect(wrong.status).toBe(400);
      expect(errorOf(wrong).type).toBe('InvalidInputError');
    }
    const approved = await ada.approve(chat, [{ callId: waiting[0]!.callId, approved: true }]);
    expect(approved.status).toBe(200);
    expect(replyText(approved)).toBe('Done: a table for 4 at 8 pm');
    const conversation = await ada.get(chat);
    expect(lines(messagesOf(conversation))).toEqual([
      'user: A table for 4, please',
      'assistant: book_table',
      'tool: ',
      'assistant: Done: a table for 4 at 8 pm',
    ]);
    expect(conversation.body.pendingApprovals).toEqual([]);
  });

  it('deleting a user leaves nothing of theirs', async () => {
    const cy = chatApi(base, 'cy');
    const chat = await cy.create('To forget');
    await cy.send(chat, { id: randomUUID(), text: 'remember me' });
    expect((await cy.removeMe()).body).toEqual({ sessions: 1 });
    expect((await cy.get(chat)).status).toBe(404);
    expect((await cy.list()).body.conversations).toEqual([]);
    const keys = await redis.keys('*');
    expect(keys.filter((k) => k.includes(chat))).toEqual([]);
  });
});
