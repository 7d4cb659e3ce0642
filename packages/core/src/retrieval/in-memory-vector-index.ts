import { checkOptionNames, optionNames } from '../backend/checks.js';
import { checkVectorRecord, compareBySessionAndSequence } from '../backend/vector-record.js';
import { ConfigurationError, InvalidInputError } from '../errors.js';
import type {
  IndexedMessage,
  VectorDeleteTarget,
  VectorIndex,
  VectorIndexCallOptions,
  VectorMatch,
  VectorQuery,
  VectorRange,
  VectorRecord,
  VectorScope,
} from '../contracts/vector-index.js';

/** Options of `InMemoryVectorIndex`. */
export interface InMemoryVectorIndexOptions {
  /** Vector length. Default: the length of the first vector stored. */
  dimensions?: number;
  /**
   * Bounds memory: past this many records, the ones stored longest ago (an upsert counts as new)
   * are dropped. Default: no limit.
   */
  maxRecords?: number;
}

/**
 * Records of one user (or of one session without a user), laid out by dimension: `data` holds
 * component `d` of the unit vector of `rows[row]` at `d * capacity + row`, so a query walks each dimension it uses
 * once over contiguous memory, and a sparse query (hashed words) touches only its non-zero dimensions.
 */
class Partition {
  readonly rows: IndexedMessage[] = [];
  /** Component `d` of row `r` at `data[d * capacity + r]`: one buffer, so growing it is one allocation. */
  data: Float32Array;
  #capacity = 16;

  constructor(readonly dimensions: number) {
    this.data = new Float32Array(dimensions * this.#capacity);
  }

  /** Rows the buffer has room for. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Appends `record` with its vector scaled to length 1. */
  add(record: IndexedMessage, vector: readonly number[]): number {
    const row = this.rows.length;
    if (row === this.#capacity) {
      const old = this.data;
      const before = this.#capacity;
      this.#capacity *= 2;
      this.data = new Float32Array(this.dimensions * this.#capacity);
      for (let d = 0; d < this.dimensions; d++) this.data.set(old.subarray(d * before, d * before + row), d * this.#capacity);
    }
    const { data } = this;
    const capacity = this.#capacity;
    let sum = 0;
    for (let d = 0; d < this.dimensions; d++) sum += vector[d]! * vector[d]!;
    const scale = sum === 0 ? 0 : 1 / Math.sqrt(sum);
    for (let d = 0; d < this.dimensions; d++) data[d * capacity + row] = vector[d]! * scale;
    this.rows.push(record);
    return row;
  }

  /** Removes `row` by moving the last row into it; returns the record that moved there, if any. */
  remove(row: number): IndexedMessage | undefined {
    const last = this.rows.length - 1;
    const moved = last === row ? undefined : this.rows[last]!;
    if (moved) {
      const { data } = this;
      const capacity = this.#capacity;
      for (let d = 0; d < this.dimensions; d++) data[d * capacity + row] = data[d * capacity + last]!;
      this.rows[row] = moved;
    }
    this.rows.pop();
    return moved;
  }
}

interface Location {
  partition: Partition;
  row: number;
}

const IN_MEMORY_VECTOR_INDEX_OPTIONS = optionNames<InMemoryVectorIndexOptions>()({ dimensions: true, maxRecords: true });

/**
 * A `VectorIndex` held in memory: exact cosine k-NN over the records of the filter's user (or
 * session), for tests, examples, single-process apps and benchmarks. Records are copied in and out,
 * so nothing a caller changes afterwards reaches the index. Lost when the process ends.
 * @throws ConfigurationError (constructor) for a `dimensions` or `maxRecords` that is not a positive integer.
 */
export class InMemoryVectorIndex implements VectorIndex {
  readonly specificationVersion = 'v1';
  #dimensions: number | undefined;
  readonly #maxRecords: number;
  /** Every record by id, oldest write first (the eviction order of `maxRecords`). */
  readonly #byId = new Map<string, Location>();
  /** Partitions by user id, or by `\u0000` + session id for records without a user. */
  readonly #partitions = new Map<string, Partition>();
  /** Record ids by session id. */
  readonly #bySession = new Map<string, Set<string>>();
  /** Scratch scores of one partition, reused by every query (queries run one at a time: they never await). */
  #scores = new Float64Array(0);

  constructor(options: InMemoryVectorIndexOptions = {}) {
    checkOptionNames('InMemoryVectorIndex', options, IN_MEMORY_VECTOR_INDEX_OPTIONS);
    for (const key of ['dimensions', 'maxRecords'] as const) {
      const value = options[key];
      if (value !== undefined && !(Number.isInteger(value) && value > 0))
        throw new ConfigurationError(`InMemoryVectorIndex: ${key} must be a positive integer, got ${String(value)}.`);
    }
    this.#dimensions = options.dimensions;
    this.#maxRecords = options.maxRecords ?? Number.POSITIVE_INFINITY;
  }

  /** Vector length: the option, else that of the first vector stored; undefined before that. */
  get dimensions(): number | undefined {
    return this.#dimensions;
  }

  /** How many records are stored. */
  get size(): number {
    return this.#byId.size;
  }

  /**
   * Stores the records, replacing those with the same id.
   * @throws InvalidInputError naming the record for a malformed one (nothing of the batch is stored).
   */
  async upsert(records: readonly VectorRecord[], options?: VectorIndexCallOptions): Promise<void> {
    options?.signal?.throwIfAborted();
    if (!Array.isArray(records)) throw new InvalidInputError('InMemoryVectorIndex.upsert: records must be an array of vector records.');
    let dimensions = this.#dimensions;
    const checked = records.map((record, i) => {
      const copy = checkVectorRecord(record, i, { owner: 'InMemoryVectorIndex', dimensions });
      dimensions ??= record.vector.length;
      return { copy, vector: record.vector };
    });
    this.#dimensions = dimensions;
    for (const { copy, vector } of checked) {
      this.#remove(copy.id);
      const key = partitionKey(copy);
      let partition = this.#partitions.get(key);
      if (!partition) {
        partition = new Partition(dimensions!);
        this.#partitions.set(key, partition);
      }
      this.#byId.set(copy.id, { partition, row: partition.add(copy, vector) });
      let ids = this.#bySession.get(copy.sessionId);
      if (!ids) this.#bySession.set(copy.sessionId, (ids = new Set()));
      ids.add(copy.id);
    }
    while (this.#byId.size > this.#maxRecords) this.#remove(this.#byId.keys().next().value!);
  }

  /**
   * The `topK` closest records of the scope, best first.
   * @throws InvalidInputError for an empty scope, a `topK` that is not a positive integer, or a vector of the wrong length.
   */
  async query(query: VectorQuery, options?: VectorIndexCallOptions): Promise<VectorMatch[]> {
    options?.signal?.throwIfAborted();
    const { vector, topK, filter, minScore } = query ?? ({} as VectorQuery);
    checkScope('query', filter);
    if (!Number.isInteger(topK) || topK <= 0)
      throw new InvalidInputError(`InMemoryVectorIndex.query: topK must be a positive integer, got ${String(topK)}.`, { limit: 'topK' });
    if (!Array.isArray(vector) || !vector.every(Number.isFinite))
      throw new InvalidInputError('InMemoryVectorIndex.query: vector must be an array of finite numbers.');
    if (minScore !== undefined && !Number.isFinite(minScore))
      throw new InvalidInputError(`InMemoryVectorIndex.query: minScore must be a finite number, got ${String(minScore)}.`);
    if (this.#dimensions === undefined) return [];
    if (vector.length !== this.#dimensions)
      throw new InvalidInputError(
        `InMemoryVectorIndex.query: the query vector has ${vector.length} dimensions, the index ${this.#dimensions}; embed queries with the model that embedded the records.`,
      );
    const exclude = filter.excludeMessageIds?.length ? new Set(filter.excludeMessageIds) : undefined;
    const best = new TopK(topK);
    const unit = unitVector(vector);
    const used: number[] = [];
    for (let d = 0; d < unit.length; d++) if (unit[d] !== 0) used.push(d);
    for (const partition of this.#partitionsOf(filter)) {
      const n = partition.rows.length;
      if (this.#scores.length < n) this.#scores = new Float64Array(partition.capacity);
      const scores = this.#scores;
      scores.fill(0, 0, n);
      const { data, capacity } = partition;
      for (const d of used) {
        const q = unit[d]!;
        const base = d * capacity;
        for (let row = 0; row < n; row++) scores[row]! += q * data[base + row]!;
      }
      const floor = minScore ?? Number.NEGATIVE_INFINITY;
      for (let row = 0; row < n; row++) {
        const score = scores[row]!;
        if (score < floor || !best.admits(score)) continue;
        const record = partition.rows[row]!;
        if (filter.sessionId !== undefined && record.sessionId !== filter.sessionId) continue;
        if (filter.userId !== undefined && record.userId !== filter.userId) continue;
        if (exclude?.has(record.messageId)) continue;
        best.add(score, record);
      }
    }
    return best.sorted().map(({ score, record }) => ({ ...record, score: Math.max(-1, Math.min(1, score)) }));
  }

  /**
   * The records of one session within the sequence range, by sequence.
   * @throws InvalidInputError for a missing session id or a range that is not two integers.
   */
  async getRange(range: VectorRange, options?: VectorIndexCallOptions): Promise<IndexedMessage[]> {
    options?.signal?.throwIfAborted();
    const { sessionId, userId, fromSequence, toSequence } = range ?? ({} as VectorRange);
    if (typeof sessionId !== 'string' || !sessionId)
      throw new InvalidInputError('InMemoryVectorIndex.getRange: sessionId must be a non-empty string.');
    if (!Number.isSafeInteger(fromSequence) || !Number.isSafeInteger(toSequence))
      throw new InvalidInputError(
        `InMemoryVectorIndex.getRange: fromSequence and toSequence must be integers, got ${String(fromSequence)} and ${String(toSequence)}.`,
      );
    const out: IndexedMessage[] = [];
    for (const id of this.#bySession.get(sessionId) ?? []) {
      const { partition, row } = this.#byId.get(id)!;
      const record = partition.rows[row]!;
      if (record.sequence < fromSequence || record.sequence > toSequence) continue;
      if (userId !== undefined && record.userId !== userId) continue;
      out.push({ ...record });
    }
    return out.sort((a, b) => a.sequence - b.sequence);
  }

  /**
   * Every record of the scope, without vectors, by session id and then sequence.
   * @throws InvalidInputError for an empty scope.
   */
  async list(scope: VectorScope, options?: VectorIndexCallOptions): Promise<IndexedMessage[]> {
    options?.signal?.throwIfAborted();
    checkScope('list', scope);
    const out: IndexedMessage[] = [];
    for (const partition of this.#partitionsOf(scope))
      for (const record of partition.rows)
        if (
          (scope.sessionId === undefined || record.sessionId === scope.sessionId) &&
          (scope.userId === undefined || record.userId === scope.userId)
        )
          out.push({ ...record });
    return out.sort(compareBySessionAndSequence);
  }

  /**
   * Removes records by id or every record of a scope.
   * @throws InvalidInputError for an empty scope or ids that are not strings.
   */
  async delete(target: VectorDeleteTarget, options?: VectorIndexCallOptions): Promise<void> {
    options?.signal?.throwIfAborted();
    if (target && 'ids' in target) {
      if (!Array.isArray(target.ids) || !target.ids.every((id) => typeof id === 'string'))
        throw new InvalidInputError('InMemoryVectorIndex.delete: ids must be an array of strings.');
      for (const id of target.ids) this.#remove(id);
      return;
    }
    checkScope('delete', target);
    const ids: string[] = [];
    for (const partition of this.#partitionsOf(target)) {
      for (const record of partition.rows) {
        if (target.sessionId !== undefined && record.sessionId !== target.sessionId) continue;
        if (target.userId !== undefined && record.userId !== target.userId) continue;
        ids.push(record.id);
      }
    }
    for (const id of ids) this.#remove(id);
  }

  /** The partitions that may hold records of `scope`. */
  *#partitionsOf(scope: VectorScope): Iterable<Partition> {
    if (scope.userId !== undefined) {
      const partition = this.#partitions.get(scope.userId);
      if (partition) yield partition;
      return;
    }
    const seen = new Set<Partition>();
    for (const id of this.#bySession.get(scope.sessionId!) ?? []) {
      const { partition } = this.#byId.get(id)!;
      if (!seen.has(partition)) {
        seen.add(partition);
        yield partition;
      }
    }
  }

  #remove(id: string): void {
    const location = this.#byId.get(id);
    if (!location) return;
    const { partition, row } = location;
    const record = partition.rows[row]!;
    const moved = partition.remove(row);
    if (moved) this.#byId.get(moved.id)!.row = row;
    this.#byId.delete(id);
    const ids = this.#bySession.get(record.sessionId)!;
    ids.delete(id);
    if (!ids.size) this.#bySession.delete(record.sessionId);
    if (!partition.rows.length) this.#partitions.delete(partitionKey(record));
  }
}

/** The best `k` of a stream of scored records. */
class TopK {
  readonly #k: number;
  readonly #items: { score: number; record: IndexedMessage }[] = [];

  constructor(k: number) {
    this.#k = k;
  }

  admits(score: number): boolean {
    return this.#items.length < this.#k || score > this.#items[this.#items.length - 1]!.score;
  }

  add(score: number, record: IndexedMessage): void {
    const items = this.#items;
    let i = items.length;
    while (i > 0 && items[i - 1]!.score < score) i--;
    items.splice(i, 0, { score, record });
    if (items.length > this.#k) items.pop();
  }

  sorted(): { score: number; record: IndexedMessage }[] {
    return this.#items;
  }
}

function partitionKey(record: IndexedMessage): string {
  return record.userId ?? `\u0000${record.sessionId}`;
}

function unitVector(vector: readonly number[]): number[] {
  let sum = 0;
  for (const x of vector) sum += x * x;
  if (sum === 0) return [...vector];
  const scale = 1 / Math.sqrt(sum);
  return vector.map((x) => x * scale);
}

function checkScope(operation: string, scope: VectorScope | undefined): asserts scope is VectorScope {
  const ok = (v: unknown) => v === undefined || (typeof v === 'string' && v.length > 0);
  if (!scope || typeof scope !== 'object' || !ok(scope.userId) || !ok(scope.sessionId))
    throw new InvalidInputError(`InMemoryVectorIndex.${operation}: the filter's userId and sessionId must be non-empty strings when set.`);
  if (scope.userId === undefined && scope.sessionId === undefined)
    throw new InvalidInputError(
      `InMemoryVectorIndex.${operation}: the filter needs a userId or a sessionId; an index is never searched or cleared across users.`,
    );
}
