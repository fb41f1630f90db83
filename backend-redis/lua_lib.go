package redisq

// luaLib is prepended to every script. It names the keys of one queue group
// (see queueKeys for the order), reads the clock and holds the helpers that
// keep the job hash, the indexes, the run records and the statistics in step.
//
// Conventions: times are integer microseconds since the Unix epoch, kept as
// decimal strings in the hashes and formatted with "%.0f" so that Lua's
// "%.14g" default never rounds them. ARGV[1] is the clock override (empty
// means the server's TIME) and ARGV[2] the wake-up channel of the queue.
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

local F = {'t','p','h','pr','st','a','ma','rp','md','mu','ik','fp','ac','ra','ca','fs','fa','r','le','lw','lt','lx'}

local function jobfields(k, id)
  local args = {k.job}
  for i, f in ipairs(F) do args[i + 1] = id .. '|' .. f end
  local v = redis.call('HMGET', unpack(args))
  table.insert(v, 1, id)
  return v
end

-- ready members sort by priority, then due time, then id.
local function readykey(id, pr, ra)
  return string.format('%04d', tonumber(pr) + 1000) .. '|' .. pad(ra, 18) .. '|' .. id
end

-- schedule puts a queued or sleeping job in the ready set when due, else in
-- the scheduled set. It returns true when the job is due.
local function schedule(k, id, pr, ra, now)
  local old = redis.call('HGET', k.job, id .. '|rk')
  if old then redis.call('ZREM', k.ready, old) end
  if tonumber(ra) <= now then
    local m = readykey(id, pr, ra)
    redis.call('ZADD', k.ready, 0, m)
    redis.call('HSET', k.job, id .. '|rk', m)
    redis.call('ZREM', k.sched, id)
    return true
  end
  redis.call('HDEL', k.job, id .. '|rk')
  redis.call('ZADD', k.sched, ra, id)
  return false
end

local function unschedule(k, id)
  local rk = redis.call('HGET', k.job, id .. '|rk')
  if rk then
    redis.call('ZREM', k.ready, rk)
    redis.call('HDEL', k.job, id .. '|rk')
  end
  redis.call('ZREM', k.sched, id)
end

local function setstate(k, id, task, old, new)
  if old then
    redis.call('ZREM', k.idx, 's|' .. old .. '|' .. id, 't|' .. task .. '|' .. old .. '|' .. id)
  end
  redis.call('ZADD', k.idx, 0, 's|' .. new .. '|' .. id, 0, 't|' .. task .. '|' .. new .. '|' .. id)
  redis.call('HSET', k.job, id .. '|st', new)
end

-- deadline returns the instant a job passes its cancellation deadline in its
-- current phase, and the reason, or nil.
local function deadline(k, id)
  local v = redis.call('HMGET', k.job, id .. '|fs', id .. '|md', id .. '|mu', id .. '|ca')
  local fs, md, mu, ca = v[1], tonumber(v[2] or '0') or 0, tonumber(v[3] or '0') or 0, v[4]
  if not fs or fs == '' then
    if md > 0 then return tonumber(ca) + math.ceil(md / 1000), 'deadline exceeded: max delay before first start' end
    return nil
  end
  if mu > 0 then return tonumber(fs) + math.ceil(mu / 1000), 'deadline exceeded: max duration from first start' end
  return nil
end

local function setdeadline(k, id)
  local d = deadline(k, id)
  if d then redis.call('ZADD', k.dead, fmt(d), id) else redis.call('ZREM', k.dead, id) end
end

local function openrun(k, id, task, runid, attempt, worker, token, now)
  local n = redis.call('HINCRBY', k.run, id .. '|n', 1)
  local p = id .. '|' .. n .. '|'
  redis.call('HSET', k.run, p .. 'i', runid, p .. 'a', attempt, p .. 'w', worker, p .. 'k', token,
    p .. 's', 'running', p .. 'b', fmt(now))
  redis.call('HINCRBY', k.rstat, task .. '|running', 1)
end

local function closerun(k, id, task, status, now, err)
  local n = redis.call('HGET', k.run, id .. '|n')
  if not n then return end
  local p = id .. '|' .. n .. '|'
  local v = redis.call('HMGET', k.run, p .. 's', p .. 'b')
  if v[1] ~= 'running' then return end
  redis.call('HSET', k.run, p .. 's', status, p .. 'f', fmt(now))
  if err then redis.call('HSET', k.run, p .. 'e', err) end
  redis.call('HINCRBY', k.rstat, task .. '|running', -1)
  redis.call('HINCRBY', k.rstat, task .. '|' .. status, 1)
  redis.call('HINCRBY', k.rstat, task .. '|rt', fmt(now - tonumber(v[2])))
end

-- finish moves a job to a terminal state, closing its open run.
local function finish(k, id, task, old, new, now, runstatus, err)
  setstate(k, id, task, old, new)
  redis.call('HSET', k.job, id .. '|fa', fmt(now))
  if err then redis.call('HSET', k.job, id .. '|le', err) end
  unschedule(k, id)
  redis.call('ZREM', k.lease, id)
  redis.call('ZREM', k.dead, id)
  redis.call('ZADD', k.done, fmt(now), id)
  if old == 'running' then closerun(k, id, task, runstatus, now, err) end
end

-- fence returns the job's task when it runs under token, else nil.
local function fence(k, id, token)
  local v = redis.call('HMGET', k.job, id .. '|st', id .. '|lt', id .. '|t')
  if v[1] ~= 'running' or tonumber(v[2]) ~= tonumber(token) then return nil end
  return v[3]
end

local function wake()
  if ARGV[2] ~= '' then redis.call('PUBLISH', ARGV[2], '1') end
end
`
