package redisq

// luaLib is prepended to every script. It names the keys of one queue group
// (see queueKeys for the order), reads the clock and holds the helpers that
// keep the job hash, the indexes, the run records and the statistics in step.
//
// Conventions: times are integer microseconds since the Unix epoch, kept as
// decimal strings and formatted with "%.0f" so that Lua's "%.14g" default
// never rounds them. ARGV[1] is the clock override (empty means the
// server's TIME) and ARGV[2] the wake-up channel of the queue.
//
// Writes to the sorted-set indexes and the statistics go through later(),
// which collects them and sends one command per key when the script ends
// (or calls flush() before reading such a key). Within one script the
// members added to and removed from a key never overlap, so the order in
// which the collected commands run does not matter. The job hash itself is
// always written at once: it is what later steps of a script read.
const luaLib = `
local NK = 14
local function keys(g)
  local b = (g - 1) * NK
  return {job = KEYS[b+1], ready = KEYS[b+2], sched = KEYS[b+3], lease = KEYS[b+4],
    dead = KEYS[b+5], done = KEYS[b+6], idx = KEYS[b+7], idem = KEYS[b+8], rate = KEYS[b+9],
    run = KEYS[b+10], cp = KEYS[b+11], cpx = KEYS[b+12], conf = KEYS[b+13], rstat = KEYS[b+14]}
end

local function now_us()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function fmt(n) return string.format('%.0f', n) end

local function pad(s, w)
  if #s < w then return string.rep('0', w - #s) .. s end
  return s
end

local function set(v) return v and v ~= '' end

-- collected writes
local W, WO, S = {}, {}, {}
local function later(cmd, key, ...)
  local id = cmd .. ' ' .. key
  local e = W[id]
  if not e then
    e = {}
    W[id] = e
    WO[#WO + 1] = {cmd, key, e}
  end
  local n = #e
  for i = 1, select('#', ...) do e[n + i] = select(i, ...) end
end
local function bump(key, field, delta)
  local e = S[key]
  if not e then e = {}; S[key] = e end
  e[field] = (e[field] or 0) + delta
end
-- bulk runs cmd on key with the arguments in list, in chunks that stay
-- within Lua's stack.
local function bulk(cmd, key, list)
  local i = 1
  while i <= #list do
    local j = math.min(i + 3999, #list)
    redis.call(cmd, key, unpack(list, i, j))
    i = j + 1
  end
end
local function flush()
  for _, o in ipairs(WO) do bulk(o[1], o[2], o[3]) end
  for key, e in pairs(S) do
    for field, d in pairs(e) do
      if d ~= 0 then redis.call('HINCRBY', key, field, fmt(d)) end
    end
  end
  W, WO, S = {}, {}, {}
end

-- F are the attributes a job is returned with, in the order of jobFields
-- in decode.go; XF the internal ones.
local F = {'t','p','h','pr','st','a','ma','rp','md','mu','ik','fp','ac','ra','ca','fs','fa','r','le','lw','lt','lx'}
local XF = {'rk','rn','rb'}

local function jobfields(k, id)
  local args = {k.job}
  for i, f in ipairs(F) do args[i + 1] = id .. '|' .. f end
  local v = redis.call('HMGET', unpack(args))
  table.insert(v, 1, id)
  return v
end

local function jobdel(k, id)
  local args = {k.job}
  for _, f in ipairs(F) do args[#args + 1] = id .. '|' .. f end
  for _, f in ipairs(XF) do args[#args + 1] = id .. '|' .. f end
  redis.call('HDEL', unpack(args))
end

-- load reads what transitions need of a job, or nil when it does not exist.
-- fields, when given, lists the attributes to read; it must start with
-- 'st'. A fenced call reads only what its transition needs.
local TF = {'st','t','a','ma','pr','ra','lt','fs','md','mu','ca','rk','rn','rb','ik','lx'}
local function load(k, id, fields)
  fields = fields or TF
  local args = {k.job}
  for i, f in ipairs(fields) do args[i + 1] = id .. '|' .. f end
  local v = redis.call('HMGET', unpack(args))
  if not v[1] then return nil end
  local j = {id = id}
  for i, f in ipairs(fields) do j[f] = v[i] end
  return j
end

-- loadfull reads every attribute of a job (F, then XF) into j, and the
-- values of F in order into j.vals, or returns nil.
local function loadfull(k, id)
  local args = {k.job}
  for _, f in ipairs(F) do args[#args + 1] = id .. '|' .. f end
  for _, f in ipairs(XF) do args[#args + 1] = id .. '|' .. f end
  local v = redis.call('HMGET', unpack(args))
  if not v[5] then return nil end
  local j = {id = id, vals = {id}}
  for i, f in ipairs(F) do
    j[f] = v[i]
    j.vals[i + 1] = v[i]
  end
  for i, f in ipairs(XF) do j[f] = v[#F + i] end
  return j
end

-- FI maps an attribute of F to its position in a returned job.
local FI = {}
for i, f in ipairs(F) do FI[f] = i + 1 end

-- jset writes attribute/value pairs of job id.
local function jset(k, id, ...)
  local a = {k.job}
  for i = 1, select('#', ...), 2 do
    a[#a + 1] = id .. '|' .. select(i, ...)
    a[#a + 1] = select(i + 1, ...)
  end
  redis.call('HSET', unpack(a))
end

-- ready members sort by priority, then due time, then id.
local function readykey(id, pr, ra)
  return string.format('%04d', tonumber(pr) + 1000) .. '|' .. pad(ra, 18) .. '|' .. id
end

-- place puts a queued or sleeping job that is in neither the ready nor the
-- scheduled set into the one its due time ra calls for. It returns the
-- ready member when the job is due (the caller stores it as rk), else ''.
local function place(k, j, ra, now)
  if tonumber(ra) <= now then
    local m = readykey(j.id, j.pr, ra)
    later('ZADD', k.ready, 0, m)
    return m
  end
  later('ZADD', k.sched, ra, j.id)
  return ''
end

local function unschedule(k, j)
  if set(j.rk) then later('ZREM', k.ready, j.rk) end
  later('ZREM', k.sched, j.id)
end

local function setstate(k, j, new)
  local id, task, old = j.id, j.t, j.st
  if old then later('ZREM', k.idx, 's|' .. old .. '|' .. id, 't|' .. task .. '|' .. old .. '|' .. id) end
  later('ZADD', k.idx, 0, 's|' .. new .. '|' .. id, 0, 't|' .. task .. '|' .. new .. '|' .. id)
  j.st = new
end

local function num(v) return tonumber(v or '0') or 0 end

-- deadline returns the instant a job passes its cancellation deadline in its
-- current phase, and the reason, or nil.
local function deadline(j)
  if not set(j.fs) then
    if num(j.md) > 0 then return tonumber(j.ca) + math.ceil(num(j.md) / 1000), 'deadline exceeded: max delay before first start' end
    return nil
  end
  if num(j.mu) > 0 then return tonumber(j.fs) + math.ceil(num(j.mu) / 1000), 'deadline exceeded: max duration from first start' end
  return nil
end

local function hasdeadline(j) return num(j.md) > 0 or num(j.mu) > 0 end

local function setdeadline(k, j)
  local d = deadline(j)
  if d then later('ZADD', k.dead, fmt(d), j.id)
  elseif hasdeadline(j) then later('ZREM', k.dead, j.id) end
end

-- openrun appends a running run and returns its number.
local function openrun(k, j, runid, attempt, worker, token, now)
  local n = redis.call('HINCRBY', k.run, j.id .. '|n', 1)
  local p = j.id .. '|' .. n .. '|'
  redis.call('HSET', k.run, p .. 'i', runid, p .. 'a', attempt, p .. 'w', worker, p .. 'k', token,
    p .. 's', 'running', p .. 'b', fmt(now))
  return n
end

-- closerun ends a running job's open run.
local function closerun(k, j, status, now, err)
  local p = j.id .. '|' .. j.rn .. '|'
  if err then
    redis.call('HSET', k.run, p .. 's', status, p .. 'f', fmt(now), p .. 'e', err)
  else
    redis.call('HSET', k.run, p .. 's', status, p .. 'f', fmt(now))
  end
  bump(k.rstat, j.t .. '|' .. status, 1)
  bump(k.rstat, j.t .. '|rt', now - tonumber(j.rb))
end

-- finish moves a job to a terminal state, closing its open run. result,
-- when given, is stored as the job's result.
local function finish(k, j, new, now, runstatus, err, result)
  local old, nows = j.st, fmt(now)
  setstate(k, j, new)
  local a = {'st', new, 'fa', nows, 'rk', ''}
  if err then a[#a + 1] = 'le'; a[#a + 1] = err end
  if result then a[#a + 1] = 'r'; a[#a + 1] = result end
  jset(k, j.id, unpack(a))
  if old == 'running' then
    later('ZREM', k.lease, j.id)
    closerun(k, j, runstatus, now, err)
  else
    unschedule(k, j)
  end
  if hasdeadline(j) then later('ZREM', k.dead, j.id) end
  later('ZADD', k.done, nows, j.id)
end

-- fence loads a running job's fields (default: what finishing it needs)
-- when it runs under token, else returns nil.
local FENCE = {'st','lt','t','rn','rb','md','mu'}
local function fence(k, id, token, fields)
  local j = load(k, id, fields or FENCE)
  if not j or j.st ~= 'running' or tonumber(j.lt) ~= tonumber(token) then return nil end
  return j
end

local function wake()
  if ARGV[2] ~= '' then redis.call('PUBLISH', ARGV[2], '1') end
end
`

// script wraps a script body: the body runs as a function, so that every
// return path flushes the collected writes.
func script(body string) string {
	return luaLib + "local function main()\n" + body + "\nend\nlocal r = main()\nflush()\nreturn r\n"
}
