// The Redis session store's two Lua scripts (atomic on the server, one round trip each). A session
// is one HASH: `v` its version, `h` its head, one field per chunk id (redis-delta-codec.ts).
// - sget(key, knownVersion): [] when absent; ['', text] for a state of the old whole-document
//   format (a string); [v] when the version is the one the caller holds (nothing else crosses
//   the wire); else [v, head].
// - sput(key, mode, base, version, head, ttl, n, id1, text1, ..., idn, textn, del1, ...): mode 'd'
//   writes a delta only while the stored version is `base` (else [0, current version, current
//   head], nothing written), so two replicas' writes never interleave into a mixed state; mode
//   'r' replaces whatever is there (or the old format) by a whole state. Both set the TTL.
//   'D' and 'R' are the same writes made only when the stored state is not newer than this one
//   (more calls, or as many and a later updatedAt, read from the stored head's `t` or the old
//   format's document; one that does not parse counts as absent): else [2], nothing written. The
//   resilient store's write-back uses them, so a state kept during an outage never lands over a
//   newer one another replica (or this one's own request) wrote meanwhile.
// Lua unpack is bounded by the C stack, so fields go to HSET/HDEL in batches of BATCH.
import type { Redis } from 'ioredis';

const BATCH = 200;

const SGET = `
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'string' then return {'', redis.call('GET', KEYS[1])} end
if t ~= 'hash' then return {} end
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return {} end
if v == ARGV[1] then return {v} end
return {v, redis.call('HGET', KEYS[1], 'h')}
`;

const SPUT = `
local key = KEYS[1]
local t = redis.call('TYPE', key)['ok']
local mode = ARGV[1]
if mode == 'D' or mode == 'R' then
  local stored = false
  if t == 'hash' then stored = redis.call('HGET', key, 'h')
  elseif t == 'string' then stored = redis.call('GET', key) end
  if stored then
    local ok, doc = pcall(cjson.decode, stored)
    if ok and type(doc) == 'table' and t == 'hash' then doc = doc['t'] end
    local mine = cjson.decode(ARGV[4])['t']
    local mc, mu = tonumber(mine['calls']) or 0, tonumber(mine['updatedAt']) or 0
    if ok and type(doc) == 'table' and type(doc['calls']) == 'number' and type(doc['updatedAt']) == 'number' then
      local c, u = doc['calls'], doc['updatedAt']
      if c > mc or (c == mc and u > mu) then return {2} end
    end
  end
  mode = string.lower(mode)
end
if mode == 'd' then
  local cur = false
  if t == 'hash' then cur = redis.call('HGET', key, 'v') end
  if cur ~= ARGV[2] then
    if cur then return {0, cur, redis.call('HGET', key, 'h') or ''} end
    return {0, '', ''}
  end
elseif t ~= 'none' then
  redis.call('DEL', key)
end
redis.call('HSET', key, 'v', ARGV[3], 'h', ARGV[4])
local n = tonumber(ARGV[6])
local last = 6 + 2 * n
local i = 7
while i <= last do
  local j = math.min(last, i + ${2 * BATCH} - 1)
  redis.call('HSET', key, unpack(ARGV, i, j))
  i = j + 1
end
while i <= #ARGV do
  local j = math.min(#ARGV, i + ${BATCH} - 1)
  redis.call('HDEL', key, unpack(ARGV, i, j))
  i = j + 1
end
redis.call('EXPIRE', key, ARGV[5])
return {1}
`;

export type SgetReply = [] | [version: string] | [version: string, text: string];
export type SputReply = [1] | [0, version: string, head: string] | [2];

export interface DeltaCommands {
  ctxgateSessGet(key: string, knownVersion: string): Promise<SgetReply>;
  ctxgateSessPut(key: string, ...args: (string | number)[]): Promise<SputReply>;
}

/** Defines the scripts on a client (once per client; ioredis sends EVALSHA, then EVAL if needed). */
export function deltaCommands(client: Redis): DeltaCommands {
  const c = client as Redis & Partial<DeltaCommands>;
  if (typeof c.ctxgateSessGet !== 'function') {
    client.defineCommand('ctxgateSessGet', { numberOfKeys: 1, lua: SGET });
    client.defineCommand('ctxgateSessPut', { numberOfKeys: 1, lua: SPUT });
  }
  return c as Redis & DeltaCommands;
}
