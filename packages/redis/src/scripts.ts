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

/**
 * Appends messages whose id is not stored yet, trims to the newest `maxStored` (the list and the
 * ids that fell out, together), refreshes the TTL of both keys. In `replace` mode it first drops
 * the stored list and ids (compaction rewrites history this way); sequence numbers still continue
 * after every number used before, so export cursors never see one twice.
 *
 * The opening batch of a turn names the turn's input message ids: when they are stored as the
 * newest turn (the newest input with one of those ids and, after it, only those inputs and
 * responses, `metadata.ctx.sourceType`; extended back over the context messages stored just before
 * it), that earlier attempt is removed first, in the same script, so a retried turn is stored once
 * with the retry's reply. Its sequence numbers are handed out again (as `popMessages` does).
 * ARGV: mode (`append` | `replace`), maxStored (0 = keep all), ttlSeconds (0 = leave expiry alone),
 * n (how many input ids follow; 0 when the batch opens no turn), the n input ids, then id, json
 * pairs. Returns the number of messages appended.
 */
export const SAVE_SCRIPT = `${TOP_SEQ}${SOURCE_TYPE}
local list, ids = KEYS[1], KEYS[2]
local maxStored = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local nInputs = tonumber(ARGV[4])
local seq, corrupt = topSeq(ids)
if corrupt then return corrupt end
local len = redis.call('LLEN', list)
if seq < len then seq = len end
if ARGV[1] == 'replace' then
  redis.call('DEL', list, ids)
  len = 0
elseif nInputs > 0 and len > 0 then
  local inputs, lowest = {}, nil
  for i = 5, 4 + nInputs do
    inputs[ARGV[i]] = true
    local score = redis.call('ZSCORE', ids, ARGV[i])
    if score then
      score = tonumber(score)
      if lowest == nil or score < lowest then lowest = score end
    end
  end
  local first = seq - len + 1
  if lowest and lowest >= first then
    local from = lowest - first
    local tail = redis.call('LRANGE', list, from, -1)
    local start = nil
    for i = #tail, 1, -1 do
      local ok, m = pcall(cjson.decode, tail[i])
      if not ok or type(m) ~= 'table' then break end
      if inputs[m.id] then start = from + i - 1
      elseif sourceType(m) ~= 'response' then break end
    end
    if start then
      while start > 0 do
        local ok, m = pcall(cjson.decode, redis.call('LINDEX', list, start - 1))
        if not (ok and type(m) == 'table' and sourceType(m) == 'context') then break end
        start = start - 1
      end
      redis.call('ZREMRANGEBYSCORE', ids, first + start, '+inf')
      if start == 0 then redis.call('DEL', list) else redis.call('LTRIM', list, 0, start - 1) end
      seq = first + start - 1
      len = start
    end
  end
end
local added = 0
local batch = {}
for i = 5 + nInputs, #ARGV, 2 do
  if redis.call('ZADD', ids, 'NX', seq + 1, ARGV[i]) == 1 then
    seq = seq + 1
    added = added + 1
    batch[#batch + 1] = ARGV[i + 1]
    if #batch == 500 then
      len = redis.call('RPUSH', list, unpack(batch))
      batch = {}
    end
  end
end
if #batch > 0 then len = redis.call('RPUSH', list, unpack(batch)) end
if maxStored > 0 and len > maxStored then
  redis.call('LTRIM', list, -maxStored, -1)
  redis.call('ZREMRANGEBYSCORE', ids, '-inf', seq - maxStored)
end
if ttl > 0 and len > 0 then
  redis.call('EXPIRE', list, ttl)
  redis.call('EXPIRE', ids, ttl)
end
return added
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
