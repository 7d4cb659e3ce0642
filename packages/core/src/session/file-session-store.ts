import { checkIfMatch } from '../backend/check-if-match.js';
import { BackendUnavailableError, SessionStateError, truncate } from '../errors.js';
import { generateId } from '../messages/id.js';
import type { SessionStore, SetSessionOptions, StoredSession } from '../spec/session-store.js';
import type { SessionJson } from '../spec/session.js';
import { parseSessionJson } from './agent-session.js';

/** Options of `FileSessionStore`. */
export interface FileSessionStoreOptions {
  /** The folder sessions are kept in; created when missing. */
  directory: string;
  /** How long a write waits for another writer's lock before failing. Default 5000 ms. */
  lockTimeoutMs?: number;
}

interface Envelope {
  etag: string;
  session: SessionJson;
}

const STALE_LOCK_MS = 30_000;

/** Whether a lock file's owner (`host pid`) was a process on this host that no longer runs. */
function ownerIsGone(holder: string, host: string): boolean {
  const [lockHost, pidText] = holder.split(' ');
  const pid = Number(pidText);
  if (lockHost !== host || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * A `SessionStore` on the local file system: one JSON file per session, named by the SHA-256 of
 * its id (any id is safe as a file name). Writes go to a temporary file that is renamed into place,
 * so a crash never leaves a half-written session; a lock file makes `ifMatch` hold across processes.
 */
export class FileSessionStore implements SessionStore {
  readonly specificationVersion = 'v1';
  readonly directory: string;
  readonly #lockTimeoutMs: number;
  #ready: Promise<void> | undefined;

  constructor(options: FileSessionStoreOptions) {
    this.directory = options.directory;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 5000;
  }

  async get(sessionId: string): Promise<StoredSession | undefined> {
    const envelope = await this.#read(await this.#file(sessionId), sessionId);
    return envelope && { session: envelope.session, etag: envelope.etag };
  }

  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const { writeFile, open, rename, rm } = await import('node:fs/promises');
    const file = await this.#file(session.sessionId);
    const release = await this.#lock(file, options.signal);
    try {
      if (options.ifMatch !== undefined)
        checkIfMatch(session.sessionId, (await this.#read(file, session.sessionId))?.etag, options.ifMatch);
      const etag = generateId();
      const temp = `${file}.${generateId()}.tmp`;
      try {
        await writeFile(temp, JSON.stringify({ etag, session } satisfies Envelope));
        const handle = await open(temp, 'r');
        await handle.sync().finally(() => handle.close());
        await rename(temp, file);
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
      return etag;
    } finally {
      await release();
    }
  }

  /** Deletes a session's file, readable or not. */
  async delete(sessionId: string): Promise<boolean> {
    const { rm } = await import('node:fs/promises');
    const file = await this.#file(sessionId);
    const release = await this.#lock(file);
    try {
      return await rm(file).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code === 'ENOENT') return false;
          throw error;
        },
      );
    } finally {
      await release();
    }
  }

  async #file(sessionId: string): Promise<string> {
    const [{ createHash }, { join }, { mkdir }] = await Promise.all([
      import('node:crypto'),
      import('node:path'),
      import('node:fs/promises'),
    ]);
    this.#ready ??= mkdir(this.directory, { recursive: true }).then(() => undefined);
    await this.#ready;
    return join(this.directory, `${createHash('sha256').update(sessionId).digest('hex')}.json`);
  }

  async #read(file: string, sessionId: string): Promise<Envelope | undefined> {
    const { readFile } = await import('node:fs/promises');
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const raw = JSON.parse(text) as Partial<Envelope>;
      if (typeof raw?.etag !== 'string') throw new SessionStateError('$.etag', 'missing');
      const session = parseSessionJson(raw.session);
      if (session.sessionId !== sessionId) throw new SessionStateError('$.sessionId', 'does not match the file name');
      return { etag: raw.etag, session };
    } catch (error) {
      const where = SessionStateError.isInstance(error) ? error.path : '$';
      const problem = SessionStateError.isInstance(error) ? error.problem : `is not valid JSON (${(error as Error).message})`;
      throw new SessionStateError(where, `${problem} (session "${truncate(sessionId)}" in ${file}; fix or delete the file)`, {
        cause: error,
      });
    }
  }

  /**
   * Takes the file's lock: an exclusive-create lock file holding the owner's host and pid. A lock
   * whose owner on this host is gone, or older than 30 s, is broken. Resolves to the release.
   */
  async #lock(file: string, signal?: AbortSignal): Promise<() => Promise<void>> {
    const [{ open, readFile, rm, stat }, { hostname }] = await Promise.all([import('node:fs/promises'), import('node:os')]);
    const lock = `${file}.lock`;
    const owner = `${hostname()} ${process.pid}`;
    const deadline = Date.now() + this.#lockTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      try {
        const handle = await open(lock, 'wx');
        await handle.writeFile(owner).finally(() => handle.close());
        return () => rm(lock, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const age = await stat(lock).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      const holder = await readFile(lock, 'utf8').catch(() => '');
      if (age > STALE_LOCK_MS || ownerIsGone(holder, hostname())) {
        await rm(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new BackendUnavailableError(
          'file',
          `Could not lock ${lock} within ${this.#lockTimeoutMs} ms; another writer holds it (a lock older than ${STALE_LOCK_MS / 1000} s is broken automatically).`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, 2 + attempt * 2 + Math.random() * 5)));
    }
  }
}
