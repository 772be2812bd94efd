"""The Lua scripts of the ``redis`` thread store: each write (and each read) is one atomic script.

A script runs alone on the server, so a fenced append (check the latest step,
push the messages, add the step record, move the index, refresh the TTL) is
all-or-nothing for every other client, and a read sees one consistent moment
(a thread's keys cannot expire half-way through it). redis-py's ``Script`` sends
``EVALSHA`` and loads the script again on ``NOSCRIPT`` (after a restart or
``SCRIPT FLUSH``). Only commands of Redis 6 are used, and no modules.

Step records are JSON built here by concatenation (the step and metadata come
JSON-encoded from Python; the message count is only known here) and stored as
``sha1hex(record) .. record`` so that a damaged record is detected on read.
"""

from __future__ import annotations

__all__ = ["APPEND", "DELETE", "FORGET", "FORK", "READ", "RECORD_PATTERN"]

#: the leading fields of a stored step record; the count is read from it in Lua.
RECORD_PATTERN = r'^%x+{"step":%-?%d+,"messages":(%d+),'

# KEYS: log, steps, index.  ARGV: expected step ('' = new thread), new step, created_at, index score (µs),
# metadata JSON, ttl ms ('0' = none), thread id, then the message entries.
# Reply: {1, count} when written; {0} or {0, latest} (nothing written) when the fence fails.
APPEND = """
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
local latest = last[2]
if ARGV[1] == '' then
  if latest then return {0, latest} end
  redis.call('DEL', KEYS[1])
elseif not latest then
  return {0}
elseif tonumber(latest) ~= tonumber(ARGV[1]) then
  return {0, latest}
end
local first = 8
for i = first, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
local count = redis.call('LLEN', KEYS[1])
local rec = '{"step":' .. ARGV[2] .. ',"messages":' .. count .. ',"created_at":"' .. ARGV[3] .. '","metadata":' .. ARGV[5] .. '}'
redis.call('ZADD', KEYS[2], ARGV[2], redis.sha1hex(rec) .. rec)
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[7])
if ARGV[6] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  redis.call('PEXPIRE', KEYS[2], ARGV[6])
end
return {1, count}
"""

# KEYS: log, steps.  ARGV: step ('' = latest).
# Reply: {} (no such step), {record, step} (count unreadable or zero), or {record, step, entries}.
READ = """
local rec
if ARGV[1] == '' then
  rec = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
else
  rec = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], ARGV[1], 'WITHSCORES')
end
if #rec == 0 then return {} end
local count = tonumber(string.match(rec[1], '""" + RECORD_PATTERN + """'))
if not count or count == 0 then return {rec[1], rec[2]} end
return {rec[1], rec[2], redis.call('LRANGE', KEYS[1], 0, count - 1)}
"""

# KEYS: source log, source steps, new log, new steps, index.
# ARGV: source step, created_at, index score, metadata JSON, ttl ms, new thread id.
# Reply: {0} no such source step; {1, latest} the new id exists; {2, record} the source is damaged; {3, count} done.
FORK = """
local rec = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], ARGV[1])
if #rec == 0 then return {0} end
local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
if last[2] then return {1, last[2]} end
local count = tonumber(string.match(rec[1], '""" + RECORD_PATTERN + """'))
if not count or redis.call('LLEN', KEYS[1]) < count then return {2, rec[1]} end
redis.call('DEL', KEYS[3])
for i = 0, count - 1, 1000 do
  redis.call('RPUSH', KEYS[3], unpack(redis.call('LRANGE', KEYS[1], i, math.min(i + 999, count - 1))))
end
local new = '{"step":' .. ARGV[1] .. ',"messages":' .. count .. ',"created_at":"' .. ARGV[2] .. '","metadata":' .. ARGV[4] .. '}'
redis.call('ZADD', KEYS[4], ARGV[1], redis.sha1hex(new) .. new)
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[6])
if ARGV[5] ~= '0' then
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
  redis.call('PEXPIRE', KEYS[4], ARGV[5])
end
return {3, count}
"""

# KEYS: log, steps, index.  ARGV: thread id, cutoff score ('' = unconditional).
# Deletes the thread (only if its index score is below the cutoff); reply 1 when it had steps.
DELETE = """
if ARGV[2] ~= '' then
  local score = redis.call('ZSCORE', KEYS[3], ARGV[1])
  if not score or tonumber(score) >= tonumber(ARGV[2]) then return 0 end
end
local existed = redis.call('EXISTS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return existed
"""

# KEYS: steps, index.  ARGV: thread id.  Drops the index entry of a thread whose keys expired (TTL).
FORGET = """
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('ZREM', KEYS[2], ARGV[1]) return 1 end
return 0
"""
