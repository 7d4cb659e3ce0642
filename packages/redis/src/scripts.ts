/**
 * The Lua scripts of the history provider. Each runs atomically on the node that owns the
 * session's hash slot; both keys of a conversation share one hash tag.
 *
 * Data: `KEYS[1]` is a list of message JSON, oldest first; `KEYS[2]` is a sorted set of the ids of
 * exactly those messages, each scored by its sequence number (1, 2, 3, ... per conversation, never
 * reused). The newest message's sequence number is the set's highest score, so the list element at
 * index `i` has sequence number `last - LLEN + 1 + i`.
 *
 * A set whose highest score is not a safe integer (written by hand: `inf`, `1.5`, `1e300`) is
 * corrupt: both scripts then change nothing and return `{ 'bad-ids', <score> }` instead, which the
 * provider reports as a `SessionStateError` naming the key.
 */

/** The first element of a script's reply when the id set is corrupt. */
export const BAD_IDS = 'bad-ids';

/** Lua: the highest score of the id set as a number, or the reply for a corrupt set; 0 when the set is empty. */
const TOP_SEQ = `
local function topSeq(ids)
  local top = redis.call('ZRANGE', ids, -1, -1, 'WITHSCORES')
  if not top[2] then return 0 end
  local n = tonumber(top[2])
  if n == nil or n ~= n or n ~= math.floor(n) or n > 9007199254740991 or n < -9007199254740991 then
    return nil, { '${BAD_IDS}', top[2] }
  end
  return n
end
`;

/** Lua: `metadata.ctx.sourceType` of a decoded message, or nil. */
const SOURCE_TYPE = `
local function sourceType(m)
  local meta = m.metadata
  if type(meta) ~= 'table' or type(meta.ctx) ~= 'table' then return nil end
  return meta.ctx.sourceType
end
`;

/** The first element of the save script's reply when a message id is stored with other content. */
export const CONFLICT = 'conflict';

/** Lua: JSON equality of decoded values (objects by key, in any order) and `sameMessageContent` of core. */
const SAME_CONTENT = `
local function sameJson(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= 'table' then return a == b end
  for k, v in pairs(a) do
    if not sameJson(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end
local function sameContent(a, b)
  return type(a) == 'table' and type(b) == 'table' and a.role == b.role and a.authorName == b.authorName
    and sameJson(a.contents, b.contents)
end
`;

/**
 * Saves a batch. Messages whose id is stored with the same content (core's `sameMessageContent`:
 * role, contents, authorName) are skipped; one stored with other content refuses the whole batch
 * before anything is written: the reply is `{ 'conflict', <id>, <index in the batch> }`. Then
 * trims to the newest `maxStored` (the list and the ids that fell out, together) and refreshes the
 * TTL of both keys. In `replace` mode it first drops the stored list and ids (compaction rewrites
 * history this way); sequence numbers still continue after every number used before.
 *
 * A batch of a run names its turn's input message ids. Where that turn is stored (wherever it sits:
 * the oldest stored input with one of those ids, the others and the responses after it up to the
 * next turn, extended back over the context messages stored just before it; every input stored,
 * with the content the batch gives it, and no other input: core's `findRetriedTurn`), the opening
 * batch replaces that earlier attempt in place, and a later batch of the turn goes right after it;
 * otherwise the batch is appended. Messages after the place the batch went are renumbered, so the
 * list element at index `i` keeps sequence number `first + i`: the numbers of the entries that
 * moved (and of a shorter turn's) are handed out again, as `popMessages` does.
 * ARGV: mode (`append` | `replace`), maxStored (0 = keep all), ttlSeconds (0 = leave expiry alone),
 * n (how many input ids follow; 0 for a batch of no turn), opens (`1` when the batch opens its
 * turn), the n input ids, then id, json pairs (no id twice). Returns the number of messages written.
 */
export const SAVE_SCRIPT = `${TOP_SEQ}${SOURCE_TYPE}${SAME_CONTENT}
local list, ids = KEYS[1], KEYS[2]
local maxStored = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local nInputs = tonumber(ARGV[4])
local opens = ARGV[5] == '1'
local pairsFrom = 6 + nInputs
local seq, corrupt = topSeq(ids)
if corrupt then return corrupt end
local len = redis.call('LLEN', list)
if seq < len then seq = len end
if ARGV[1] == 'replace' then
  redis.call('DEL', list, ids)
  len = 0
end
local first = seq - len + 1
local function decode(text)
  if not text then return nil end
  local ok, m = pcall(cjson.decode, text)
  if ok and type(m) == 'table' then return m end
  return nil
end
local function indexOf(id)
  local score = redis.call('ZSCORE', ids, id)
  if not score then return nil end
  return tonumber(score) - first
end
-- Where the turn is stored: [spanStart, spanEnd), or nil.
local spanStart, spanEnd = nil, nil
if nInputs > 0 and len > 0 then
  local inputs, lowest = {}, nil
  for i = 6, 5 + nInputs do
    inputs[ARGV[i]] = true
    local at = indexOf(ARGV[i])
    if at and at >= 0 and at < len and (lowest == nil or at < lowest) then lowest = at end
  end
  if lowest then
    local given = {}
    for i = pairsFrom, #ARGV, 2 do
      if inputs[ARGV[i]] then given[ARGV[i]] = ARGV[i + 1] end
    end
    local found, count, replied, stop, other = {}, 0, false, false, false
    local at = lowest
    while not stop and at < len do
      local chunk = redis.call('LRANGE', list, at, at + 99)
      if #chunk == 0 then break end
      for j = 1, #chunk do
        local m = decode(chunk[j])
        local id = m and m.id
        if type(id) == 'string' and inputs[id] and not found[id] then
          if given[id] and not sameContent(m, decode(given[id])) then other = true; stop = true; break end
          found[id] = true
          count = count + 1
        elseif m and sourceType(m) == 'response' then
          replied = true
        elseif not replied and m and sourceType(m) == 'input' then
          other = true; stop = true; break
        else
          stop = true; break
        end
        at = at + 1
      end
    end
    local distinct = 0
    for _ in pairs(inputs) do distinct = distinct + 1 end
    if not other and count == distinct then
      spanStart, spanEnd = lowest, at
      while spanStart > 0 do
        local m = decode(redis.call('LINDEX', list, spanStart - 1))
        if not (m and sourceType(m) == 'context') then break end
        spanStart = spanStart - 1
      end
    end
  end
end
local replacing = opens and spanStart ~= nil
-- What the batch adds; a message stored under its id with other content refuses the batch.
local freshIds, freshJson = {}, {}
for i = pairsFrom, #ARGV, 2 do
  local at = nil
  if len > 0 then at = indexOf(ARGV[i]) end
  if at and not (replacing and at >= spanStart and at < spanEnd) then
    if at >= 0 and at < len then
      local stored = decode(redis.call('LINDEX', list, at))
      if stored and not sameContent(stored, decode(ARGV[i + 1])) then
        return { '${CONFLICT}', ARGV[i], (i - pairsFrom) / 2 }
      end
    end
  else
    freshIds[#freshIds + 1] = ARGV[i]
    freshJson[#freshJson + 1] = ARGV[i + 1]
  end
end
-- Where it goes: at p, in place of r entries.
local p, r = len, 0
if replacing then p, r = spanStart, spanEnd - spanStart
elseif spanEnd ~= nil then p = spanEnd end
local tail, tailIds = {}, {}
if p + r < len then
  tail = redis.call('LRANGE', list, p + r, -1)
  tailIds = redis.call('ZRANGEBYSCORE', ids, first + p + r, '+inf')
end
if r > 0 then
  local gone = redis.call('ZRANGEBYSCORE', ids, first + p, first + p + r - 1)
  for i = 1, #gone, 500 do redis.call('ZREM', ids, unpack(gone, i, math.min(i + 499, #gone))) end
end
if p < len then
  if p == 0 then redis.call('DEL', list) else redis.call('LTRIM', list, 0, p - 1) end
end
local function push(items)
  for i = 1, #items, 500 do redis.call('RPUSH', list, unpack(items, i, math.min(i + 499, #items))) end
end
local function number(members, from)
  for i = 1, #members, 500 do
    local args = {}
    for j = i, math.min(i + 499, #members) do
      args[#args + 1] = from + j - 1
      args[#args + 1] = members[j]
    end
    redis.call('ZADD', ids, unpack(args))
  end
end
push(freshJson)
push(tail)
number(freshIds, first + p)
number(tailIds, first + p + #freshIds)
len = p + #freshIds + #tail
seq = first + len - 1
if maxStored > 0 and len > maxStored then
  redis.call('LTRIM', list, -maxStored, -1)
  redis.call('ZREMRANGEBYSCORE', ids, '-inf', seq - maxStored)
  len = maxStored
end
if ttl > 0 and len > 0 then
  redis.call('EXPIRE', list, ttl)
  redis.call('EXPIRE', ids, ttl)
end
return #freshIds
`;

/**
 * One page of a conversation for export: the messages whose sequence number is above ARGV[1],
 * at most ARGV[2] of them. Returns { sequence number of the first message returned (or of the
 * next one to come), sequence number of the newest stored message, list index of the first message
 * returned, { message json ... } }.
 */
export const PAGE_SCRIPT = `${TOP_SEQ}
local list, ids = KEYS[1], KEYS[2]
local after = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local len = redis.call('LLEN', list)
if len == 0 then return { after + 1, after, 0, {} } end
local top, corrupt = topSeq(ids)
if corrupt then return corrupt end
local last = len
if top > len then last = top end
local first = last - len + 1
local from = after + 1
if from < first then from = first end
if from > last then return { from, last, len, {} } end
local start = from - first
return { from, last, start, redis.call('LRANGE', list, start, start + limit - 1) }
`;

/** The first element of the pop script's reply when an entry it would pop is not a readable message. */
export const BAD_ENTRY = 'bad-entry';

/**
 * Removes the newest ARGV[1] messages: their entries from the list and their ids from the id set
 * (so a popped id can be saved again). Every entry is checked first (JSON object, string `id`,
 * known `role`, `contents` an array of typed objects); if one is not a message, nothing changes and
 * the reply is `{ 'bad-entry', <index from the end> }`. The id set is changed before the list, so a
 * key of the wrong type fails the script before anything changed. Expiry is left alone. Returns the
 * popped entries, oldest first.
 */
export const POP_SCRIPT = `
local list, ids = KEYS[1], KEYS[2]
local items = redis.call('LRANGE', list, -tonumber(ARGV[1]), -1)
local roles = { system = true, user = true, assistant = true, tool = true }
local popped = {}
for i = 1, #items do
  local ok, m = pcall(cjson.decode, items[i])
  local valid = ok and type(m) == 'table' and type(m.id) == 'string' and roles[m.role] == true and type(m.contents) == 'table'
  if valid then
    for _, c in ipairs(m.contents) do
      if type(c) ~= 'table' or type(c.type) ~= 'string' then valid = false end
    end
  end
  if not valid then return { '${BAD_ENTRY}', i - 1 - #items } end
  popped[#popped + 1] = m.id
end
for i = 1, #popped, 500 do
  redis.call('ZREM', ids, unpack(popped, i, math.min(i + 499, #popped)))
end
if #items > 0 then redis.call('LTRIM', list, 0, -#items - 1) end
return items
`;

/** The reply of the fork script when the destination already holds messages. */
export const NOT_EMPTY = 'not-empty';
/** The reply of the fork script when the message to fork at is not in the source's id set. */
export const ABSENT = 'absent';

/**
 * Copies a conversation (KEYS 1-2: list and id set) into an empty one (KEYS 3-4), up to and
 * including the message ARGV[2] when ARGV[1] is '1', else all of it: the list entries and their ids
 * with the same sequence numbers, so the copy's bookkeeping is the source's. With maxStored (ARGV[3],
 * 0 = keep all) only the newest that many of the copied messages are kept; with ttlSeconds (ARGV[4])
 * both new keys expire. Nothing is written when the destination is not empty (`{ 'not-empty' }`), the
 * message is not in the id set (`{ 'absent' }`) or the set is corrupt. Returns how many messages the
 * fork covers (before the trim to maxStored).
 */
export const FORK_SCRIPT = `${TOP_SEQ}
local fromList, fromIds, toList, toIds = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local maxStored, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', toList) == 1 or redis.call('EXISTS', toIds) == 1 then return { '${NOT_EMPTY}' } end
local len = redis.call('LLEN', fromList)
local top, corrupt = topSeq(fromIds)
if corrupt then return corrupt end
local last = len
if top > len then last = top end
local first = last - len + 1
local count = len
if ARGV[1] == '1' then
  local score = redis.call('ZSCORE', fromIds, ARGV[2])
  if not score then return { '${ABSENT}' } end
  count = tonumber(score) - first + 1
  if count < 1 or count > len then return { '${ABSENT}' } end
end
local from = 0
if maxStored > 0 and count > maxStored then from = count - maxStored end
for i = from, count - 1, 500 do
  redis.call('RPUSH', toList, unpack(redis.call('LRANGE', fromList, i, math.min(i + 499, count - 1))))
end
if count > from then
  local ids = redis.call('ZRANGEBYSCORE', fromIds, first + from, first + count - 1, 'WITHSCORES')
  for i = 1, #ids, 1000 do
    local args = {}
    for j = i, math.min(i + 999, #ids), 2 do
      args[#args + 1] = ids[j + 1]
      args[#args + 1] = ids[j]
    end
    redis.call('ZADD', toIds, unpack(args))
  end
  if ttl > 0 then
    redis.call('EXPIRE', toList, ttl)
    if redis.call('EXISTS', toIds) == 1 then redis.call('EXPIRE', toIds, ttl) end
  end
end
return count
`;
