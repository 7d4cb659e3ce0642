import { checkId, checkInteger, checkOptionNames, checkPositiveNumber, optionNames } from '../backend/checks.js';
import { abortable, withDeadline } from '../backend/deadline.js';
import { ConfigurationError } from '../errors.js';
import { Message } from '../messages/message.js';
import type { ChatClient } from '../contracts/chat-client.js';
import type { ContextProvider, ProviderRunArgs, SessionContext, SessionView } from '../contracts/run-view.js';

/** Options of `TitleProvider`. */
export interface TitleProviderOptions {
  /** The model that writes titles; a small, fast one is enough. */
  client: ChatClient;
  /** Default `title`. */
  sourceId?: string;
  /** Instructions for the title model; replace the built-in prompt. */
  instructions?: string;
  /** The longest title kept, in characters, 1 to 200 (a longer answer is cut, at a word when it can). Default 60. */
  maxChars?: number;
  /** Bounds each title request, in milliseconds; one that overruns is abandoned and reported. Default 30000. */
  timeoutMs?: number;
}

/** The most of the first message sent to the title model, in characters. */
const MAX_PROMPT_CHARS = 2000;
/** The longest title a session keeps (`SessionMetadata.title`). */
const MAX_TITLE = 200;

const DEFAULT_INSTRUCTIONS = (maxChars: number) =>
  `Write a title for the conversation that begins with the user's message below: a few words, at most ${maxChars} characters, in the language of the message, without quotes or a final period. Answer with the title only.`;

const OPTION_NAMES = optionNames<TitleProviderOptions>()({
  client: true,
  sourceId: true,
  instructions: true,
  maxChars: true,
  timeoutMs: true,
});

/**
 * Titles sessions for lists: on a session without `metadata.title`, `beforeRun` sends the
 * conversation's first user message (the loaded history's first, else this run's input) to a
 * title model in the background, so the reply is not delayed; the title is set on the session
 * object as soon as it arrives. A hosted run (`agent.run(input, { sessionId })`) waits for it
 * before it saves (its `flush`, bounded by `timeoutMs`), so the title is stored with the first
 * turn; with a session you save yourself, `await agent.flush({ session })` before saving. It is
 * trimmed, stripped of quotes, a `Title:` prefix and a final period, and cut to `maxChars`. A
 * session that has a title (given by the app or set earlier) is never sent, and runs on one
 * session at once share one request. A failed, empty or timed-out answer is a diagnostic
 * (`title-failed`, `title-empty`), never a failed run, and a later run tries again. Place it after
 * the history provider so it sees the loaded history. Each title costs one model call, also in
 * runs without a session (their throwaway session is untitled).
 * @throws ConfigurationError (constructor) for a missing client or invalid options.
 */
export class TitleProvider implements ContextProvider {
  /** Its source id (diagnostics). Default `title`. */
  readonly sourceId: string;
  /** `'skip'`: its hooks only start or look at a request, and nothing they do may fail a run. */
  readonly onError = 'skip' as const;
  /**
   * Bounds each title request (`TitleProviderOptions.timeoutMs`), and with it how long a hosted
   * run waits for the title before it saves (`flush`).
   */
  readonly timeoutMs: number;
  readonly #client: ChatClient;
  readonly #instructions: string;
  readonly #maxChars: number;
  /** What each session object waits for (its title set on it), so one object is never sent twice. */
  readonly #pending = new WeakMap<SessionView, Promise<void>>();
  /** The title request in flight for each session id, so runs on one session at once share it. */
  readonly #requests = new Map<string, Promise<string | undefined>>();
  /** Every wait in flight, with the id of its session, for `flush`. */
  readonly #inFlight = new Map<Promise<void>, string>();

  constructor(options: TitleProviderOptions) {
    checkOptionNames('TitleProvider', options, OPTION_NAMES);
    this.sourceId = checkId(options?.sourceId ?? 'title', 'sourceId of TitleProvider');
    const owner = `TitleProvider("${this.sourceId}")`;
    const client = options.client;
    if (!client || typeof client.getResponse !== 'function')
      throw new ConfigurationError(`${owner} needs a \`client\` implementing ChatClient.`);
    this.#client = client;
    this.#maxChars = checkInteger(owner, 'maxChars', options.maxChars ?? 60);
    if (this.#maxChars > MAX_TITLE) throw new ConfigurationError(`${owner}: maxChars must be at most ${MAX_TITLE}, got ${this.#maxChars}.`);
    this.timeoutMs = checkPositiveNumber(owner, 'timeoutMs', options.timeoutMs ?? 30_000);
    if (options.instructions !== undefined && typeof options.instructions !== 'string')
      throw new ConfigurationError(`${owner}: instructions must be a string.`);
    this.#instructions = options.instructions ?? DEFAULT_INSTRUCTIONS(this.#maxChars);
  }

  /**
   * Starts a title request for an untitled session (or joins the one in flight for its id), without
   * waiting for it.
   */
  beforeRun({ session, context, signal, report }: ProviderRunArgs): void {
    if (session.metadata.title || this.#pending.has(session)) return;
    const { sessionId } = session;
    let request = this.#requests.get(sessionId);
    if (!request) {
      const first = firstUserText(context);
      if (!first) return;
      const started = this.#title(first, signal).then(
        (title) => {
          if (!title) report({ code: 'title-empty', message: 'The title model answered with no usable title; a later run tries again.' });
          return title || undefined;
        },
        (error: unknown) => {
          // An aborted run's request ends quietly: a later run tries again.
          if (!signal.aborted) report({ code: 'title-failed', message: 'The title request failed; a later run tries again.', error });
          return undefined;
        },
      );
      request = started;
      this.#requests.set(sessionId, started);
      void started.then(() => {
        if (this.#requests.get(sessionId) === started) this.#requests.delete(sessionId);
      });
    }
    const settled = request
      .then((title) => {
        if (title && !session.metadata.title) session.metadata.title = title;
      })
      .finally(() => {
        this.#pending.delete(session);
        this.#inFlight.delete(settled);
      });
    this.#pending.set(session, settled);
    this.#inFlight.set(settled, sessionId);
  }

  /**
   * Waits for the titles still being written: of the session `sessionId` only, when given. An
   * aborted `signal` rejects at once; the requests go on.
   */
  async flush({ signal, sessionId }: { signal?: AbortSignal; sessionId?: string } = {}): Promise<void> {
    const waited = [...this.#inFlight].filter(([, id]) => sessionId === undefined || id === sessionId).map(([request]) => request);
    await abortable(Promise.all(waited), signal);
  }

  /** The model's title for a conversation opening with `first`, cleaned; empty when it gave none. */
  async #title(first: string, signal: AbortSignal): Promise<string> {
    const response = await withDeadline(
      (callSignal) =>
        this.#client.getResponse([Message.user(first.slice(0, MAX_PROMPT_CHARS))], {
          instructions: this.#instructions,
          store: false,
          signal: callSignal,
        }),
      {
        timeoutMs: this.timeoutMs,
        signal,
        backend: this.#client.provider,
        operation: `TitleProvider("${this.sourceId}") title request`,
        hint: 'Raise timeoutMs if the title model is just slow.',
      },
    );
    return cleanTitle(response.messages.map((m) => Message.text(m)).join(''), this.#maxChars);
  }
}

/** The text of the conversation's first user message the run sees: the loaded history's, else the input's. */
function firstUserText(context: SessionContext): string | undefined {
  const candidates: Message[] = [];
  for (const messages of context.contextMessages.values()) {
    for (const m of messages) if (Message.source(m)?.sourceType === 'history') candidates.push(m);
  }
  candidates.push(...context.inputMessages);
  for (const m of candidates) {
    const text = m.role === 'user' ? Message.text(m).trim() : '';
    if (text) return text;
  }
  return undefined;
}

/**
 * A model's answer as a title: its first non-blank line, without a `Title:` prefix, heading marks,
 * surrounding quotes or a final period, spaces collapsed, cut to `maxChars` (at the last space when
 * that keeps more than half, never inside a character of two code units).
 */
export function cleanTitle(answer: string, maxChars: number): string {
  let title =
    answer
      .split('\n')
      .map((line) => line.trim())
      .find(Boolean) ?? '';
  title = title
    .replace(/^#+\s*/, '')
    .replace(/^title\s*:\s*/i, '')
    .replace(/^["'`*_“”‘’«»]+|["'`*_“”‘’«»]+$/g, '')
    .replace(/\s+/g, ' ')
    .replace(/[.。]$/, '')
    .trim();
  if (title.length <= maxChars) return title;
  let cut = title.slice(0, maxChars);
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  const space = cut.lastIndexOf(' ');
  return (space > maxChars / 2 ? cut.slice(0, space) : cut).trimEnd();
}
