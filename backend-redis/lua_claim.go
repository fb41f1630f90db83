package redisq

// luaClaim promotes due scheduled, retried and sleeping jobs into the ready
// set and claims up to limit of them in (priority, due time, id) order, in
// one call. Due jobs past a cancellation deadline are cancelled on the way
// and do not count. ARGV: now, channel, worker, limit, ttl (µs), run ids...
// It returns {'ok', now, job...} where each job is {id, fields...}.
const luaClaim = `
local k = keys(1)
local now = now_us()
local nows = fmt(now)
local worker, limit, ttl = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local out = {'ok', nows}
if redis.call('HGET', k.conf, 'paused') == '1' then return out end

local due = redis.call('ZRANGEBYSCORE', k.sched, '-inf', nows, 'LIMIT', 0, 5000 + limit)
if #due > 0 then
  for _, id in ipairs(due) do
    local j = load(k, id)
    if j and (j.st == 'queued' or j.st == 'sleeping') and not set(j.rk) then
      local m = readykey(id, j.pr, j.ra)
      later('ZADD', k.ready, 0, m)
      jset(k, id, 'rk', m)
    end
  end
  bulk('ZREM', k.sched, due)
  flush()
end

local got, ri = 0, 6
local cancelled = false
while got < limit do
  local ms = redis.call('ZRANGEBYLEX', k.ready, '-', '+', 'LIMIT', 0, limit - got)
  if #ms == 0 then break end
  bulk('ZREM', k.ready, ms)
  for _, m in ipairs(ms) do
    local id = string.sub(m, 25)
    local j = loadfull(k, id)
    if j and (j.st == 'queued' or j.st == 'sleeping') and j.rk == m then
      if tonumber(j.ra) > now then
        jset(k, id, 'rk', place(k, j, j.ra, now))
      else
        j.rk = ''
        local d, reason = deadline(j)
        if d and now >= d then
          finish(k, j, 'cancelled', now, 'cancelled', reason)
          cancelled = true
        else
          local att = tonumber(j.a)
          if j.st ~= 'sleeping' then att = att + 1 end
          local tok = num(j.lt) + 1
          local lx = fmt(now + ttl)
          local rn = openrun(k, j, ARGV[ri], att, worker, tok, now)
          ri = ri + 1
          local first = not set(j.fs)
          if first then
            j.fs = nows
            jset(k, id, 'st', 'running', 'a', att, 'lt', tok, 'lw', worker, 'lx', lx, 'rk', '', 'rn', rn, 'rb', nows, 'fs', nows)
            if hasdeadline(j) then setdeadline(k, j) end
          else
            jset(k, id, 'st', 'running', 'a', att, 'lt', tok, 'lw', worker, 'lx', lx, 'rk', '', 'rn', rn, 'rb', nows)
          end
          setstate(k, j, 'running')
          later('ZADD', k.lease, lx, id)
          got = got + 1
          local v = j.vals
          v[FI.st], v[FI.a], v[FI.lt], v[FI.lw], v[FI.lx], v[FI.fs] = 'running', fmt(att), fmt(tok), worker, lx, j.fs
          out[#out + 1] = v
        end
      end
    end
  end
end
if cancelled then wake() end
return out
`

// luaHeartbeat extends a lease. ARGV: now, channel, id, token, ttl (µs).
// Returns {'ok', expiresAt, worker}, {'lost'} or {'lost', reason} when the
// job passed its deadline and was cancelled.
const luaHeartbeat = `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local j = fence(k, id, ARGV[4], {'st','lt','t','rn','rb','md','mu','fs','ca','lw'})
if not j then return {'lost'} end
local d, reason = deadline(j)
if d and now >= d then
  finish(k, j, 'cancelled', now, 'cancelled', reason)
  wake()
  return {'lost', reason}
end
local lx = fmt(now + tonumber(ARGV[5]))
jset(k, id, 'lx', lx)
later('ZADD', k.lease, lx, id)
return {'ok', lx, j.lw}
`

// luaComplete completes a batch of jobs of one queue. ARGV: now, channel,
// then (id, token, result) per item. Returns {'ok', now, 1|0 per item}.
const luaComplete = `
local k = keys(1)
local now = now_us()
local out = {'ok', fmt(now)}
local any = false
for i = 3, #ARGV, 3 do
  local j = fence(k, ARGV[i], ARGV[i + 1])
  if j then
    finish(k, j, 'succeeded', now, 'succeeded', nil, ARGV[i + 2])
    out[#out + 1] = 1
    any = true
  else
    out[#out + 1] = 0
  end
end
if any then wake() end
return out
`

// luaFail ends a run with an error. ARGV: now, channel, id, token, error,
// retryAt (µs, 0 for now), terminal ('1' or '0'). Returns {'ok', state} or
// {'lost'}.
const luaFail = `
local k = keys(1)
local now = now_us()
local id, err = ARGV[3], ARGV[5]
local j = fence(k, id, ARGV[4], {'st','lt','t','rn','rb','md','mu','a','ma','pr'})
if not j then return {'lost'} end
if ARGV[7] == '1' or tonumber(j.a) >= tonumber(j.ma) then
  finish(k, j, 'failed', now, 'failed', err)
  wake()
  return {'ok', 'failed'}
end
local ra = ARGV[6]
if tonumber(ra) < now then ra = fmt(now) end
setstate(k, j, 'queued')
later('ZREM', k.lease, id)
closerun(k, j, 'failed', now, err)
local rk = place(k, j, ra, now)
jset(k, id, 'st', 'queued', 'le', err, 'ra', ra, 'rk', rk)
if rk ~= '' then wake() end
return {'ok', 'queued'}
`

// luaSleep parks a running job until a time. ARGV: now, channel, id,
// token, until (µs). Returns {'ok'} or {'lost'}.
const luaSleep = `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local j = fence(k, id, ARGV[4], {'st','lt','t','rn','rb','md','mu','pr'})
if not j then return {'lost'} end
local ra = ARGV[5]
if tonumber(ra) < now then ra = fmt(now) end
setstate(k, j, 'sleeping')
later('ZREM', k.lease, id)
closerun(k, j, 'sleeping', now, nil)
local rk = place(k, j, ra, now)
jset(k, id, 'st', 'sleeping', 'ra', ra, 'rk', rk)
if rk ~= '' then wake() end
return {'ok'}
`

// luaCheckpoint stores a step's value unless one is stored. ARGV: now,
// channel, id, token, step, value. Returns {'ok', value, createdAt} or
// {'lost'}.
const luaCheckpoint = `
local k = keys(1)
local now = now_us()
local id, step = ARGV[3], ARGV[5]
if not fence(k, id, ARGV[4], {'st','lt'}) then return {'lost'} end
local f = id .. '|' .. step
local v = redis.call('HMGET', k.cp, f .. '|v', f .. '|c')
if v[1] then return {'ok', v[1], v[2]} end
redis.call('HSET', k.cp, f .. '|v', ARGV[6], f .. '|c', fmt(now))
redis.call('ZADD', k.cpx, 0, f)
return {'ok', ARGV[6], fmt(now)}
`
