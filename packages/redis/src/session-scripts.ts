/**
 * The Lua scripts of the session store and its listing indexes.
 *
 * A session is a hash: `json`, `etag`, `rev` (the revision of its last write: the server's
 * microsecond clock, always above the previous `rev`), and `user` (its `metadata.userId`, absent
 * when it has none). A listing index is three keys sharing one hash tag:
 * - `order`, a sorted set: member = session id, score = `metadata.updatedAt` in ms since the epoch;
 * - `meta`, a hash: session id -> `<rev> <metadata JSON>`;
 * - `expires`, a sorted set: member = session id, score = when its session expires (ms), only for
 *   sessions written with a TTL.
 * Reads go newest first: `ZREVRANGE`, which orders equal scores by member descending in byte order.
 */

/** Lua: the server's clock in microseconds, and byte-order comparison (Lua's `<` follows the locale). */
const COMMON = `
local function nowMicros()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fmt(n) return string.format('%.0f', n) end
local function revOf(entry)
  if not entry then return nil end
  return tonumber(string.match(entry, '^(%d+) '))
end
local function bytesBefore(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
`;

/**
 * Lua: index maintenance. `put` writes an entry unless the index holds one of a later revision (a
 * slower write of an older revision never overwrites a newer one); `remove` drops an entry unless
 * it is of a later revision than `rev` (nil: whatever its revision).
 */
const INDEX = `
local function indexPut(order, meta, expires, sid, ms, rev, metadata, expireAt)
  local cur = revOf(redis.call('HGET', meta, sid))
  if cur and cur > tonumber(rev) then return end
  redis.call('ZADD', order, ms, sid)
  redis.call('HSET', meta, sid, rev .. ' ' .. metadata)
  if expireAt then redis.call('ZADD', expires, expireAt, sid) else redis.call('ZREM', expires, sid) end
end
local function indexRemove(order, meta, expires, sid, rev)
  if rev then
    local cur = revOf(redis.call('HGET', meta, sid))
    if cur and cur > tonumber(rev) then return end
  end
  redis.call('ZREM', order, sid)
  redis.call('HDEL', meta, sid)
  redis.call('ZREM', expires, sid)
end
`;

/**
 * Lua: the compare-and-set of a session (KEYS[1]) and its bookkeeping, in two steps:
 * `sessionCheck()` returns the reply to send when nothing is to be written (a conflict, or a resent
 * write: one whose new etag is already stored was applied before and reports success again), and
 * `sessionApply()` writes, setting `rev`, `prev` (the user stored before) and `expireAt` (ms, or nil).
 * ARGV: 1 mode (any | absent | match | reindex: write only the bookkeeping, if the etag is ARGV 2),
 * 2 expected etag, 3 json, 4 new etag, 5 ttlSeconds (0 = none), 6 session id, 7 userId, 8 '1' when
 * there is a userId.
 */
const SESSION_WRITE = `
local key = KEYS[1]
local mode, expected, json, etag = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ttl = tonumber(ARGV[5])
local sid, user, hasUser = ARGV[6], ARGV[7], ARGV[8] == '1'
local rev, prev, expireAt
local function sessionCheck()
  local cur = redis.call('HGET', key, 'etag')
  if cur == etag then return { 1, etag } end
  if mode == 'absent' and cur then return { 0, cur } end
  if (mode == 'match' or mode == 'reindex') and cur ~= expected then
    if cur then return { 0, cur } end
    return { 0 }
  end
  return nil
end
local function sessionApply()
  prev = redis.call('HGET', key, 'user')
  local now = nowMicros()
  local before = tonumber(redis.call('HGET', key, 'rev') or '0') or 0
  if now <= before then now = before + 1 end
  rev = fmt(now)
  if mode ~= 'reindex' then
    redis.call('HSET', key, 'json', json, 'etag', etag)
    if ttl > 0 then redis.call('EXPIRE', key, ttl) else redis.call('PERSIST', key) end
  end
  redis.call('HSET', key, 'rev', rev)
  if hasUser then redis.call('HSET', key, 'user', user) else redis.call('HDEL', key, 'user') end
  local pttl = redis.call('PTTL', key)
  if pttl > 0 then expireAt = fmt(math.floor(now / 1000) + pttl) end
end
`;

/** The first element of a reply that asks for the call again, with the index of the user stored. */
export const MOVED = 'moved';

/**
 * Lua: replies `{ 'moved', '1' or '0', stored user }` when the session's stored user is not the
 * one the caller expected (ARGV `hasGuess`, `guess`), so it can pass that user's index keys.
 */
const MOVED_CHECK = `
local function movedCheck(hasGuess, guess)
  if redis.call('EXISTS', key) == 0 then return nil end
  local stored = redis.call('HGET', key, 'user')
  if stored ~= (hasGuess and guess) then return { '${MOVED}', stored and '1' or '0', stored or '' } end
  return nil
end
`;

/**
 * Single node: a session write and its index entries in one atomic script. KEYS: the session, the
 * all-sessions index (order, meta, expires), then the new user's index (3 keys, when ARGV 8 is '1'),
 * then the index of the stored user the caller expects (3 keys, when ARGV 11 is '1' and that user
 * is not the new one). ARGV as `SESSION_WRITE`, then 9 updatedAt ms, 10 metadata JSON, 11 '1' when
 * a stored user is expected, 12 that user. Replies `{ 1, etag }`, a conflict `{ 0, current etag? }`,
 * or `moved` (nothing written) when the stored user is not the expected one.
 */
export const SET_SINGLE_SCRIPT = `${COMMON}${INDEX}${SESSION_WRITE}${MOVED_CHECK}
local ms, metadata, hasGuess, guess = ARGV[9], ARGV[10], ARGV[11] == '1', ARGV[12]
local reply = sessionCheck() or movedCheck(hasGuess, guess)
if reply then return reply end
sessionApply()
indexPut(KEYS[2], KEYS[3], KEYS[4], sid, ms, rev, metadata, expireAt)
local k = 5
if hasUser then
  indexPut(KEYS[5], KEYS[6], KEYS[7], sid, ms, rev, metadata, expireAt)
  k = 8
end
if prev and prev ~= (hasUser and user) then indexRemove(KEYS[k], KEYS[k + 1], KEYS[k + 2], sid, nil) end
return { 1, etag }
`;

/**
 * Cluster: the session write alone (the indexes live in other slots). KEYS[1] and ARGV 1-8 as
 * `SESSION_WRITE`. Replies `{ 1, etag, rev, '1' or '0' (a user was stored before), that user,
 * expireAt or '' }`, `{ 1, etag }` for a resent write, or a conflict `{ 0, current etag? }`.
 */
export const SET_CLUSTER_SCRIPT = `${COMMON}${SESSION_WRITE}
local reply = sessionCheck()
if reply then return reply end
sessionApply()
return { 1, etag, rev, prev and '1' or '0', prev or '', expireAt or '' }
`;

/**
 * Single node: deletes a session and its index entries atomically. KEYS: the session, the
 * all-sessions index (3 keys), then the expected stored user's index (3 keys, when ARGV 2 is '1').
 * ARGV: 1 session id, 2 '1' when a stored user is expected, 3 that user. Replies 1 when deleted,
 * 0 when nothing was stored (its entry in the all-sessions index, left by an expiry, is dropped),
 * or `moved` (nothing deleted).
 */
export const DELETE_SINGLE_SCRIPT = `${COMMON}${INDEX}
local key = KEYS[1]
${MOVED_CHECK}
local sid, hasGuess, guess = ARGV[1], ARGV[2] == '1', ARGV[3]
if redis.call('EXISTS', key) == 0 then
  indexRemove(KEYS[2], KEYS[3], KEYS[4], sid, nil)
  return 0
end
local reply = movedCheck(hasGuess, guess)
if reply then return reply end
redis.call('DEL', key)
indexRemove(KEYS[2], KEYS[3], KEYS[4], sid, nil)
if hasGuess then indexRemove(KEYS[5], KEYS[6], KEYS[7], sid, nil) end
return 1
`;

/**
 * Cluster: deletes a session (KEYS[1]) and replies what its index entries need: `{ 1, '1' or '0'
 * (it had a user), that user, its rev or '' }`, or `{ 0 }` when nothing was stored.
 */
export const DELETE_CLUSTER_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'user', 'rev')
if redis.call('DEL', KEYS[1]) == 0 then return { 0 } end
return { 1, v[1] and '1' or '0', v[1] or '', v[2] or '' }
`;

/** Cluster: writes one index entry. KEYS: order, meta, expires. ARGV: session id, ms, rev, metadata JSON, expireAt or ''. */
export const INDEX_PUT_SCRIPT = `${COMMON}${INDEX}
local expireAt = ARGV[5]
if expireAt == '' then expireAt = nil end
indexPut(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4], expireAt)
return 1
`;

/** Cluster: drops one index entry unless it is of a later revision. KEYS: order, meta, expires. ARGV: session id, rev or '' (any). */
export const INDEX_REMOVE_SCRIPT = `${COMMON}${INDEX}
local rev = ARGV[2]
if rev == '' then rev = nil end
indexRemove(KEYS[1], KEYS[2], KEYS[3], ARGV[1], rev)
return 1
`;

/**
 * One page of a listing. First drops every entry whose session has expired (by the `expires` set and
 * the server's clock). Then finds where the page starts: after the cursor (ARGV 2 = its updatedAt
 * ms, ARGV 3 = its session id; ARGV 2 '' for the first page), i.e. below its score, or at its score
 * with a session id before it in byte order (a binary search among the equal scores, which
 * `ZREVRANGE` orders by member descending). KEYS: order, meta, expires. ARGV 1: how many entries.
 * Replies `{ ZCARD, { session id, ... }, { score, ... }, { meta entry or nil, ... } }`.
 */
export const LIST_SCRIPT = `${COMMON}
local order, meta, expires = KEYS[1], KEYS[2], KEYS[3]
local limit = tonumber(ARGV[1])
local nowMs = fmt(math.floor(nowMicros() / 1000))
while true do
  local gone = redis.call('ZRANGEBYSCORE', expires, '-inf', nowMs, 'LIMIT', 0, 500)
  if #gone == 0 then break end
  redis.call('ZREM', order, unpack(gone))
  redis.call('HDEL', meta, unpack(gone))
  redis.call('ZREM', expires, unpack(gone))
end
local start = 0
if ARGV[2] ~= '' then
  local ms, sid = ARGV[2], ARGV[3]
  local lo = redis.call('ZCOUNT', order, '(' .. ms, '+inf')
  local hi = lo + redis.call('ZCOUNT', order, ms, ms)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if bytesBefore(redis.call('ZREVRANGE', order, mid, mid)[1], sid) then hi = mid else lo = mid + 1 end
  end
  start = lo
end
local page = redis.call('ZREVRANGE', order, start, start + limit - 1, 'WITHSCORES')
local ids, scores, entries = {}, {}, {}
for i = 1, #page, 2 do
  ids[#ids + 1] = page[i]
  scores[#scores + 1] = page[i + 1]
end
if #ids > 0 then entries = redis.call('HMGET', meta, unpack(ids)) end
return { redis.call('ZCARD', order), ids, scores, entries }
`;

/**
 * Lua: takes or renews a turn lease. KEYS[1] the lease key; ARGV[1] the holder, ARGV[2] the TTL in
 * ms. Takes it when the key is absent (an expired lease is gone: Redis expires it), renews it when
 * it holds this holder; returns 1 then, else 0 (another holder's live lease; nothing changes).
 */
export const TURN_LEASE_SCRIPT = `
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

/**
 * Lua: releases a turn lease. KEYS[1] the lease key; ARGV[1] the holder. Deletes it only when it
 * holds this holder; returns 1 then, else 0.
 */
export const TURN_RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;
