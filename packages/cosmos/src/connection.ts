import type { OptionFlags } from '@ctx/core/backend';
import {
  CosmosClient,
  type Container,
  type ContainerDefinition,
  type CosmosClientOptions,
  type IndexingPolicy,
  type PartitionKeyDefinition,
} from '@azure/cosmos';
import { BackendUnavailableError, ConfigurationError, CtxError, SessionStateError } from '@ctx/core';
import { abortable, checkInteger, checkPositiveNumber, shortId, withDeadline } from '@ctx/core/backend';
import { missingRangeIndexes, type RangeIndexNeed } from './indexing.js';

/** An Azure AD (Entra ID) token credential, e.g. `DefaultAzureCredential` from `@azure/identity`. */
export type CosmosTokenCredential = NonNullable<CosmosClientOptions['aadCredentials']>;

/**
 * How a Cosmos provider or store reaches its container. Give exactly one of `container`, `client`
 * and `endpoint` (with `key` or `credential`). With `endpoint` the package creates its own
 * `CosmosClient` and disposes of it in `close()`; an injected client or container is shared and
 * never closed here.
 */
export interface CosmosConnectionOptions {
  /** A `Container` to use as it is (its database and id are taken from it). Not closed by `close()`. */
  container?: Container;
  /** A `CosmosClient` to share with the app; `databaseId` and `containerId` name the container. Not closed by `close()`. */
  client?: CosmosClient;
  /** The account endpoint, e.g. `https://<account>.documents.azure.com:443/`: the package creates and owns a client. */
  endpoint?: string;
  /** The account key, with `endpoint`. */
  key?: string;
  /** An Entra ID token credential (e.g. `new DefaultAzureCredential()`), with `endpoint`, instead of `key`. */
  credential?: CosmosTokenCredential;
  /**
   * More `CosmosClientOptions` for an owned client, merged over the defaults
   * `{ connectionPolicy: { requestTimeout: timeoutMs, retryOptions: { maxRetryAttemptCount: 9,
   * maxWaitTimeInSeconds: timeoutMs / 1000 } } }` (`connectionPolicy` is merged one level deep).
   */
  clientOptions?: Omit<CosmosClientOptions, 'endpoint' | 'key' | 'aadCredentials'>;
  /** The database. Default `ctx`. Ignored with `container`. */
  databaseId?: string;
  /** The container. Default `history` for the history provider, `sessions` for the store. Ignored with `container`. */
  containerId?: string;
  /**
   * Create the database and container (with the partition key, indexing policy and TTL setting the
   * package needs) when they do not exist. Default false: a missing container is a
   * `ConfigurationError`. Either way the partition key of an existing container is checked once,
   * before the first operation.
   */
  createIfNotExists?: boolean;
  /**
   * Upper bound of every public call in milliseconds (all its requests, the SDK's retries and this
   * package's retries included): past it the call fails with `BackendUnavailableError`. Default 15000.
   */
  timeoutMs?: number;
  /**
   * How many times this package retries a request that failed with a transient status (408, 449,
   * 500, 502, 503, 504) or a dropped connection, with exponential backoff from 100 ms, within
   * `timeoutMs`. 429 throttling is retried by the SDK (`retryOptions` of the client), not here.
   * Every operation of the package is safe to retry. Default 3.
   */
  retries?: number;
}

/** Every option of `CosmosConnectionOptions`, spread into the option names of the classes built on it. */
export const CONNECTION_OPTIONS: OptionFlags<CosmosConnectionOptions> = {
  container: true,
  client: true,
  endpoint: true,
  key: true,
  credential: true,
  clientOptions: true,
  databaseId: true,
  containerId: true,
  createIfNotExists: true,
  timeoutMs: true,
  retries: true,
};

/** The default database id. */
export const DEFAULT_DATABASE_ID = 'ctx';
/** The default upper bound of one call, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 15_000;
/** The default number of retries of transient failures. */
export const DEFAULT_RETRIES = 3;

/** What a container must look like for one kind of use. Internal. */
export interface ContainerSpec {
  /** The partition key definition the package creates and expects. */
  partitionKey: PartitionKeyDefinition;
  /** The indexing policy the package creates. */
  indexingPolicy: IndexingPolicy;
  /** Whether items carry a `ttl` (the container then needs TTL on: `defaultTtl` set). */
  needsTtl: boolean;
  /** How to describe a wrong partition key: what the package needs and how to fix it. */
  advice: string;
  /** The range indexes its queries sort by (checked in an existing container's policy). */
  rangeIndexes?: readonly RangeIndexNeed[];
}

/** What a failed call was doing, for error messages. */
export interface CallSite {
  /** The public method, e.g. `saveMessages`. */
  operation: string;
  /** The session it worked on, when there is one. */
  sessionId?: string;
  /** The user whose sessions a listing read, when it was one user's. */
  userId?: string;
}

/** One step of an operation: gets the container and the abort signal to pass to the SDK. */
export type Step<T> = (container: Container, abortSignal: AbortSignal) => Promise<T>;

/** One public call in progress: its deadline, its signal, and a way to run steps with retries. */
export interface Operation {
  /** Runs one request with the package's retries. Statuses listed in `passThrough` are rethrown untouched for the caller to handle. */
  step<T>(fn: Step<T>, passThrough?: readonly number[]): Promise<T>;
  /** The signal that aborts the whole call (caller's signal or the deadline). */
  readonly signal: AbortSignal;
}

const TRANSIENT_STATUS = new Set([408, 449, 500, 502, 503, 504]);
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'REQUEST_SEND_ERROR',
  'TimeoutError',
]);

/**
 * The HTTP status (or network code) of an error the SDK threw, if it has one. A failed
 * transactional batch request is rethrown by the SDK as a plain `Error` ("Batch request error: ...")
 * without its status; the status of its last attempt is then read from the error's diagnostics.
 */
export function statusOf(error: unknown): number | string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'number' || typeof code === 'string') return code;
  const statusCode = (error as { statusCode?: unknown }).statusCode;
  if (typeof statusCode === 'number') return statusCode;
  const attempts = (error as { diagnostics?: { clientSideRequestStatistics?: { gatewayStatistics?: unknown } } }).diagnostics
    ?.clientSideRequestStatistics?.gatewayStatistics;
  const last = Array.isArray(attempts) ? (attempts.at(-1) as { statusCode?: unknown } | undefined)?.statusCode : undefined;
  return typeof last === 'number' && last > 0 ? last : undefined;
}

/**
 * Whether a failure is worth retrying: a transient status, a dropped connection, or a failed
 * transactional batch request (the SDK rethrows those as plain errors without their status).
 */
export function isTransient(error: unknown): boolean {
  const status = statusOf(error);
  if (typeof status === 'number') return TRANSIENT_STATUS.has(status);
  if (typeof status === 'string') return NETWORK_CODES.has(status);
  const message = error instanceof Error ? error.message : '';
  return message.startsWith('Batch request error:') || /socket hang up|ECONNRESET|ECONNREFUSED|EPIPE/.test(message);
}

/** A connection with the package's container checks, deadlines, retries and error rules. Internal. */
export class CosmosConnection {
  readonly owned: boolean;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly #client: CosmosClient;
  readonly #container: Container;
  readonly #spec: ContainerSpec;
  readonly #owner: string;
  readonly #create: boolean;
  #ready: Promise<void> | undefined;
  #closed = false;
  #indexingPolicy: IndexingPolicy | undefined;

  constructor(options: CosmosConnectionOptions, owner: string, defaultContainerId: string, spec: ContainerSpec) {
    this.#owner = owner;
    this.#spec = spec;
    this.#create = options.createIfNotExists ?? false;
    const given = [options.container !== undefined, options.client !== undefined, options.endpoint !== undefined].filter(Boolean).length;
    if (given !== 1) {
      throw new ConfigurationError(
        `${owner} needs exactly one of \`container\` (an @azure/cosmos Container), \`client\` (a CosmosClient) or \`endpoint\` (with \`key\` or \`credential\`); got ${given}.`,
      );
    }
    const timeoutMs = checkPositiveNumber(owner, 'timeoutMs', options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.timeoutMs = timeoutMs;
    this.retries = checkInteger(owner, 'retries', options.retries ?? DEFAULT_RETRIES, 0);
    const databaseId = checkResourceId(owner, 'databaseId', options.databaseId ?? DEFAULT_DATABASE_ID);
    const containerId = checkResourceId(owner, 'containerId', options.containerId ?? defaultContainerId);

    if (options.container !== undefined) {
      const container = options.container as Partial<Container> | null;
      if (
        typeof container !== 'object' ||
        container === null ||
        typeof container.read !== 'function' ||
        typeof container.item !== 'function' ||
        !container.database
      ) {
        throw new ConfigurationError(`${owner}: \`container\` must be an @azure/cosmos Container (client.database(id).container(id)).`);
      }
      this.#container = options.container;
      this.#client = options.container.database.client;
      this.owned = false;
      return;
    }
    if (options.client !== undefined) {
      const client = options.client as Partial<CosmosClient> | null;
      if (typeof client !== 'object' || client === null || typeof client.database !== 'function') {
        throw new ConfigurationError(`${owner}: \`client\` must be an @azure/cosmos CosmosClient.`);
      }
      this.#client = options.client;
      this.#container = options.client.database(databaseId).container(containerId);
      this.owned = false;
      return;
    }
    if (typeof options.endpoint !== 'string' || !/^https?:\/\//.test(options.endpoint)) {
      throw new ConfigurationError(`${owner}: \`endpoint\` must be the account URL (https://<account>.documents.azure.com:443/).`);
    }
    if ((options.key === undefined) === (options.credential === undefined)) {
      throw new ConfigurationError(
        `${owner}: with \`endpoint\`, give exactly one of \`key\` (the account key) and \`credential\` (an Entra ID TokenCredential).`,
      );
    }
    const policy = options.clientOptions?.connectionPolicy ?? {};
    this.#client = new CosmosClient({
      ...options.clientOptions,
      endpoint: options.endpoint,
      ...(options.key !== undefined ? { key: options.key } : { aadCredentials: options.credential! }),
      connectionPolicy: {
        requestTimeout: timeoutMs,
        ...policy,
        retryOptions: { maxRetryAttemptCount: 9, maxWaitTimeInSeconds: Math.max(1, Math.floor(timeoutMs / 1000)), ...policy.retryOptions },
      },
    });
    this.#container = this.#client.database(databaseId).container(containerId);
    this.owned = true;
  }

  /** The container (its existence and partition key are checked before the first operation). */
  get container(): Container {
    return this.#container;
  }

  /** The client in use (injected, taken from the injected container, or owned). */
  get client(): CosmosClient {
    return this.#client;
  }

  /** The container's indexing policy as read by the container check (undefined before the first call, or when it has none). */
  get indexingPolicy(): IndexingPolicy | undefined {
    return this.#indexingPolicy;
  }

  /** `<database>/<container>`, for error messages and stored-item paths. */
  get where(): string {
    return `${this.#container.database.id}/${this.#container.id}`;
  }

  /**
   * Runs one public call: checks the container (once per instance), bounds everything by
   * `timeoutMs` and honours `signal` (core's `withDeadline`), and turns what fails into a ctx error
   * (`translate`).
   */
  async run<T>(site: CallSite, signal: AbortSignal | undefined, body: (op: Operation) => Promise<T>): Promise<T> {
    signal?.throwIfAborted();
    if (this.#closed) {
      throw new BackendUnavailableError(
        'cosmos',
        `${this.#owner}.${site.operation}${describeSession(site)} was called after close(); create a new instance.`,
      );
    }
    return withDeadline(
      async (combined) => {
        // The container check is shared by concurrent calls: this call stops waiting for it when aborted, the check goes on.
        await abortable(this.#ensureContainer(site), combined);
        return body({ signal: combined, step: (fn, passThrough = []) => this.#step(site, combined, fn, passThrough) });
      },
      {
        timeoutMs: this.timeoutMs,
        signal,
        backend: 'cosmos',
        operation: `Cosmos DB ${this.#owner}.${site.operation}${describeSession(site)} on ${this.where} (${this.#describeEndpoint()})`,
        hint: 'Check that the account is reachable, or raise timeoutMs.',
        mapError: (error) => this.translate(error, site),
      },
    );
  }

  async #step<T>(site: CallSite, signal: AbortSignal, fn: Step<T>, passThrough: readonly number[]): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        signal.throwIfAborted();
        return await abortable(fn(this.#container, signal), signal);
      } catch (error) {
        if (signal.aborted) throw error;
        const status = statusOf(error);
        if (typeof status === 'number' && passThrough.includes(status)) throw error;
        if (attempt >= this.retries || !isTransient(error)) {
          if (CtxError.isInstance(error)) throw error;
          throw this.translate(error, site, attempt + 1);
        }
        const delay = Math.min(2000, 100 * 2 ** attempt) * (0.5 + Math.random() / 2);
        await abortable(new Promise((resolve) => setTimeout(resolve, delay)), signal);
      }
    }
  }

  /** Checks (or creates) the container once per instance, under its own deadline, so one caller's abort never fails another's call. */
  #ensureContainer(site: CallSite): Promise<void> {
    if (!this.#ready) {
      this.#ready = withDeadline(
        (signal) => this.#checkContainer({ signal, step: (fn, passThrough = []) => this.#step(site, signal, fn, passThrough) }),
        {
          timeoutMs: this.timeoutMs,
          backend: 'cosmos',
          operation: `Cosmos DB check of container ${this.where} for ${this.#owner} (${this.#describeEndpoint()})`,
          hint: 'Check that the account is reachable, or raise timeoutMs.',
          // Left as thrown: each waiting call translates it with its own call site.
          mapError: (error) => error as Error,
        },
      ).catch((error: unknown) => {
        this.#ready = undefined;
        throw error;
      });
    }
    return this.#ready;
  }

  async #checkContainer(op: Operation): Promise<void> {
    let definition: ContainerDefinition | undefined;
    try {
      definition = (await op.step((c, abortSignal) => c.read({ abortSignal }), [404])).resource;
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
    if (definition === undefined) {
      if (!this.#create) {
        throw new ConfigurationError(
          `${this.#owner}: container ${this.where} does not exist. Create it with partition key ${JSON.stringify(this.#spec.partitionKey.paths)}${this.#spec.partitionKey.paths.length > 1 ? ' (kind MultiHash)' : ''} and TTL on (defaultTtl -1), or pass createIfNotExists: true.`,
        );
      }
      const database = this.#container.database;
      // Another instance may create them at the same moment: a 409 means it exists now.
      await op
        .step((_, abortSignal) => this.#client.databases.createIfNotExists({ id: database.id }, { abortSignal }), [409])
        .catch(passConflict);
      const created = await op
        .step(
          (_, abortSignal) =>
            database.containers.createIfNotExists(
              { id: this.#container.id, partitionKey: this.#spec.partitionKey, indexingPolicy: this.#spec.indexingPolicy, defaultTtl: -1 },
              { abortSignal },
            ),
          [409],
        )
        .catch(passConflict);
      definition = created?.resource ?? (await op.step((c, abortSignal) => c.read({ abortSignal }))).resource;
    }
    if (definition) this.#verify(definition);
  }

  #verify(definition: ContainerDefinition): void {
    this.#indexingPolicy = definition.indexingPolicy;
    const expected = this.#spec.partitionKey;
    const actual = definition.partitionKey;
    const paths = actual?.paths ?? [];
    const hierarchical = expected.paths.length > 1;
    const sameKind = !hierarchical || String(actual?.kind ?? '') === 'MultiHash';
    if (paths.length !== expected.paths.length || paths.some((p, i) => p !== expected.paths[i]) || !sameKind) {
      throw new ConfigurationError(
        `${this.#owner}: container ${this.where} is partitioned by ${JSON.stringify(paths)}${actual?.kind ? ` (${actual.kind})` : ''}, but this ${this.#owner} needs ${JSON.stringify(expected.paths)}${hierarchical ? ' (MultiHash)' : ''}. ${this.#spec.advice} A container's partition key cannot be changed: use another containerId (createIfNotExists: true creates it).`,
      );
    }
    if (this.#spec.needsTtl && (definition.defaultTtl === undefined || definition.defaultTtl === null)) {
      throw new ConfigurationError(
        `${this.#owner}: ttlSeconds is set, but time to live is off on container ${this.where}, so Cosmos DB would ignore the items' ttl. Turn it on without a default expiry (defaultTtl: -1, e.g. container.replace({ ...definition, defaultTtl: -1 })), or drop ttlSeconds.`,
      );
    }
    const missing = missingRangeIndexes(definition.indexingPolicy, this.#spec.rangeIndexes ?? []);
    if (missing.length > 0) {
      const off = definition.indexingPolicy?.indexingMode === 'none';
      throw new ConfigurationError(
        `${this.#owner}: container ${this.where} ${off ? 'has indexing off (indexingMode "none")' : `has no range index on ${missing.map((m) => m.path).join(' and ')}`}, so Cosmos DB would refuse ${missing.map((m) => m.usedBy).join(' and ')}. ${off ? 'Turn consistent indexing on with' : 'Add'} ${missing.map((m) => `{ "path": "${m.path}" }`).join(', ')} to the indexing policy's includedPaths (a range index, the default kind; no composite index is needed: every query sorts by one property), e.g. container.replace({ ...definition, indexingPolicy }); the README lists the whole policy ctx creates.`,
      );
    }
  }

  /** A ctx error for what an SDK call threw. */
  translate(error: unknown, site: CallSite, attempts = 1): Error {
    if (CtxError.isInstance(error)) return error;
    const status = statusOf(error);
    const message = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim().slice(0, 300);
    const where = `${this.#owner}.${site.operation}${describeSession(site)} on ${this.where}`;
    const tries = attempts > 1 ? ` (${attempts} attempts)` : '';
    if (status === 429) {
      return new BackendUnavailableError(
        'cosmos',
        `Cosmos DB kept throttling ${where} (429 request rate too large) after the SDK's retries (the client's connectionPolicy.retryOptions). Raise the container's RU/s or use autoscale, or allow more retries.`,
        { cause: error },
      );
    }
    if (status === 401 || status === 403) {
      return new ConfigurationError(
        `Cosmos DB refused ${where} (${status}): ${message}. Check the key, or the credential's data-plane role assignment (Entra ID data-plane roles cannot create databases or containers: create them beforehand, or use a key with createIfNotExists).`,
        { cause: error },
      );
    }
    if (status === 404) {
      this.#ready = undefined;
      return new ConfigurationError(
        `${where} failed: the database or container was not found (404). Was it deleted? Create it again, or pass createIfNotExists: true.`,
        { cause: error },
      );
    }
    if (status === 413) {
      return new SessionStateError(
        `cosmos:${this.where}`,
        `a request of ${site.operation}${describeSession(site)} is too large for Cosmos DB (413: ${message}); items are limited to 2 MB`,
        { cause: error },
      );
    }
    if (status === 400) {
      return new ConfigurationError(
        `Cosmos DB rejected ${where} (400): ${message}. Check the container's partition key and indexing policy against the README.`,
        { cause: error },
      );
    }
    if (isTransient(error)) {
      return new BackendUnavailableError(
        'cosmos',
        `Cosmos DB is unavailable for ${where}${tries} (${this.#describeEndpoint()}): ${message}. Retry later; retrying the same call is safe.`,
        { cause: error },
      );
    }
    return new BackendUnavailableError('cosmos', `Cosmos DB failed ${where}${status !== undefined ? ` (${status})` : ''}: ${message}`, {
      cause: error,
    });
  }

  #describeEndpoint(): string {
    try {
      const url = new URL(
        String(
          (this.#client as unknown as { clientContext?: { cosmosClientOptions?: { endpoint?: string } } }).clientContext
            ?.cosmosClientOptions?.endpoint ?? '',
        ),
      );
      return url.host;
    } catch {
      return 'Cosmos DB';
    }
  }

  /** Disposes of an owned client; an injected client or container is left alone. Later calls fail. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.owned) this.#client.dispose();
  }
}

/** Swallows a 409 Conflict (the resource exists now), rethrows anything else. */
function passConflict(error: unknown): undefined {
  if (statusOf(error) === 409) return undefined;
  throw error;
}

function describeSession(site: CallSite): string {
  if (site.sessionId !== undefined) return ` for session ${shortId(site.sessionId)}`;
  return site.userId === undefined ? '' : ` for user ${shortId(site.userId)}`;
}

function checkResourceId(owner: string, name: string, id: unknown): string {
  if (typeof id !== 'string' || id === '' || /[/\\?#]/.test(id) || id.length > 255 || id !== id.trim()) {
    throw new ConfigurationError(
      `${owner}: ${name} must be a non-empty id of at most 255 characters without / \\ ? # or surrounding spaces; got ${JSON.stringify(id)}.`,
    );
  }
  return id;
}
