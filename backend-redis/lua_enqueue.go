package redisq

// luaEnqueue stores a batch of jobs spread over one or more queue groups of
// KEYS (one group per queue, all groups in one slot), or one part of a batch
// whose queues live in different slots of a cluster (see enqueueSharded).
//
// ARGV: now, (unused channel), mode, batch, batch info, commit-by, nGroups,
// then per group: channel; nTasks, then per task: task, maxInFlight,
// maxPerSecond, otherInFlight, otherRecent; nItems, then per item the EW
// values itemArgs in Enqueue lists: group, id, task, cold attributes, the
// record from its state to its idempotency key (see packRecord), run at
// (µs, "0" for now), idempotency key, fingerprint, deadline offset (µs
// after creation, "0" for none), ready-member prefix
// ("<priority+1000>|") and flow ("<unique period µs>|<sequence key>", ""
// for a job without either). The idempotency hash maps a key to "<id>:<fingerprint>",
// so that a repeated key is checked without reading a record.
//
// The mode says what to do once every check passed:
//
//   - 'w' writes the jobs: the whole batch, or the one queue of a batch.
//   - 'p' prepares a participant's part of a cross-slot batch: it stores the
//     items under "i|<batch>" in the pend hash, unpacked by nobody but
//     luaApply and luaAbort, with "m|<batch>" -> "<coordinator>|<now>"
//     (batch info is the coordinator's queue), reserves the idempotency keys
//     as "<id>|<batch>" and counts the items as "<task>|pending" for the
//     in-flight limit; no job becomes visible.
//   - 'c' commits a cross-slot batch at its coordinator, the batch's first
//     queue: unless a decision is already recorded (a Rescue aborted the
//     batch) or the batch was prepared longer ago than commit-by allows, it
//     writes the coordinator's jobs and records "c|<now>|<participants>"
//     (batch info) in the txn hash, in one step: the jobs and the decision
//     are stored together or not at all.
//
// The client packs every record (see packRecord) but the values that
// depend on the script's clock, so the script only splices strings and
// sends one bulk command per key; it never builds or packs a record table.
//
// It checks every item first (idempotency keys, then limits) and writes only
// when all pass, so what it covers is stored whole or not at all. It returns
// {'ok', now, r1..rn} where ri is "" for a new job or the id of the job an
// item reuses; {'conflict', i}; {'limited', task, which}; {'pending', i,
// batch, meta} when item i's idempotency key is reserved by the prepared
// part of another batch, not yet settled (meta is that part's "m|" value); or
// {'aborted'} when a commit came too late.
//
// The rate set holds one member per task and call, "<task>|<created µs, 18
// digits>|<first id>|<count>", so that a batch costs one member however
// large it is; the per-second check sums the counts of the last second.
const luaEnqueue = `
local now = now_us()
local nows = fmt(now)
local mode, batch, info = ARGV[3], ARGV[4], ARGV[5]
local pos = 7
local ng = tonumber(ARGV[pos]); pos = pos + 1
local groups = {}
for g = 1, ng do
  groups[g] = {chan = ARGV[pos], k = keys(g), due = false}
  pos = pos + 1
end
local nt = tonumber(ARGV[pos]); pos = pos + 1
local limits = {}
for i = 1, nt do
  limits[ARGV[pos]] = {mif = tonumber(ARGV[pos+1]), eps = tonumber(ARGV[pos+2]),
    oif = tonumber(ARGV[pos+3]), orate = tonumber(ARGV[pos+4])}
  pos = pos + 5
end
local n = tonumber(ARGV[pos]); pos = pos + 1
local first = pos

if mode == 'c' then
  if redis.call('HEXISTS', groups[1].k.txn, batch) == 1 or now > tonumber(ARGV[6]) then return {'aborted'} end
end

-- pass 1: idempotency
local seen = {}
local reuse = {}
local fresh = {}
for i = 1, n do
  local b = first + (i - 1) * EW
  local task, ik = ARGV[b+2], ARGV[b+6]
  if ik ~= '' then
    local g = ARGV[b]
    local fp = ARGV[b+7]
    local sk = g .. '|' .. ik
    local s = seen[sk]
    if not s then
      local k = groups[tonumber(g)].k
      local ex = redis.call('HGET', k.idem, ik)
      local bar = ex and string.find(ex, '|', 1, true)
      if bar then
        -- reserved by a prepared part; one whose part is gone is stale
        local other = string.sub(ex, bar + 1)
        local meta = redis.call('HGET', k.pend, 'm|' .. other)
        if meta then return {'pending', i, other, meta} end
      elseif ex then
        local colon = string.find(ex, ':', 1, true)
        local c2 = string.find(ex, ':', colon + 1, true)
        if not c2 then
          s = {id = string.sub(ex, 1, colon - 1), fp = string.sub(ex, colon + 1)}
        elseif now < tonumber(string.sub(ex, c2 + 1)) then
          -- held until a time (by period); ":0" is a key a terminal job
          -- freed (while active)
          s = {id = string.sub(ex, 1, colon - 1), fp = string.sub(ex, colon + 1, c2 - 1)}
        end
      end
    end
    if s then
      if s.fp ~= fp then return {'conflict', i} end
      reuse[i] = s.id
    else
      seen[sk] = {id = ARGV[b+1], fp = fp}
    end
  end
  if not reuse[i] then fresh[task] = (fresh[task] or 0) + 1 end
end

-- pass 1: limits
local lo = now - 1000000 + 1
if lo < 0 then lo = 0 end
local los = pad(fmt(lo), 18)
for task, c in pairs(fresh) do
  local l = limits[task]
  if l then
    if l.mif > 0 then
      local active = l.oif
      for g = 1, ng do
        local c = redis.call('HMGET', groups[g].k.cnt, task .. '|queued', task .. '|running', task .. '|sleeping', task .. '|pending')
        for i = 1, 4 do active = active + tonumber(c[i] or '0') end
      end
      if active + c > l.mif then return {'limited', task, 'max_in_flight'} end
    end
    if l.eps > 0 then
      local recent = l.orate
      for g = 1, ng do
        local ms = redis.call('ZRANGEBYLEX', groups[g].k.rate, '[' .. task .. '|' .. los, '(' .. task .. '}')
        for _, m in ipairs(ms) do
          recent = recent + tonumber(string.match(m, '(%d+)$'))
        end
      end
      if recent + c > l.eps then return {'limited', task, 'max_enqueue_per_second'} end
    end
  end
end

local out = {'ok', nows}
for i = 1, n do out[i + 2] = reuse[i] or '' end
ratemembers(now, groups, ARGV, first, n, reuse, los)

if mode == 'p' then
  local k = groups[1].k
  local items, idem, cnt = {}, {}, {}
  for i = 1, n do
    if not reuse[i] then
      local b = first + (i - 1) * EW
      for j = 0, EW - 1 do items[#items + 1] = ARGV[b + j] end
      local id, task, ik = ARGV[b+1], ARGV[b+2], ARGV[b+6]
      if ik ~= '' then
        idem[#idem + 1] = ik
        idem[#idem + 1] = id .. '|' .. batch
      end
      cnt[task] = (cnt[task] or 0) + 1
    end
  end
  if #items > 0 then
    redis.call('HSET', k.pend, 'm|' .. batch, info .. '|' .. nows, 'i|' .. batch, mpack(items))
  end
  if #idem > 0 then bulk('HSET', k.idem, idem) end
  for task, c in pairs(cnt) do bump(k.cnt, task, 'pending', c) end
  return out
end

writejobs(now, groups, ARGV, first, n, reuse)
seqjobs(now, groups)
if mode == 'c' then redis.call('HSET', groups[1].k.txn, batch, 'c|' .. nows .. '|' .. info) end
for g = 1, ng do
  if groups[g].due and groups[g].chan ~= '' then redis.call('PUBLISH', groups[g].chan, '1') end
end
return out
`

// luaApply stores the prepared part of a committed cross-slot batch (see
// luaEnqueue, mode 'p'). ARGV: now, channel, batch. Returns {'ok', now}, or
// {'gone'} when the part was already applied or aborted.
const luaApply = `
local k = keys(1)
local now = now_us()
local batch = ARGV[3]
local v = redis.call('HMGET', k.pend, 'm|' .. batch, 'i|' .. batch)
if not v[1] then return {'gone'} end
local A = pendItems(munpack(v[2]))
local n = #A / EW
local groups = {{chan = ARGV[2], k = k, due = false}}
writejobs(now, groups, A, 1, n, {})
seqjobs(now, groups)
local cnt = {}
for b = 1, #A, EW do cnt[A[b+2]] = (cnt[A[b+2]] or 0) + 1 end
for task, c in pairs(cnt) do bump(k.cnt, task, 'pending', -c) end
redis.call('HDEL', k.pend, 'm|' .. batch, 'i|' .. batch)
if groups[1].due then wake() end
return {'ok', fmt(now)}
`

// luaAbort drops the prepared part of an aborted cross-slot batch: its
// items, its idempotency key reservations and its pending counts. ARGV:
// now, channel, batch. Returns {'ok', id...} with the ids of the part's
// jobs that no job of the queue holds (a later attempt of the same Enqueue
// may have stored them), or {'gone'}.
const luaAbort = `
local k = keys(1)
local batch = ARGV[3]
local v = redis.call('HMGET', k.pend, 'm|' .. batch, 'i|' .. batch)
if not v[1] then return {'gone'} end
local A = pendItems(munpack(v[2]))
local out = {'ok'}
local cnt, keyed, held, ids = {}, {}, {}, {}
for b = 1, #A, EW do
  local id, task, ik = A[b+1], A[b+2], A[b+6]
  ids[#ids + 1] = id
  cnt[task] = (cnt[task] or 0) + 1
  if ik ~= '' then
    keyed[#keyed + 1] = ik
    held[#held + 1] = id .. '|' .. batch
  end
end
local del = {}
chunks(#keyed, 4000, function(i, j)
  local cur = redis.call('HMGET', k.idem, unpack(keyed, i, j))
  for n = i, j do
    if cur[n - i + 1] == held[n] then del[#del + 1] = keyed[n] end
  end
end)
if #del > 0 then bulk('HDEL', k.idem, del) end
for task, c in pairs(cnt) do bump(k.cnt, task, 'pending', -c) end
redis.call('HDEL', k.pend, 'm|' .. batch, 'i|' .. batch)
-- a later attempt of the same Enqueue may have stored these ids
fetch(k, ids)
for _, id in ipairs(ids) do
  if not J[id] then out[#out + 1] = id end
end
return out
`

// luaDecide reads the decision of a cross-slot batch at its coordinator and,
// when force is '1' and there is none, decides to abort it, so that a later
// commit of the batch refuses. ARGV: now, channel, batch, force. Returns
// {'c'}, {'a'} or {'none'}.
const luaDecide = `
local k = keys(1)
local batch = ARGV[3]
local d = redis.call('HGET', k.txn, batch)
if d then return {string.sub(d, 1, 1)} end
if ARGV[4] ~= '1' then return {'none'} end
redis.call('HSET', k.txn, batch, 'a|' .. fmt(now_us()) .. '|')
return {'a'}
`
