import { checkIfMatch } from '../backend/check-if-match.js';
import { checkOptionNames, checkSessionId, optionNames, shortId } from '../backend/checks.js';
import { encodeIdSegment } from '../backend/id-segment.js';
import { checkListOptions, pageOfSessions } from '../backend/session-cursor.js';
import { sessionOfUser } from '../backend/session-owner.js';
import { checkTurnLease } from '../backend/turn-lease.js';
import { BackendUnavailableError, ConfigurationError, SessionStateError } from '../errors.js';
import { generateId } from '../messages/id.js';
import { describeThrown, describeValue } from '../messages/json.js';
import type {
  GetSessionOptions,
  ListSessionsOptions,
  SessionPage,
  SessionStore,
  SessionSummary,
  SetSessionOptions,
  StoredSession,
  TurnLease,
} from '../contracts/session-store.js';
import type { SessionJson } from '../contracts/session.js';
import type { BigIntStats } from 'node:fs';
import { checkSessionForWrite, parseSessionJson, serializeSessionJson } from './agent-session.js';

/** Options of `FileSessionStore`. */
export interface FileSessionStoreOptions {
  /** The folder sessions are kept in; created when missing. */
  directory: string;
  /** How long a write waits for another writer's lock before failing. Default 5000 ms. */
  lockTimeoutMs?: number;
  /**
   * What to do with a session file that cannot be read as that session (not JSON, not a session,
   * another session's id). `'throw'` (default): `get` throws a `SessionStateError` naming the file,
   * until it is fixed or deleted. `'quarantine'`: the file is renamed aside to
   * `<name>.corrupt-<timestamp>-<random>`, reported through `onEvent`, and `get` resolves to
   * undefined, so `agent.getSession` starts the session afresh.
   */
  onCorrupt?: 'throw' | 'quarantine';
  /**
   * Receives what the store did on its own (a quarantined file, a file `list` skipped). A throw is
   * logged with `console.warn` and otherwise ignored.
   */
  onEvent?: (event: FileSessionStoreEvent) => void;
}

/** Why a session file could not be read as its session. */
type FileSessionProblem = 'invalid-json' | 'invalid-session' | 'wrong-session-id';

/** What the store did on its own, reported through `onEvent`. Holds names and paths, never session content. */
export type FileSessionStoreEvent =
  | {
      /** A corrupt session file was moved aside (`onCorrupt: 'quarantine'`). */
      type: 'session-quarantined';
      /** The session concerned. */
      sessionId: string;
      /** The file that could not be read. */
      file: string;
      /** Where it is now. */
      quarantinedAs: string;
      /** Not JSON, not a valid session (see `path`), or a session of another id. */
      reason: 'invalid-json' | 'invalid-session' | 'wrong-session-id';
      /** The JSON path of the problem inside the stored session (`$` for the whole file). */
      path: string;
    }
  | {
      /** `list` left out a file it could not read as a session; the file stays as it is. */
      type: 'session-skipped';
      /** The file left out. */
      file: string;
      /** As for a quarantined file, or `unreadable`: the file system refused (see `cause`). */
      reason: 'invalid-json' | 'invalid-session' | 'wrong-session-id' | 'unreadable';
      /** The JSON path of the problem inside the stored session (`$` for the whole file). */
      path: string;
      /** For `unreadable`, what the file system said (an error code such as `EACCES`, or a message). */
      cause?: string;
    };

interface Envelope {
  etag: string;
  session: SessionJson;
}

/** What is at a session's path. `file` is where it was read. */
type FileState =
  | { kind: 'absent' }
  | { kind: 'ok'; file: string; envelope: Envelope; stamp: string }
  | { kind: 'corrupt'; file: string; error: SessionStateError; reason: FileSessionProblem };

/** A session's file, its lock and its name under the SHA-256 naming of earlier versions. */
interface Paths {
  file: string;
  legacy: string;
}

const STALE_LOCK_MS = 30_000;
/** Longest readable encoding of an id in a file name; longer ones are hashed (names stay under 200 bytes). */
const MAX_ENCODED_ID_LENGTH = 150;
/** Kept in file names as they are: lower-case ASCII letters, digits, `_` and `-` (safe on every file system, case-insensitive ones included). */
const KEEP = /[a-z0-9_-]/;
const PREFIX = 'session-';
/** The name of a file written by earlier versions: the hex SHA-256 of the session id. */
const LEGACY_NAME = /^[0-9a-f]{64}\.json$/;
/** How many files `list` reads at once. */
const LIST_READS = 16;

/**
 * The file name of a session: `session-<id>.json`, the id encoded injectively with
 * `encodeIdSegment` (lower-case letters, digits, `_` and `-` stay; everything else, upper-case
 * letters and `.` included, becomes `%XX` per UTF-8 byte, a lone surrogate `%uXXXX`), so no two
 * ids share a file, even on a case-insensitive file system, and no name is reserved on Windows. An
 * encoding longer than 150 characters becomes `~` and the hex SHA-256 of the encoding.
 */
export function sessionFileName(sessionId: string, sha256Hex: (text: string) => string): string {
  const encoded = encodeIdSegment(sessionId, { keep: KEEP, escape: '%' });
  return `${PREFIX}${encoded.length <= MAX_ENCODED_ID_LENGTH ? encoded : `~${sha256Hex(encoded)}`}.json`;
}

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

/** A file's identity and version: a write renames a new file into place, so its inode changes. */
function stampOf(stats: BigIntStats): string {
  return `${stats.ino}:${stats.size}:${stats.mtimeNs}`;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

const OPTION_NAMES = optionNames<FileSessionStoreOptions>()({ directory: true, lockTimeoutMs: true, onCorrupt: true, onEvent: true });

/**
 * A `SessionStore` on the local file system: one JSON file per session, named injectively after its
 * id (see `sessionFileName`). Writes go to a temporary file that is fsynced and renamed into place,
 * so a crash never leaves a half-written session; a lock file makes `ifMatch` hold across
 * processes. Files written by earlier versions (named by the SHA-256 of the id) are read and moved
 * to the new name when they hold exactly that id. A symbolic link at a session's path is never
 * followed. A version-1 file (no metadata) reads with the time it was last written as both times.
 * File-system failures are `BackendUnavailableError`s naming the session and the path. `list`
 * reads the whole directory: a store for development and single-process apps.
 */
export class FileSessionStore implements SessionStore {
  readonly specificationVersion = 'v1';
  /** Where the session files are. */
  readonly directory: string;
  readonly #lockTimeoutMs: number;
  readonly #onCorrupt: 'throw' | 'quarantine';
  readonly #onEvent: ((event: FileSessionStoreEvent) => void) | undefined;
  #ready: Promise<void> | undefined;
  /** What `list` read from each file, by name, with the file's identity when it was read. */
  readonly #summaries = new Map<string, { stamp: string; summary: SessionSummary }>();

  /** @throws ConfigurationError for a missing directory or a bad option. */
  constructor(options: FileSessionStoreOptions) {
    checkOptionNames('FileSessionStore', options, OPTION_NAMES);
    if (typeof options?.directory !== 'string' || options.directory.trim() === '')
      throw new ConfigurationError('FileSessionStore: directory must be the path of the folder to keep sessions in.');
    this.directory = options.directory;
    const lockTimeoutMs = options.lockTimeoutMs ?? 5000;
    if (typeof lockTimeoutMs !== 'number' || !(lockTimeoutMs >= 0) || !Number.isFinite(lockTimeoutMs))
      throw new ConfigurationError(
        `FileSessionStore: lockTimeoutMs must be a non-negative number of milliseconds, got ${describeValue(lockTimeoutMs)}.`,
      );
    this.#lockTimeoutMs = lockTimeoutMs;
    const onCorrupt = options.onCorrupt ?? 'throw';
    if (onCorrupt !== 'throw' && onCorrupt !== 'quarantine')
      throw new ConfigurationError(`FileSessionStore: onCorrupt must be 'throw' or 'quarantine', got ${describeValue(onCorrupt)}.`);
    this.#onCorrupt = onCorrupt;
    if (options.onEvent !== undefined && typeof options.onEvent !== 'function')
      throw new ConfigurationError('FileSessionStore: onEvent must be a function.');
    this.#onEvent = options.onEvent;
  }

  /**
   * The stored session and its etag, or undefined; with `userId`, undefined too for a session of
   * another user or of none.
   * @throws ConfigurationError for an empty or whitespace-only id or `userId`, or a symbolic link at the session's path.
   * @throws SessionStateError when the file is not a session of that id (unless `onCorrupt: 'quarantine'`).
   * @throws BackendUnavailableError when the file cannot be read (permissions, I/O, a directory in its place).
   */
  async get(sessionId: string, options: GetSessionOptions = {}): Promise<StoredSession | undefined> {
    checkSessionId(sessionId);
    return sessionOfUser(await this.#get(sessionId, options), options.userId);
  }

  async #get(sessionId: string, options: GetSessionOptions): Promise<StoredSession | undefined> {
    const paths = await this.#paths(sessionId);
    let found = await this.#current(paths, sessionId);
    if (found.kind === 'ok' && found.file === paths.legacy) found = await this.#migrate(paths, sessionId, options.signal);
    if (found.kind === 'corrupt') {
      if (this.#onCorrupt === 'throw') throw found.error;
      const release = await this.#lock(paths.file, sessionId, options.signal);
      try {
        found = await this.#current(paths, sessionId);
        if (found.kind === 'corrupt') {
          await this.#quarantine(found, sessionId);
          return undefined;
        }
      } finally {
        await release();
      }
    }
    return found.kind === 'ok' ? { session: found.envelope.session, etag: found.envelope.etag } : undefined;
  }

  /**
   * Stores a session and resolves to its new etag.
   * @throws ConfigurationError for an empty or whitespace-only session id, or a symbolic link at the session's path.
   * @throws SessionStateError when `session` is not plain session JSON (nothing is written).
   * @throws ConcurrencyError when `ifMatch` does not hold (nothing is written).
   * @throws BackendUnavailableError when the lock is held past `lockTimeoutMs` or the file cannot be written.
   */
  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const checked = checkSessionForWrite(session);
    const { sessionId } = checked;
    const sessionText = serializeSessionJson(checked);
    const { writeFile, open, rename, rm } = await import('node:fs/promises');
    const paths = await this.#paths(sessionId);
    const release = await this.#lock(paths.file, sessionId, options.signal);
    try {
      const exists = await this.#checkEntry(paths.file, sessionId, 'write');
      let current: FileState = { kind: 'absent' };
      if (options.ifMatch !== undefined || !exists) current = await this.#current(paths, sessionId);
      if (current.kind === 'corrupt' && options.ifMatch !== undefined) {
        if (this.#onCorrupt === 'throw') throw current.error;
        await this.#quarantine(current, sessionId);
        current = { kind: 'absent' };
      }
      if (options.ifMatch !== undefined)
        checkIfMatch(sessionId, current.kind === 'ok' ? current.envelope.etag : undefined, options.ifMatch);
      const etag = generateId();
      const body = `{"etag":${JSON.stringify(etag)},"session":${sessionText}}`;
      const temp = `${paths.file}.${generateId().replaceAll('-', '').slice(0, 12)}.tmp`;
      try {
        await writeFile(temp, body, { flag: 'wx' });
        const handle = await open(temp, 'r');
        await handle.sync().finally(() => handle.close());
        await rename(temp, paths.file);
      } catch (error) {
        await rm(temp, { force: true }).catch(() => undefined);
        throw this.#ioError('write', sessionId, paths.file, error);
      }
      if (current.kind === 'ok' && current.file === paths.legacy) await this.#remove(paths.legacy, sessionId);
      return etag;
    } finally {
      await release();
    }
  }

  /**
   * Deletes a session's file, readable or not (and its file under the naming of earlier versions).
   * Resolves to whether one was stored.
   * @throws ConfigurationError for an empty or whitespace-only id, or a symbolic link at the session's path.
   * @throws BackendUnavailableError when the file cannot be removed.
   */
  async delete(sessionId: string, options: { signal?: AbortSignal } = {}): Promise<boolean> {
    checkSessionId(sessionId);
    const paths = await this.#paths(sessionId);
    const release = await this.#lock(paths.file, sessionId, options.signal);
    try {
      let deleted = false;
      if (await this.#checkEntry(paths.file, sessionId, 'delete')) deleted = await this.#remove(paths.file, sessionId);
      const legacy = await this.#read(paths.legacy, sessionId);
      if ((legacy.kind === 'ok' && legacy.envelope.session.sessionId === sessionId) || legacy.kind === 'corrupt')
        deleted = (await this.#remove(paths.legacy, sessionId)) || deleted;
      return deleted;
    } finally {
      await release();
    }
  }

  /**
   * Takes or renews the lease `lease.turn` of a session for `lease.holder` (see
   * `SessionStore.leaseTurn`): a file `<session file>.turn-<turn>` holding the holder and when the
   * lease expires (this machine's clock), written under its own lock file. Resolves to false while
   * another holder's lease is live; a lease file that cannot be read as one counts as expired.
   * @throws ConfigurationError for a blank session id, a malformed lease, or a symbolic link at the lease's path.
   * @throws BackendUnavailableError when the lock is held past `lockTimeoutMs` or the file cannot be written.
   */
  async leaseTurn(sessionId: string, lease: TurnLease): Promise<boolean> {
    checkTurnLease('FileSessionStore.leaseTurn', sessionId, lease);
    const { writeFile, rename, rm } = await import('node:fs/promises');
    const file = await this.#leaseFile(sessionId, lease.turn);
    const release = await this.#lock(file, sessionId, lease.signal);
    try {
      const held = await this.#readLease(file, sessionId);
      const now = Date.now();
      if (held && held.holder !== lease.holder && held.expiresAt > now) return false;
      const temp = `${file}.${generateId().replaceAll('-', '').slice(0, 12)}.tmp`;
      try {
        await writeFile(temp, JSON.stringify({ holder: lease.holder, expiresAt: now + lease.ttlMs }), { flag: 'wx' });
        await rename(temp, file);
      } catch (error) {
        await rm(temp, { force: true }).catch(() => undefined);
        throw this.#ioError('lease a turn of', sessionId, file, error);
      }
      return true;
    } finally {
      await release();
    }
  }

  /**
   * Ends the lease `lease.turn` of a session if `lease.holder` holds it (removes its file);
   * resolves to whether a live lease of `holder` was ended.
   * @throws ConfigurationError for a blank session id, a malformed lease, or a symbolic link at the lease's path.
   * @throws BackendUnavailableError when the lock is held past `lockTimeoutMs` or the file cannot be removed.
   */
  async releaseTurn(sessionId: string, lease: Omit<TurnLease, 'ttlMs'>): Promise<boolean> {
    checkTurnLease('FileSessionStore.releaseTurn', sessionId, lease, false);
    const file = await this.#leaseFile(sessionId, lease.turn);
    const release = await this.#lock(file, sessionId, lease.signal);
    try {
      const held = await this.#readLease(file, sessionId);
      if (held?.holder !== lease.holder) return false;
      await this.#remove(file, sessionId);
      return held.expiresAt > Date.now();
    } finally {
      await release();
    }
  }

  /** The file of a session's turn lease: beside the session's file, named so that `list` never reads it. */
  async #leaseFile(sessionId: string, turn: string): Promise<string> {
    return `${(await this.#paths(sessionId)).file}.turn-${turn}`;
  }

  /** The lease in `file`, or undefined when there is none or it is not a lease (it then counts as expired). */
  async #readLease(file: string, sessionId: string): Promise<{ holder: string; expiresAt: number } | undefined> {
    if (!(await this.#checkEntry(file, sessionId, 'read the turn lease of'))) return undefined;
    const { readFile } = await import('node:fs/promises');
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return undefined;
      throw this.#ioError('read the turn lease of', sessionId, file, error);
    }
    try {
      const { holder, expiresAt } = JSON.parse(text) as { holder?: unknown; expiresAt?: unknown };
      return typeof holder === 'string' && typeof expiresAt === 'number' ? { holder, expiresAt } : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Lists sessions newest first, a page at a time, with `total` (see `SessionStore.list`). Each
   * call reads the directory and checks every session file in it: a file this instance read before
   * and that has not changed since (same inode, size and modification time) costs one `lstat`, any
   * other is read and checked whole. So a listing costs time in proportion to the number of
   * sessions: fine for development and single-process apps, not for thousands of sessions. A file
   * that cannot be read as its session is left out and reported through `onEvent`
   * (`session-skipped`), never fails the listing; files being written meanwhile are read whole,
   * before or after the write (writes rename a complete file into place).
   * @throws ConfigurationError for a bad `limit` or `userId`; InvalidInputError for a bad cursor.
   * @throws BackendUnavailableError when the directory cannot be read.
   */
  async list(options: ListSessionsOptions = {}): Promise<SessionPage> {
    const checked = checkListOptions(options);
    const { signal } = options;
    signal?.throwIfAborted();
    const [{ readdir }, { join }, { createHash }] = await Promise.all([
      import('node:fs/promises'),
      import('node:path'),
      import('node:crypto'),
    ]);
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (error) {
      if (codeOf(error) !== 'ENOENT') throw this.#ioError('list', '(every session)', this.directory, error);
      names = [];
    }
    const present = new Set(names);
    for (const name of this.#summaries.keys()) if (!present.has(name)) this.#summaries.delete(name);
    const sha256Hex = (text: string, encoding: 'utf8' | 'latin1') => createHash('sha256').update(text, encoding).digest('hex');
    const fileNameOf = (sessionId: string) => sessionFileName(sessionId, (encoded) => sha256Hex(encoded, 'latin1'));
    const files = names.filter((name) => (name.startsWith(PREFIX) && name.endsWith('.json')) || LEGACY_NAME.test(name));
    const found = new Map<string, SessionSummary>();
    const legacy: SessionSummary[] = [];
    for (let i = 0; i < files.length; i += LIST_READS) {
      signal?.throwIfAborted();
      const batch = files.slice(i, i + LIST_READS);
      const summaries = await Promise.all(batch.map((name) => this.#summaryOf(join(this.directory, name), name)));
      batch.forEach((name, j) => {
        const summary = summaries[j];
        if (!summary) return;
        if (!LEGACY_NAME.test(name)) {
          if (fileNameOf(summary.sessionId) === name) found.set(summary.sessionId, summary);
          else this.#report({ type: 'session-skipped', file: join(this.directory, name), reason: 'wrong-session-id', path: '$.sessionId' });
        } else if (`${sha256Hex(summary.sessionId, 'utf8')}.json` === name) {
          legacy.push(summary); // otherwise another id's file, which get leaves alone too
        }
      });
    }
    // A session's legacy file counts only while it has no file under its own name (as for get).
    for (const summary of legacy) if (!present.has(fileNameOf(summary.sessionId))) found.set(summary.sessionId, summary);
    return pageOfSessions(found.values(), checked);
  }

  /** The id and metadata of the session in `file`, from the cache when the file is unchanged; undefined when gone or unreadable (reported). */
  async #summaryOf(file: string, name: string): Promise<SessionSummary | undefined> {
    const { lstat } = await import('node:fs/promises');
    const cached = this.#summaries.get(name);
    if (cached) {
      const stats = await lstat(file, { bigint: true }).catch(() => undefined);
      if (stats && stampOf(stats) === cached.stamp) return structuredClone(cached.summary);
    }
    let state: FileState;
    try {
      state = await this.#read(file, name);
    } catch (error) {
      const cause = codeOf((error as { cause?: unknown }).cause) ?? codeOf(error) ?? describeThrown(error);
      this.#report({ type: 'session-skipped', file, reason: 'unreadable', path: '$', cause });
      return undefined;
    }
    if (state.kind === 'absent') return undefined;
    if (state.kind === 'corrupt') {
      this.#report({ type: 'session-skipped', file, reason: state.reason, path: state.error.path });
      return undefined;
    }
    const { sessionId, metadata } = state.envelope.session;
    const summary: SessionSummary = { sessionId, metadata };
    this.#summaries.set(name, { stamp: state.stamp, summary: structuredClone(summary) });
    return summary;
  }

  async #paths(sessionId: string): Promise<Paths> {
    const [{ createHash }, { join }, { mkdir }] = await Promise.all([
      import('node:crypto'),
      import('node:path'),
      import('node:fs/promises'),
    ]);
    this.#ready ??= mkdir(this.directory, { recursive: true }).then(
      () => undefined,
      (error: unknown) => {
        this.#ready = undefined;
        throw new BackendUnavailableError(
          'file',
          `FileSessionStore could not create its directory ${this.directory}: ${describeThrown(error)}. Check the path and its permissions.`,
          { cause: error },
        );
      },
    );
    await this.#ready;
    const sha256Hex = (text: string, encoding: 'utf8' | 'latin1') => createHash('sha256').update(text, encoding).digest('hex');
    return {
      file: join(
        this.directory,
        sessionFileName(sessionId, (encoded) => sha256Hex(encoded, 'latin1')),
      ),
      legacy: join(this.directory, `${sha256Hex(sessionId, 'utf8')}.json`),
    };
  }

  /** The session's file, or else its legacy file when that holds exactly this id. */
  async #current(paths: Paths, sessionId: string): Promise<FileState> {
    const found = await this.#read(paths.file, sessionId);
    if (found.kind === 'ok' && found.envelope.session.sessionId !== sessionId) return this.#wrongId(found, sessionId);
    if (found.kind !== 'absent') return found;
    const legacy = await this.#read(paths.legacy, sessionId);
    if (legacy.kind === 'ok' && legacy.envelope.session.sessionId !== sessionId) return { kind: 'absent' }; // another id's file
    return legacy;
  }

  /** Moves a legacy file to the session's name (under the lock) and reads it from there. */
  async #migrate(paths: Paths, sessionId: string, signal: AbortSignal | undefined): Promise<FileState> {
    const { rename } = await import('node:fs/promises');
    const release = await this.#lock(paths.file, sessionId, signal);
    try {
      if (!(await this.#checkEntry(paths.file, sessionId, 'read'))) {
        const legacy = await this.#read(paths.legacy, sessionId);
        if (legacy.kind === 'ok' && legacy.envelope.session.sessionId === sessionId)
          await rename(paths.legacy, paths.file).catch((error: unknown) => {
            if (codeOf(error) !== 'ENOENT') throw this.#ioError('move', sessionId, paths.legacy, error);
          });
      }
      return await this.#current(paths, sessionId);
    } finally {
      await release();
    }
  }

  #wrongId(found: Extract<FileState, { kind: 'ok' }>, sessionId: string): FileState {
    const error = new SessionStateError(
      '$.sessionId',
      `holds session ${shortId(found.envelope.session.sessionId)}, not ${shortId(sessionId)} (in ${found.file}; fix or delete the file)`,
    );
    return { kind: 'corrupt', file: found.file, error, reason: 'wrong-session-id' };
  }

  /**
   * Whether something is at a session's path; a regular file is expected.
   * @throws ConfigurationError for a symbolic link, BackendUnavailableError for anything else that is not a file.
   */
  async #checkEntry(file: string, sessionId: string, operation: string): Promise<boolean> {
    const { lstat } = await import('node:fs/promises');
    let stats: Awaited<ReturnType<typeof lstat>>;
    try {
      stats = await lstat(file);
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return false;
      throw this.#ioError(operation, sessionId, file, error);
    }
    if (stats.isSymbolicLink()) throw this.#linkError(sessionId, file);
    if (!stats.isFile()) throw this.#notAFile(operation, sessionId, file);
    return true;
  }

  /** Reads and checks one file, never following a symbolic link. */
  async #read(file: string, sessionId: string): Promise<FileState> {
    const [{ open, lstat }, { constants }] = await Promise.all([import('node:fs/promises'), import('node:fs')]);
    const noFollow: number = constants.O_NOFOLLOW ?? 0;
    let text: string;
    let stats: BigIntStats;
    try {
      if (noFollow === 0 && (await lstat(file)).isSymbolicLink()) throw this.#linkError(sessionId, file);
      const handle = await open(file, constants.O_RDONLY | noFollow);
      try {
        stats = await handle.stat({ bigint: true });
        if (!stats.isFile()) throw this.#notAFile('read', sessionId, file);
        text = await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
    } catch (error) {
      if (ConfigurationError.isInstance(error) || BackendUnavailableError.isInstance(error)) throw error;
      const code = codeOf(error);
      if (code === 'ENOENT') return { kind: 'absent' };
      if (
        (code === 'ELOOP' || code === 'EMLINK') &&
        (await lstat(file).then(
          (s) => s.isSymbolicLink(),
          () => false,
        ))
      )
        throw this.#linkError(sessionId, file);
      throw this.#ioError('read', sessionId, file, error);
    }
    const corrupt = (reason: FileSessionProblem, path: string, problem: string, cause?: unknown): FileState => ({
      kind: 'corrupt',
      file,
      reason,
      error: new SessionStateError(
        path,
        `${problem} (session ${shortId(sessionId)} in ${file}; fix or delete the file, or pass onCorrupt: 'quarantine')`,
        { cause },
      ),
    });
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      return corrupt('invalid-json', '$', `is not valid JSON (${describeThrown(error)})`, error);
    }
    const envelope = raw as Partial<Envelope> | null;
    if (typeof envelope !== 'object' || envelope === null || typeof envelope.etag !== 'string')
      return corrupt('invalid-session', '$.etag', 'missing: the file is not a session file of this store');
    try {
      const session = parseSessionJson(envelope.session);
      // A version-1 session kept no times: the file's last write is the best there is, and stays put.
      if ((envelope.session as { version?: unknown }).version === 1) {
        const written = new Date(Number(stats.mtimeMs)).toISOString();
        session.metadata = { createdAt: written, updatedAt: written };
      }
      return { kind: 'ok', file, envelope: { etag: envelope.etag, session }, stamp: stampOf(stats) };
    } catch (error) {
      const invalid = error as SessionStateError;
      return corrupt('invalid-session', invalid.path, invalid.problem, error);
    }
  }

  /** Renames a corrupt file aside and reports it. Call with the lock held. */
  async #quarantine(found: Extract<FileState, { kind: 'corrupt' }>, sessionId: string): Promise<void> {
    const { rename } = await import('node:fs/promises');
    const stamp = new Date().toISOString().replace(/[-:.]/g, '');
    const quarantinedAs = `${found.file}.corrupt-${stamp}-${generateId().slice(0, 8)}`;
    try {
      await rename(found.file, quarantinedAs);
    } catch (error) {
      throw this.#ioError('quarantine', sessionId, found.file, error);
    }
    const event: FileSessionStoreEvent = {
      type: 'session-quarantined',
      sessionId,
      file: found.file,
      quarantinedAs,
      reason: found.reason,
      path: found.error.path,
    };
    this.#report(event);
  }

  #report(event: FileSessionStoreEvent): void {
    try {
      this.#onEvent?.(event);
    } catch (error) {
      console.warn(`[ctx] The onEvent handler of FileSessionStore ${this.directory} threw on a "${event.type}" event:`, error);
    }
  }

  /** Removes a file; resolves to whether it was there. */
  async #remove(file: string, sessionId: string): Promise<boolean> {
    const { rm } = await import('node:fs/promises');
    try {
      await rm(file);
      return true;
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return false;
      throw this.#ioError('delete', sessionId, file, error);
    }
  }

  #ioError(operation: string, sessionId: string, file: string, error: unknown): BackendUnavailableError {
    const code = codeOf(error);
    const advice =
      code === 'EACCES' || code === 'EPERM'
        ? 'this process may not access it: check the owner and permissions of the file and of the store directory'
        : code === 'EISDIR' || code === 'ENOTDIR'
          ? 'something other than a session file is in the way: move it out of the store directory'
          : code === 'ENOSPC' || code === 'EDQUOT'
            ? 'the disk is full: free some space'
            : code === 'EROFS'
              ? 'the file system is read-only'
              : 'check the disk and the store directory, then retry';
    return new BackendUnavailableError(
      'file',
      `FileSessionStore could not ${operation} session ${shortId(sessionId)} at ${file} (${describeThrown(error)}); ${advice}.`,
      { cause: error },
    );
  }

  #notAFile(operation: string, sessionId: string, file: string): BackendUnavailableError {
    return new BackendUnavailableError(
      'file',
      `FileSessionStore could not ${operation} session ${shortId(sessionId)}: ${file} is not a regular file (a directory or a device is in its place); move it out of the store directory.`,
    );
  }

  #linkError(sessionId: string, file: string): ConfigurationError {
    return new ConfigurationError(
      `FileSessionStore refuses to follow the symbolic link at ${file} (session ${shortId(sessionId)}): session files must be regular files inside ${this.directory}. Replace the link with the file it points to, or delete it.`,
    );
  }

  /**
   * Takes the file's lock: an exclusive-create lock file holding the owner's host and pid. A lock
   * whose owner on this host is gone, or older than 30 s, is broken. Resolves to the release.
   */
  async #lock(file: string, sessionId: string, signal?: AbortSignal): Promise<() => Promise<void>> {
    const [{ open, readFile, rm, lstat }, { hostname }] = await Promise.all([import('node:fs/promises'), import('node:os')]);
    const lock = `${file}.lock`;
    const owner = `${hostname()} ${process.pid}`;
    const deadline = Date.now() + this.#lockTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      try {
        const handle = await open(lock, 'wx');
        await handle.writeFile(owner).finally(() => handle.close());
        return () =>
          rm(lock, { force: true }).catch((error: unknown) => {
            throw this.#ioError('unlock', sessionId, lock, error);
          });
      } catch (error) {
        if (codeOf(error) !== 'EEXIST') throw this.#ioError('lock', sessionId, lock, error);
      }
      const stats = await lstat(lock).catch(() => undefined);
      const age = stats ? Date.now() - stats.mtimeMs : 0;
      const holder = stats?.isFile() ? await readFile(lock, 'utf8').catch(() => '') : '';
      if (age > STALE_LOCK_MS || ownerIsGone(holder, hostname())) {
        await rm(lock, { force: true }).catch(() => undefined);
        continue;
      }
      if (Date.now() > deadline) {
        throw new BackendUnavailableError(
          'file',
          `Could not lock ${lock} (session ${shortId(sessionId)}) within ${this.#lockTimeoutMs} ms; another writer holds it (a lock older than ${STALE_LOCK_MS / 1000} s is broken automatically).`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, 2 + attempt * 2 + Math.random() * 5)));
    }
  }
}
