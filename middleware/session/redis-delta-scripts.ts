// The Redis session store's three Lua scripts (atomic on the server, one round trip each). A session
// is one HASH: `v` its content version, `h` its head, `n` its write version, one field per chunk id
// (redis-delta-codec.ts).
// - sget(key, knownVersion): [] when absent; ['', text] for a state of the old whole-document
//   format (a string); [v, '', n] when the version is the one the caller holds (nothing else
//   crosses the wire); else [v, head, n].
// - sput(key, mode, base, version, head, ttl, since, n, id1, text1, ..., idn, textn, del1, ...):
//   mode 'd' writes a delta only while the stored version is `base` (else [0, current version,
//   current head], nothing written), so two replicas' writes never interleave into a mixed state;
//   mode 'r' replaces whatever is there (or the old format) by a whole state. Both set the TTL and
//   return [1, n], the new write version.
//   'D' and 'R' are the same writes made only when no write landed after the one the caller's
//   state continues: the stored `n` is not above `since` (or nothing is stored): else [2], nothing
//   written. The resilient store's write-back uses them, so a state kept during an outage never
//   lands over one another replica (or this one's own request) wrote meanwhile. A stored state
//   without `n` (written before write versions, or the old format) is compared as before: more
//   calls, or as many and a later updatedAt, wins; one that does not parse counts as absent.
// - sdel(key, since): deletes the key unless its stored `n` is above `since` ([0], nothing deleted);
//   a state without `n` (or the old format) is deleted. [1] otherwise (deleted, or nothing there).
//   The resilient store's write-back of a delete kept during an outage.
// The write version: max(stored n + 1, the Redis server's clock in µs), so it grows with every
// write of a key and, after a delete or an expiry, starts above any it had (one clock, the
// server's: no replica's clock skew enters). Redis ≥ 5 (a script that reads TIME and then writes).
// Lua unpack is bounded by the C stack, so fields go to HSET/HDEL in batches of BATCH.
import type { Redis } from 'ioredis';

const BATCH = 200;

const SGET = `
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'string' then return {'', redis.call('GET', KEYS[1])} end
if t ~= 'hash' then return {} end
local f = redis.call('HMGET', KEYS[1], 'v', 'n')
local v = f[1]
if not v then return {} end
local n = f[2] or '0'
if v == ARGV[1] then return {v, '', n} end
return {v, redis.call('HGET', KEYS[1], 'h'), n}
`;

const SPUT = `
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local t = redis.call('TYPE', key)['ok']
local mode = ARGV[1]
local prev = false
if t == 'hash' then prev = tonumber(redis.call('HGET', key, 'n')) end
if mode == 'D' or mode == 'R' then
  if prev then
    if prev > tonumber(ARGV[6]) then return {2} end
  else
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
local now = redis.call('TIME')
local n = tonumber(now[1]) * 1000000 + tonumber(now[2])
if prev and prev >= n then n = prev + 1 end
n = string.format('%.0f', n)
redis.call('HSET', key, 'v', ARGV[3], 'h', ARGV[4], 'n', n)
local count = tonumber(ARGV[7])
local last = 7 + 2 * count
local i = 8
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
return {1, n}
`;

const SDEL = `
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' then
  local n = tonumber(redis.call('HGET', KEYS[1], 'n'))
  if n and n > tonumber(ARGV[1]) then return 0 end
end
redis.call('DEL', KEYS[1])
return 1
`;

export type SgetReply = [] | [old: '', text: string] | [version: string, head: string, n: string];
export type SputReply = [1, n: string] | [0, version: string, head: string] | [2];

export interface DeltaCommands {
  ctxgateSessGet(key: string, knownVersion: string): Promise<SgetReply>;
  ctxgateSessPut(key: string, ...args: (string | number)[]): Promise<SputReply>;
  ctxgateSessDel(key: string, since: string): Promise<0 | 1>;
}

/** Defines the scripts on a client (once per client; ioredis sends EVALSHA, then EVAL if needed). */
export function deltaCommands(client: Redis): DeltaCommands {
  const c = client as Redis & Partial<DeltaCommands>;
  if (typeof c.ctxgateSessGet !== 'function') {
    client.defineCommand('ctxgateSessGet', { numberOfKeys: 1, lua: SGET });
    client.defineCommand('ctxgateSessPut', { numberOfKeys: 1, lua: SPUT });
    client.defineCommand('ctxgateSessDel', { numberOfKeys: 1, lua: SDEL });
  }
  return c as Redis & DeltaCommands;
}
