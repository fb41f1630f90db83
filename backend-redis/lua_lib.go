package redisq

// luaLib is the library of helpers every script uses: loaded once as the
// top of the Functions library, or prepended (the helpers a script uses)
// to the script for EVAL. It names the keys of one queue group
// (see queueKeys for the order), reads the clock and holds the helpers that
// keep the job records, the indexes, the run records and the statistics in
// step.
//
// Conventions: times are integer microseconds since the Unix epoch, kept as
// Lua numbers and formatted with "%.0f" whenever they leave the script
// (Lua's "%.14g" default would round them). ARGV[1] is the clock override
// (empty means the server's TIME) and ARGV[2] the wake-up channel of the
// queue.
//
// A job is up to three fields of the job hash. "<id>" holds its record:
// what transitions read and change, packed with struct.pack in the fixed
// layout RF below (the r* fields in decode.go), numbers as doubles and
// states as one-byte codes, so that a transition unpacks and packs it in
// one C call each and pays a Lua string only for its few strings. "<id>|x"
// holds what no transition changes (payload, headers, retry policy, actor,
// cancellation policy, fingerprint), packed by the client once at enqueue
// and never rewritten; "<id>|r" holds a result, written once by Complete
// when there is one. A script reads the records it needs with one HMGET
// per batch into J, changes them there and writes every changed record
// back with one HSET when it ends, so a batch of n jobs costs a handful of
// commands, not a few per job.
//
// Writes to the sorted-set indexes and the statistics are collected too and
// sent as one command per key and kind when the script ends (or at
// flush(), which a script calls before reading such a key). The last write
// of a member wins, as if the writes had run in order.
const luaLib = `
-- KF returns the keys of queue group g of the running script by name:
-- each script gets only the keys it touches, in its own order (see
-- luaScript.keysFunc).
local KF
local function keys(g) return KF(g) end

-- NOW is the call's clock once read (settle reuses it).
local NOW
local function now_us()
  if ARGV[1] ~= '' then NOW = tonumber(ARGV[1]) return NOW end
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return NOW
end

-- Standard functions the helpers call often, bound by begin: a Functions
-- library may read no global while it loads.
local sformat, mpack, munpack, spack, sunpack

-- fmt formats an integer; a batch formats the same few times (now, a
-- lease expiry) many times, so the last result is kept.
local fmtn, fmts = nil, nil
local function fmt(n)
  if n ~= fmtn then fmtn, fmts = n, sformat('%.0f', n) end
  return fmts
end

local function pad(s, w)
  if #s < w then return string.rep('0', w - #s) .. s end
  return s
end

-- The record layout RF: run at, creation time, cancellation deadline and
-- whether the job is in the ready set (the four the enqueue script fills
-- in, first), state, priority, attempt, max attempts, first started (0:
-- never), finished (0: not), max duration (µs, 0: none), lease token, run
-- count, then the last run's status, start and finish, and the strings:
-- task, lease worker, last run's error (its id is runid(id, token)), last
-- error and idempotency key, each after its length. The deadline is that
-- of the job's current phase: creation plus max delay until its first
-- start, then first start plus max duration. A ready job's member in the
-- ready set is readykey(id, priority, run at). A running job's lease
-- expiry is its score in the lease set, not in the record, so that a
-- heartbeat writes no record.
local RF = '>dddBBhdddddddBddHc0Hc0Hc0Hc0Hc0'
local RRA, RCA, RDL, RRD, RST, RPR, RA, RMA, RFS, RFA, RMU, RLT, RRN = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
local RRS, RRB, RRF, RT, RLW, RRE, RLE, RIK = 14, 15, 16, 17, 18, 19, 20, 21
-- A job with flow fields has them after RF, in the layout RX: its unique
-- mode (0 until retention, 1 while active, 2 by period), limit key,
-- sequence key and unique period (ns, as text). A record without them
-- (every job that sets none, every job stored before they existed) ends
-- after RF; its RUQ..RUP are nil. Position 22 holds where RF ended.
local RX = '>BHc0Hc0Hc0'
local RUQ, RLK, RSK, RUP = 23, 24, 25, 26
-- RFX is RF followed by RX (without its byte order), to pack a record
-- with flow fields at once.
local RFX = RF .. 'BHc0Hc0Hc0'
-- The ready flag RRD: 0 in no set or the scheduled set, 1 ready, 3
-- waiting behind its sequence's head; 2, 4, 5 and 6 held back by a gate
-- (or let back into the ready set from it and not claimed yet): its
-- task's concurrency, its limit key's concurrency, its task's start rate,
-- its limit key's start rate.

-- job states and run statuses, as the record codes them
local QUEUED, RUNNING, SLEEPING, SUCCEEDED, FAILED, CANCELLED = 1, 2, 3, 4, 5, 6
local SN = {'queued', 'running', 'sleeping', 'succeeded', 'failed', 'cancelled'}
local RUN_RUNNING, RUN_SUCCEEDED, RUN_FAILED, RUN_SLEEPING, RUN_CANCELLED, RUN_LOST = 1, 2, 3, 4, 5, 6
local RSN = {'running', 'succeeded', 'failed', 'sleeping', 'cancelled', 'lost'}

-- J caches the records this script read or wrote: id -> record, or false
-- when the job does not exist. JW lists the ids whose record changed. P
-- holds records already packed for the reply, which flush reuses.
local J, JW, JWS, P = {}, {}, {}, {}
-- JK maps the id of a record read from another queue's job hash (see kq)
-- to that hash.
local JK = {}

-- chunks calls fn(i, j) over 1..n in ranges of at most size, which stay
-- within Lua's stack.
local function chunks(n, size, fn)
  local i = 1
  while i <= n do
    local j = math.min(i + size - 1, n)
    fn(i, j)
    i = j + 1
  end
end

-- hmget returns the values of the fields of hash key, in chunks of 4,000
-- (a single call, without building a closure, when they fit in one).
local function hmget(key, fields)
  local n = #fields
  if n <= 4000 then return redis.call('HMGET', key, unpack(fields)) end
  local out = {}
  chunks(n, 4000, function(i, j)
    local v = redis.call('HMGET', key, unpack(fields, i, j))
    for m = i, j do out[m] = v[m - i + 1] end
  end)
  return out
end

-- fetch reads the records of ids (and, when cold, their "|x" fields, as
-- returned in the second result).
local function fetch(k, ids, cold)
  local need = {}
  for _, id in ipairs(ids) do
    if J[id] == nil then need[#need + 1] = id end
  end
  if #need > 0 then
    local v = hmget(k.job, need)
    for n, id in ipairs(need) do
      local s = v[n]
      if s then
        local r = {sunpack(RF, s)}
        if r[22] <= #s then r[RUQ], r[RLK], r[RSK], r[RUP] = sunpack(RX, s, r[22]) end
        J[id] = r
      else
        J[id] = false
      end
    end
  end
  if not cold then return nil end
  local names = {}
  for i, id in ipairs(ids) do names[i] = id .. '|x' end
  local x = hmget(k.job, names)
  for i = 1, #ids do x[i] = x[i] or '' end
  return x
end

-- get returns the record of id, or nil.
local function get(k, id)
  if J[id] == nil then fetch(k, {id}) end
  return J[id] or nil
end

-- getk is get for keys k that may be another queue's (see kq): the
-- record is then written back to that queue's job hash.
local function getk(k, id)
  local r = get(k, id)
  if r and k._ch then JK[id] = k.job end
  return r
end

-- fetchk is fetch (without cold fields) for keys k that may be another
-- queue's, as getk.
local function fetchk(k, ids)
  fetch(k, ids)
  if k._ch then
    for _, id in ipairs(ids) do
      if J[id] then JK[id] = k.job end
    end
  end
end

-- put marks a record as changed.
local function put(id, r)
  J[id] = r
  if not JWS[id] then
    JWS[id] = true
    JW[#JW + 1] = id
  end
end

-- packed encodes a record in the layout RF.
local function packed(r)
  local t, w, e, l, ik = r[RT], r[RLW], r[RRE], r[RLE], r[RIK]
  if r[RUQ] then
    -- one pack of both layouts: no second copy of the record
    local lk, sk, up = r[RLK], r[RSK], r[RUP]
    return spack(RFX, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
      r[14], r[15], r[16], #t, t, #w, w, #e, e, #l, l, #ik, ik, r[RUQ], #lk, lk, #sk, sk, #up, up)
  end
  return spack(RF, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
    r[14], r[15], r[16], #t, t, #w, w, #e, e, #l, l, #ik, ik)
end

-- collected index writes: Z[key][member] = score, or false to remove
local Z, ZO, S = {}, {}, {}
local function zadd(key, score, m)
  local e = Z[key]
  if not e then e = {}; Z[key] = e; ZO[#ZO + 1] = key end
  e[m] = score
end
local function zrem(key, m)
  local e = Z[key]
  if not e then e = {}; Z[key] = e; ZO[#ZO + 1] = key end
  e[m] = false
end
-- bump adds delta to the counter "<a>|<b>" of hash key.
local function bump(key, a, b, delta)
  local e = S[key]
  if not e then e = {}; S[key] = e end
  local f = e[a]
  if not f then f = {}; e[a] = f end
  f[b] = (f[b] or 0) + delta
end
-- bulk runs cmd on key with the arguments in list, in chunks that stay
-- within Lua's stack.
local function bulk(cmd, key, list)
  if #list <= 4000 then
    redis.call(cmd, key, unpack(list))
    return
  end
  chunks(#list, 4000, function(i, j) redis.call(cmd, key, unpack(list, i, j)) end)
end
-- RS collects results to write: "<id>|r", value, ...
local RS = {}
-- FLOWHT is the value of the flow hash's field "~ht" (see flush).
local FLOWHT = 'this field keeps the hash in hash table encoding: 65 bytes or more'
-- flowdel deletes the fields fs of the flow hash key. Every deletion of
-- flow fields goes through it: when it leaves only "~ht", which stands
-- for nothing, the hash goes too, so that a flow hash holds a field that
-- means something or does not exist (a deleted queue leaves none).
local function flowdel(key, fs)
  bulk('HDEL', key, fs)
  if redis.call('HLEN', key) == 1 and redis.call('HEXISTS', key, '~ht') == 1 then
    redis.call('DEL', key)
  end
end
-- KEYED caches per flow hash and task whether the task's key counts
-- ("k|<task>|<key>") are kept: they are while the hash holds "~k|<task>",
-- which the claim sets when the task's running count reaches its per-key
-- limit (see keepkeys) and flush deletes with the task's count when that
-- falls to zero. Below the limit no key can reach it, so the counts are
-- not needed, and no transition pays for them.
local KEYED = {}
local function keyed(fk, task)
  local e = KEYED[fk]
  if not e then e = {}; KEYED[fk] = e end
  local v = e[task]
  if v == nil then
    v = redis.call('HEXISTS', fk, '~k|' .. task) == 1
    e[task] = v
  end
  return v
end
local function flush(k)
  if #JW > 0 or #RS > 0 then
    local a, xa = RS, nil
    for _, id in ipairs(JW) do
      local jk = JK[id]
      if not J[id] then
        -- changed, then deleted by the same call (a waiter woken by the
        -- deletion of its child, then deleted itself): nothing to write
      elseif jk then
        -- a record of another queue (see kq) goes to its own job hash
        xa = xa or {}
        local t = xa[jk]
        if not t then t = {}; xa[jk] = t end
        t[#t + 1] = id
        t[#t + 1] = P[id] or packed(J[id])
      else
        a[#a + 1] = id
        a[#a + 1] = P[id] or packed(J[id])
      end
    end
    if #a > 0 then bulk('HSET', k.job, a) end
    if xa then
      for jk, t in pairs(xa) do bulk('HSET', jk, t) end
    end
    JW, JWS, P, RS = {}, {}, {}, {}
  end
  for _, key in ipairs(ZO) do
    local add, rem = {}, {}
    for m, s in pairs(Z[key]) do
      if s then
        add[#add + 1] = s
        add[#add + 1] = m
      else
        rem[#rem + 1] = m
      end
    end
    if #rem > 0 then bulk('ZREM', key, rem) end
    if #add > 0 then bulk('ZADD', key, add) end
  end
  for key, e in pairs(S) do
    if key == k.flow then
      -- the running counts, one per task and key, change in a batch by
      -- one read and at most two writes: a count that falls to zero goes
      -- (below zero: jobs that ran before the counts existed), so that a
      -- deleted queue leaves none
      local fs, ds, ts = {}, {}, {}
      for a, f in pairs(e) do
        for b, d in pairs(f) do
          if d ~= 0 then
            fs[#fs + 1] = a .. '|' .. b
            ds[#ds + 1] = d
            -- a task's count: its task, should it fall to zero
            if a == 't' then ts[#fs] = b end
          end
        end
      end
      if #fs > 0 then
        local cur = hmget(key, fs)
        -- counts are small and repeat across keys: each value is
        -- formatted once per call (a format is thousands of instructions)
        local set, del, txt = {}, {}, {}
        for n, fl in ipairs(fs) do
          local v = tonumber(cur[n] or '0') + ds[n]
          if v > 0 then
            local vs = txt[v]
            if not vs then vs = sformat('%d', v); txt[v] = vs end
            set[#set + 1] = fl
            set[#set + 1] = vs
          else
            del[#del + 1] = fl
            local task = ts[n]
            if task then
              -- no job of the task runs: no key's count is left, and
              -- none is kept until the task reaches its per-key limit again
              del[#del + 1] = '~k|' .. task
              if KEYED[key] then KEYED[key][task] = nil end
            end
          end
        end
        if #set > 0 then
          -- a value longer than hash-max-listpack-value (64 bytes by
          -- default) keeps the hash a hash table for good: in a listpack
          -- every field of a batch's HMGET and HSET is a scan of the
          -- whole hash, and the flow hash holds a field per limit key
          set[#set + 1] = '~ht'
          set[#set + 1] = FLOWHT
          bulk('HSET', key, set)
        end
        if #del > 0 then flowdel(key, del) end
      end
    else
      for a, f in pairs(e) do
        for b, d in pairs(f) do
          if d ~= 0 then redis.call('HINCRBY', key, a .. '|' .. b, fmt(d)) end
        end
      end
    end
  end
  if #ZO > 0 then Z, ZO = {}, {} end
  if next(S) then S = {} end
end

-- EW is the number of values per item of an enqueue (see luaEnqueue).
local EW = 11

-- pendItems returns the items of a prepared batch part with EW values
-- each. A part prepared before items had their flow value has 10 each
-- (the eleventh value is then the next item's group, digits only, where a
-- flow value is empty or holds a '|'): it gets an empty flow value each.
local function pendItems(A)
  local n = #A
  if n % EW == 0 and (n == 0 or A[11] == '' or string.find(A[11], '|', 1, true)) then return A end
  local out = {}
  for b = 1, n, 10 do
    for j = 0, 9 do out[#out + 1] = A[b + j] end
    out[#out + 1] = ''
  end
  return out
end

-- ratemembers drops the rate members older than los of the tasks of
-- items 1..n of A (from position first on, EW values each; those in skip
-- reuse a job and do not count) and adds one member per group and task.
local function ratemembers(now, groups, A, first, n, skip, los)
  local nowp = pad(fmt(now), 18) .. '|'
  local per, seen = {}, {}
  for g = 1, #groups do per[g] = {} end
  for i = 1, n do
    if not skip[i] then
      local b = first + (i - 1) * EW
      local g, id, task = tonumber(A[b]), A[b+1], A[b+2]
      local rt = per[g][task]
      if rt then rt[2] = rt[2] + 1 else per[g][task] = {id, 1} end
      seen[task] = true
    end
  end
  for task, _ in pairs(seen) do
    for g = 1, #groups do
      redis.call('ZREMRANGEBYLEX', groups[g].k.rate, '[' .. task .. '|', '(' .. task .. '|' .. los)
    end
  end
  for g = 1, #groups do
    for task, rt in pairs(per[g]) do
      zadd(groups[g].k.rate, '0', task .. '|' .. nowp .. rt[1] .. '|' .. rt[2])
    end
  end
end

-- writejobs stores the new jobs of items 1..n of A (from position first
-- on, EW values each, see luaEnqueue) but those in skip, which reuse a
-- job. The client packed each record but for its run at, creation time,
-- deadline and ready flag (the first 25 bytes), which depend on the
-- script's clock. It sends one bulk write per key and group, and sets
-- groups[g].due when a job of group g is claimable now.
local function writejobs(now, groups, A, first, n, skip)
  local ng = #groups
  local nowp = pad(fmt(now), 18) .. '|'
  local HEAD = spack('>dddB', now, now, 0, 1)
  local rec, ready, sched, idx, dead, idem, cnt = {}, {}, {}, {}, {}, {}, {}
  for g = 1, ng do
    rec[g], ready[g], sched[g], idx[g], dead[g], idem[g], cnt[g] = {}, {}, {}, {}, {}, {}, {}
  end
  for i = 1, n do
    if not skip[i] then
      local b = first + (i - 1) * EW
      local g = tonumber(A[b])
      local id, task, ras, ik, dl, fl = A[b+1], A[b+2], A[b+5], A[b+6], A[b+8], A[b+10]
      local per, sk = 0, ''
      if fl ~= '' then
        local p, q = string.match(fl, '^(%d+)|(.*)$')
        per, sk = tonumber(p), q
      end
      local d = 0
      if dl ~= '0' then
        d = now + tonumber(dl)
        local e = dead[g]
        e[#e + 1] = fmt(d)
        e[#e + 1] = id
      end
      local a = rec[g]
      local na = #a
      a[na + 1] = id
      a[na + 3] = id .. '|x'
      a[na + 4] = A[b+3]
      if sk ~= '' then
        -- a job of a sequence is placed by seqjobs, once its head is known
        a[na + 2] = spack('>dddB', ras == '0' and now or tonumber(ras), now, d, 0) .. A[b+4]
        local q = groups[g].seq
        if not q then q = {}; groups[g].seq = q end
        q[#q + 1] = id
      elseif ras == '0' or tonumber(ras) <= now then
        local head = HEAD
        if d ~= 0 then head = spack('>dddB', now, now, d, 1) end
        a[na + 2] = head .. A[b+4]
        local r = ready[g]
        r[#r + 1] = '0'
        r[#r + 1] = A[b+9] .. nowp .. id
        groups[g].due = true
      else
        a[na + 2] = spack('>dddB', tonumber(ras), now, d, 0) .. A[b+4]
        local s = sched[g]
        s[#s + 1] = ras
        s[#s + 1] = id
      end
      local x = idx[g]
      local nx = #x
      x[nx + 1] = '0'
      x[nx + 2] = 's|queued|' .. id
      x[nx + 3] = '0'
      x[nx + 4] = 'k|' .. task .. '|' .. id
      cnt[g][task] = (cnt[g][task] or 0) + 1
      if ik ~= '' then
        local e = idem[g]
        e[#e + 1] = ik
        if per > 0 then
          -- by period: the key holds until the end of the creation window
          e[#e + 1] = id .. ':' .. A[b+7] .. ':' .. fmt(now - now % per + per)
        else
          e[#e + 1] = id .. ':' .. A[b+7]
        end
      end
    end
  end
  for g = 1, ng do
    local k = groups[g].k
    if #rec[g] > 0 then bulk('HSET', k.job, rec[g]) end
    if #ready[g] > 0 then bulk('ZADD', k.ready, ready[g]) end
    if #sched[g] > 0 then bulk('ZADD', k.sched, sched[g]) end
    if #idx[g] > 0 then bulk('ZADD', k.idx, idx[g]) end
    if #dead[g] > 0 then bulk('ZADD', k.dead, dead[g]) end
    if #idem[g] > 0 then bulk('HSET', k.idem, idem[g]) end
    for task, c in pairs(cnt[g]) do bump(k.cnt, task, 'queued', c) end
    if g > 1 then flush(k) end
  end
end

-- ready members sort by priority, then due time, then id.
local PRS = {}
local rkt, rkts = nil, nil
local function readykey(id, pr, ra)
  local p = PRS[pr]
  if not p then p = sformat('%04d', pr + 1000) .. '|'; PRS[pr] = p end
  if ra ~= rkt then rkt, rkts = ra, pad(fmt(ra), 18) .. '|' end
  return p .. rkts .. id
end

-- place puts a queued or sleeping job that is in neither the ready nor the
-- scheduled set into the one its due time ra calls for.
local function place(k, id, r, now)
  if r[RRA] <= now then
    zadd(k.ready, '0', readykey(id, r[RPR], r[RRA]))
    r[RRD] = 1
  else
    zadd(k.sched, fmt(r[RRA]), id)
    r[RRD] = 0
  end
end

-- REL lists the gate groups ("t|<task>", "k|<task>|<key>", ...) that
-- gave up a held-back job in this call, and the records of the jobs that
-- left running (standing for their task's and limit key's groups); SQ the
-- sequences whose head left: settle lets the next jobs in.
local REL, SQ = {}, {}

-- gatemember is a held-back job's member in the gate set: its group, the
-- ready key of its queue, its ready member and its queue's channel. A
-- group's members sort by queue, then in claim order.
local function gatemember(k, id, r, grp)
  return grp .. '#' .. k.ready .. '#' .. readykey(id, r[RPR], r[RRA]) .. '#' .. (k._ch or ARGV[2])
end

-- gategroup is the gate group of a job held back with ready flag rd.
local function gategroup(r, rd)
  if rd == 2 then return 't|' .. r[RT] end
  if rd == 5 then return 'r|' .. r[RT] end
  if rd == 4 then return 'k|' .. r[RT] .. '|' .. r[RLK] end
  return 'rk|' .. r[RT] .. '|' .. r[RLK]
end

-- letin moves the first n members of gate group g of each queue back
-- into the queue's ready set: the room a transition freed goes to the
-- claim that comes first, in whichever queue. It reports whether members
-- are left behind in some queue.
local function letin(k, g, n)
  local lo, hi = '[' .. g .. '#', '(' .. g .. '$'
  local left = false
  while true do
    local ms = redis.call('ZRANGEBYLEX', k.gate, lo, hi, 'LIMIT', '0', n + 1)
    if #ms == 0 then break end
    local p = #g + 2
    local rk = string.sub(ms[1], p, string.find(ms[1], '#', p, true) - 1)
    local q = p + #rk + 1
    local take, ch = {}, ''
    for _, m in ipairs(ms) do
      if string.sub(m, p, q - 1) ~= rk .. '#' then break end
      if #take == n then left = true break end
      take[#take + 1] = m
      local b = string.find(m, '#', q, true)
      redis.call('ZADD', rk, '0', string.sub(m, q, b - 1))
      ch = string.sub(m, b + 1)
    end
    redis.call('ZREM', k.gate, unpack(take))
    if ch ~= '' then redis.call('PUBLISH', ch, '1') end
    -- on to the next queue: past every member of this one
    lo = '(' .. g .. '#' .. rk .. '$'
  end
  return left
end

-- admitdue lets in the jobs that start rates held back for a window that
-- has begun: as many per group as its rate (a claim holds back again
-- those it cannot start), the group coming due again at the next window
-- while it holds more.
local function admitdue(k, now)
  local due = redis.call('ZRANGEBYSCORE', k.gatet, '-inf', fmt(now), 'LIMIT', '0', '1000')
  if #due == 0 then return end
  redis.call('ZREM', k.gatet, unpack(due))
  local nxt = fmt((math.floor(now / 1000000) + 1) * 1000000)
  for _, g in ipairs(due) do
    local key, task = string.match(g, '^(r?k?)|([^|]*)')
    local n = 0
    local v = redis.call('HGET', k.tflow, task)
    if v then
      local a, b, c3, d = string.match(v, '^(%d+)|(%d+)|(%d+)|(%d+)')
      n = tonumber(key == 'r' and c3 or d)
    end
    if n == 0 then n = 1000 end
    if letin(k, g, n) then redis.call('ZADD', k.gatet, nxt, g) end
  end
end

-- tpre and kpre return a task's group "t|<task>" and the start of its
-- keys' groups "k|<task>", built once per task and call: the running
-- counts of a batch are bumped per job without building a string (flush
-- joins "k|<task>" and the key once per key, see bump).
local TPRE, KPRE = {}, {}
local function tpre(task)
  local g = TPRE[task]
  if not g then g = 't|' .. task; TPRE[task] = g end
  return g
end
local function kpre(task)
  local g = KPRE[task]
  if not g then g = 'k|' .. task; KPRE[task] = g end
  return g
end

-- groups returns the concurrency groups of a job: its task's, and its
-- limit key's or nil.
local function groupsof(r)
  local lk = r[RLK]
  if lk and lk ~= '' then return tpre(r[RT]), kpre(r[RT]) .. '|' .. lk end
  return tpre(r[RT]), nil
end

local function unschedule(k, id, r)
  local rd = r[RRD]
  if rd ~= 0 and rd ~= 3 then zrem(k.ready, readykey(id, r[RPR], r[RRA])) end
  if rd >= 2 and rd ~= 3 then
    -- held back, or let back and not claimed yet: the gate lets another in
    local g = gategroup(r, rd)
    zrem(k.gate, gatemember(k, id, r, g))
    REL[#REL + 1] = g
  elseif rd == 3 then
    zrem(k.seqw, r[RSK] .. '#' .. id)
  end
  zrem(k.sched, id)
  r[RRD] = 0
end

-- setstate moves a job to another state in the index and the counts.
-- Running jobs have no index entry: the lease set holds exactly them.
local function setstate(k, id, r, new)
  local task, old = r[RT], r[RST]
  if old ~= RUNNING then zrem(k.idx, 's|' .. SN[old] .. '|' .. id) end
  if new ~= RUNNING then zadd(k.idx, '0', 's|' .. SN[new] .. '|' .. id) end
  bump(k.cnt, task, SN[old], -1)
  bump(k.cnt, task, SN[new], 1)
  if old == RUNNING or new == RUNNING then
    -- running counts of the task and its limit key, for the limits at claim
    local d = new == RUNNING and 1 or -1
    bump(k.flow, 't', task, d)
    local lk = r[RLK]
    if lk and lk ~= '' and keyed(k.flow, task) then bump(k.flow, kpre(task), lk, d) end
    -- the record stands for its groups (see settle)
    if d < 0 then REL[#REL + 1] = r end
  end
  r[RST] = new
end

-- seqenter puts a queued job of a sequence in line: at the head when the
-- sequence has none, or when its head has a larger id and is only queued
-- (that head goes back in line); otherwise it waits behind the head.
local function seqenter(k, id, r, now)
  local sk = r[RSK]
  local head = redis.call('HGET', k.seqh, sk)
  if head and head ~= id and id < head then
    local hr = getk(k, head)
    if hr and hr[RST] == QUEUED then
      unschedule(k, head, hr)
      hr[RRD] = 3
      zadd(k.seqw, '0', sk .. '#' .. head)
      put(head, hr)
      head = nil
    end
  end
  if not head or head == id then
    redis.call('HSET', k.seqh, sk, id)
    place(k, id, r, now)
  else
    zadd(k.seqw, '0', sk .. '#' .. id)
    r[RRD] = 3
  end
  put(id, r)
end

-- seqjobs puts the new jobs of sequences of each group in line, in id
-- order (see writejobs).
local function seqjobs(now, groups)
  for g = 1, #groups do
    local q = groups[g].seq
    if q then
      local k = groups[g].k
      fetch(k, q)
      for _, id in ipairs(q) do
        local r = J[id]
        seqenter(k, id, r, now)
        if r[RRD] == 1 then groups[g].due = true end
      end
      -- flush writes the records it collected into the job hash of k
      flush(k)
    end
  end
end

-- holds reports whether the task of r keeps a failed job at the head of
-- its sequence (TaskConfig.HoldSequenceOnFailure).
local function holds(k, r)
  local v = redis.call('HGET', k.tflow, r[RT])
  return v ~= false and string.sub(v, -2) == '|1'
end

-- seqleave releases the sequence of a job that leaves it (terminal but
-- failed and held, or deleted): settle lets its next job in.
local function seqleave(k, id, r)
  local sk = r[RSK]
  if redis.call('HGET', k.seqh, sk) == id then
    redis.call('HDEL', k.seqh, sk)
    SQ[#SQ + 1] = k._ch and {sk, k} or sk
  end
end

-- settle lets jobs in after the call freed room: for each group in REL
-- one held-back job goes back into its queue's ready set (a claim that
-- finds the group full again holds it back again), and for each
-- sequence in SQ that has no head its next job in id order becomes the
-- head.
local function settle(k)
  if #SQ == 0 and #REL == 0 then return end
  -- most calls free room where nothing is held back: no gate, no flush
  local gated = #REL > 0 and (Z[k.gate] ~= nil or redis.call('EXISTS', k.gate) == 1)
  if #SQ == 0 and not gated then
    REL = {}
    return
  end
  flush(k)
  if #SQ > 0 then
    local now = NOW or now_us()
    for _, e in ipairs(SQ) do
      -- a sequence of another queue (see kq) comes with its keys
      local kk, sk = k, e
      if type(e) == 'table' then kk, sk = e[2], e[1] end
      if redis.call('HEXISTS', kk.seqh, sk) == 0 then
        local nx = redis.call('ZRANGEBYLEX', kk.seqw, '[' .. sk .. '#', '(' .. sk .. '$', 'LIMIT', '0', '1')
        if #nx > 0 then
          redis.call('ZREM', kk.seqw, nx[1])
          local id = string.sub(nx[1], #sk + 2)
          local r = getk(kk, id)
          if r then
            redis.call('HSET', kk.seqh, sk, id)
            r[RRD] = 0
            place(kk, id, r, now)
            put(id, r)
            local ch = kk._ch or ARGV[2]
            if r[RRD] == 1 and ch ~= '' then redis.call('PUBLISH', ch, '1') end
          end
        end
      end
    end
    SQ = {}
  end
  if #REL > 0 then
    if gated then
      local want = {}
      for _, g in ipairs(REL) do
        if type(g) == 'table' then
          local tg, kg = groupsof(g)
          want[tg] = (want[tg] or 0) + 1
          if kg then want[kg] = (want[kg] or 0) + 1 end
        else
          want[g] = (want[g] or 0) + 1
        end
      end
      for g, n in pairs(want) do letin(k, g, n) end
    end
    REL = {}
  end
end

-- deadline returns the instant a job passes its cancellation deadline in its
-- current phase, and the reason, or nil.
local function deadline(r)
  if r[RDL] == 0 then return nil end
  if r[RFS] == 0 then return r[RDL], 'deadline exceeded: max delay before first start' end
  return r[RDL], 'deadline exceeded: max duration from first start'
end

-- setdeadline puts an unfinished job's deadline into the deadline set.
local function setdeadline(k, id, r)
  if r[RDL] > 0 then zadd(k.dead, fmt(r[RDL]), id) else zrem(k.dead, id) end
end

-- runid is the id of a job's run under token tok: "<id>.<tok>". Tokens grow
-- by one per claim, so run ids never repeat, and a record need not hold it.
local function runid(id, tok) return id .. '.' .. sformat('%.0f', tok) end

-- spill moves the last run of a record into the run hash ("<id>|<n>"),
-- making room for a new one.
local function spill(k, id, r)
  if r[RRN] > 0 then
    redis.call('HSET', k.run, id .. '|' .. r[RRN],
      mpack(runid(id, r[RLT]), r[RA], r[RLW], r[RLT], RSN[r[RRS]], r[RRB], r[RRF], r[RRE]))
  end
end

-- closerun ends a running job's open run, the last run of its record,
-- with a run status code.
local function closerun(k, r, status, now, err)
  r[RRS], r[RRF], r[RRE] = status, now, err or ''
  bump(k.rstat, r[RT], RSN[status], 1)
  bump(k.rstat, r[RT], 'rt', now - r[RRB])
end

-- Fan-in (see core.Awaiter). The wait a job began is a field of two
-- hashes of its queue, under its id: "wait" holds "<token>|<mode>|<until
-- µs, 0: none>|<cancel children 0|1>|<total>|<pending>|<woken 0|1>" and
-- "waitj" its awaited jobs in request order, the queue and id of each
-- after its 2-byte length (see awjobs). The hash "edge" of an awaited
-- job's queue maps its id to the waits that have not counted it yet: the
-- waiting job's queue and id, each after its length, and the wait's token
-- (a double), per wait. A job that no wait awaits costs a transition one
-- EXISTS per call: most queues have no edge hash at all.

-- KQN names every queue key, as keyNames does; KQ caches kq's tables.
local KQN = {'job', 'ready', 'sched', 'lease', 'dead', 'done', 'idx', 'idem', 'rate', 'run', 'cp', 'cpx', 'conf', 'rstat',
  'cnt', 'pend', 'txn', 'seqh', 'seqw', 'wait', 'waitj', 'edge'}
local KQ = {}

-- kq returns the keys of queue q, k being the keys of the running
-- script's queue: k itself for that queue, else the keys of q by name,
-- with the queue's channel as _ch (which marks them as another queue's).
-- A script reaches another queue's keys only where every key of the
-- prefix shares one slot, or one node: the client refuses waits across
-- queues on a cluster with a slot per queue.
local function kq(k, q)
  local p, sep = string.match(k.job, '^{([^:}]*)(.)')
  local tag
  if sep == '}' then tag = '{' .. p .. '}:q:' .. q .. ':' else tag = '{' .. p .. ':' .. q .. '}:' end
  -- naming the fan-in keys here gives every script that calls kq them
  if tag .. 'job' == k.job and k.wait and k.waitj and k.edge then return k end
  local t = KQ[tag]
  if t then return t end
  t = {_ch = p .. ':wake:' .. q}
  for _, n in ipairs(KQN) do t[n] = tag .. n end
  for _, n in ipairs({'flow', 'tflow', 'gate', 'gatet'}) do t[n] = '{' .. p .. '}:' .. n end
  KQ[tag] = t
  return t
end

-- keycounts returns the running jobs of task per limit key as stored,
-- from the records of the jobs in the lease sets of every queue of the
-- prefix (a lease set holds exactly its queue's running jobs).
local function keycounts(k, task)
  local p = string.match(k.job, '^{([^:}]*)')
  local n = {}
  for _, q in ipairs(redis.call('SMEMBERS', '{' .. p .. '}:queues')) do
    local kk = kq(k, q)
    local ids = redis.call('ZRANGE', kk.lease, '0', '-1')
    if #ids > 0 then
      fetch(kk, ids)
      for _, id in ipairs(ids) do
        local r = J[id]
        local lk = r and r[RLK]
        if lk and lk ~= '' and r[RT] == task and r[RST] == RUNNING then n[lk] = (n[lk] or 0) + 1 end
      end
    end
  end
  return n
end

-- keepkeys starts keeping task's key counts (see KEYED): it writes them
-- as keycounts finds them, with "~k|<task>", deletes any other field of
-- the task's keys (left by a version that kept them always) and returns
-- the counts.
local function keepkeys(k, task)
  local n = keycounts(k, task)
  local pre = kpre(task) .. '|'
  local set, stale = {'~k|' .. task, '1'}, {}
  for lk, c in pairs(n) do
    set[#set + 1] = pre .. lk
    set[#set + 1] = fmt(c)
  end
  local cur = '0'
  repeat
    local sc = redis.call('HSCAN', k.flow, cur, 'COUNT', '1000')
    cur = sc[1]
    for i = 1, #sc[2], 2 do
      local f = sc[2][i]
      if string.sub(f, 1, #pre) == pre and not n[string.sub(f, #pre + 1)] then stale[#stale + 1] = f end
    end
  until cur == '0'
  bulk('HSET', k.flow, set)
  if #stale > 0 then flowdel(k.flow, stale) end
  KEYED[k.flow] = KEYED[k.flow] or {}
  KEYED[k.flow][task] = true
  return n
end

-- EX caches, per call, whether a key of waits or edges exists.
local EX = {}
local function exists(key)
  local e = EX[key]
  if e == nil then
    e = redis.call('EXISTS', key) == 1
    EX[key] = e
  end
  return e
end

-- waitparse and waitformat read and write a "wait" value as {token, mode,
-- until, cancel, total, pending, woken}.
local function waitparse(h)
  local t, m, u, c, n, p, w = string.match(h, '^(%d+)|(%a+)|(%d+)|(%d)|(%d+)|(%d+)|(%d)$')
  return {tonumber(t), m, u, c, tonumber(n), tonumber(p), w}
end
local function waitformat(w)
  return sformat('%.0f', w[1]) .. '|' .. w[2] .. '|' .. w[3] .. '|' .. w[4] .. '|' .. w[5] .. '|' .. w[6] .. '|' .. w[7]
end
local function satisfied(w)
  if w[2] == 'any' then return w[6] < w[5] end
  return w[6] == 0
end

-- awjobs splits a "waitj" value into the queues and the ids.
local function awjobs(s)
  local qs, ids, pos = {}, {}, 1
  while pos <= #s do
    local q, id, nx = sunpack('>Hc0Hc0', s, pos)
    qs[#qs + 1], ids[#ids + 1], pos = q, id, nx
  end
  return qs, ids
end

-- awgroups groups the ids by queue: the queues in first-seen order and
-- the ids of each.
local function awgroups(qs, ids)
  local by, order = {}, {}
  for i, q in ipairs(qs) do
    local g = by[q]
    if not g then
      g = {}
      by[q] = g
      order[#order + 1] = q
    end
    g[#g + 1] = ids[i]
  end
  return order, by
end

-- awcount counts job id of the queue of k, which just became terminal or
-- is being deleted, once for each wait that has not counted it, and wakes
-- a job whose current wait that satisfies: the job is sleeping under the
-- wait's token and not yet woken. Its RunAt becomes now.
local function awcount(k, id)
  if not exists(k.edge) then return end
  local v = redis.call('HGET', k.edge, id)
  if not v then return end
  redis.call('HDEL', k.edge, id)
  local pos = 1
  while pos <= #v do
    local wq, wid, tok, nx = sunpack('>Hc0Hc0d', v, pos)
    pos = nx
    local wk = kq(k, wq)
    local h = redis.call('HGET', wk.wait, wid)
    if h then
      local w = waitparse(h)
      if w[1] == tok and w[6] > 0 then
        w[6] = w[6] - 1
        if w[7] == '0' and satisfied(w) then
          local wr = getk(wk, wid)
          if wr and wr[RST] == SLEEPING and wr[RLT] == tok then
            w[7] = '1'
            local now = NOW or now_us()
            if wr[RRA] > now then
              unschedule(wk, wid, wr)
              wr[RRA] = now
              place(wk, wid, wr, now)
              put(wid, wr)
              local ch = wk._ch or ARGV[2]
              if ch ~= '' then redis.call('PUBLISH', ch, '1') end
            end
          end
        end
        redis.call('HSET', wk.wait, wid, waitformat(w))
      end
    end
  end
end

-- awdrop removes the wait of job id of the queue of k, if it has one,
-- with the edges of the wait that have not counted yet.
local function awdrop(k, id)
  if not exists(k.waitj) then return end
  local s = redis.call('HGET', k.waitj, id)
  if not s then return end
  redis.call('HDEL', k.wait, id)
  redis.call('HDEL', k.waitj, id)
  local order, by = awgroups(awjobs(s))
  for _, q in ipairs(order) do
    local ck = kq(k, q)
    local g = by[q]
    local vs = hmget(ck.edge, g)
    local set, del = {}, {}
    for n, cid in ipairs(g) do
      local v = vs[n]
      if v then
        local keep, pos = {}, 1
        while pos <= #v do
          local _, wid, _, nx = sunpack('>Hc0Hc0d', v, pos)
          if wid ~= id then keep[#keep + 1] = string.sub(v, pos, nx - 1) end
          pos = nx
        end
        if #keep == 0 then
          del[#del + 1] = cid
        elseif #keep < #v then
          set[#set + 1] = cid
          set[#set + 1] = table.concat(keep)
        end
      end
    end
    if #del > 0 then bulk('HDEL', ck.edge, del) end
    if #set > 0 then bulk('HSET', ck.edge, set) end
  end
end

-- awkids returns the queues and ids of the jobs that a cancellation of
-- job id (record r, sleeping) of the queue of k cancels with it: those of
-- its wait when the wait is current and cancels its children.
local function awkids(k, id, r)
  if not exists(k.wait) then return nil end
  local h = redis.call('HGET', k.wait, id)
  if not h then return nil end
  local w = waitparse(h)
  if w[4] ~= '1' or w[1] ~= r[RLT] then return nil end
  return {awjobs(redis.call('HGET', k.waitj, id) or '')}
end

-- finish moves a job to a terminal state, closing its open run with a run
-- status code. result, when given and not empty, is stored as the job's
-- result. It counts the job for the waits that await it, and a cancelled
-- job whose current wait cancels its children cancels them with it.
local function finish(k, id, r, new, now, runstatus, err, result)
  local old = r[RST]
  local kids = old == SLEEPING and new == CANCELLED and awkids(k, id, r) or nil
  setstate(k, id, r, new)
  if old == RUNNING then
    zrem(k.lease, id)
    closerun(k, r, runstatus, now, err)
  else
    unschedule(k, id, r)
  end
  r[RFA] = now
  if err then r[RLE] = err end
  if result and result ~= '' then
    RS[#RS + 1] = id .. '|r'
    RS[#RS + 1] = result
  end
  if r[RDL] > 0 then zrem(k.dead, id) end
  zadd(k.done, fmt(now), id)
  if r[RUQ] then
    if r[RSK] ~= '' and not (new == FAILED and holds(k, r)) then seqleave(k, id, r) end
    if r[RUQ] == 1 and r[RIK] ~= '' then
      -- while active: the key is free once the job is terminal; the value
      -- keeps the fingerprint for a retry that takes the key again
      local v = redis.call('HGET', k.idem, r[RIK])
      if v and string.sub(v, 1, #id + 1) == id .. ':' and not string.find(v, ':', #id + 2, true) then
        redis.call('HSET', k.idem, r[RIK], v .. ':0')
      end
    end
  end
  put(id, r)
  awcount(k, id)
  if kids then
    local order, by = awgroups(kids[1], kids[2])
    for _, q in ipairs(order) do
      local ck = kq(k, q)
      fetchk(ck, by[q])
      for _, cid in ipairs(by[q]) do
        local cr = J[cid]
        if cr and cr[RST] < SUCCEEDED then finish(ck, cid, cr, CANCELLED, now, RUN_CANCELLED, err) end
      end
    end
  end
end

-- fence returns a running job's record when it runs under token, else nil.
local function fence(k, id, token)
  local r = get(k, id)
  if not r or r[RST] ~= RUNNING or r[RLT] ~= tonumber(token) then return nil end
  return r
end

-- purge deletes job id (record r) with everything it owns: its index
-- entries and counts, its place in the ready, scheduled, lease, deadline
-- and done sets, its earlier runs (and their share of the run statistics),
-- its checkpoints and its idempotency key, unless a later job holds the
-- key. It appends the job hash fields to delete to del, for one HDEL per
-- call. A running job's lease goes with it, so every later fenced call of
-- that lease finds no job and fails.
local function purge(k, id, r, del)
  awdrop(k, id)
  awcount(k, id)
  local task, st = r[RT], r[RST]
  local sn = SN[st]
  del[#del + 1] = id
  del[#del + 1] = id .. '|x'
  del[#del + 1] = id .. '|r'
  if st ~= RUNNING then zrem(k.idx, 's|' .. sn .. '|' .. id) end
  zrem(k.idx, 'k|' .. task .. '|' .. id)
  bump(k.cnt, task, sn, -1)
  if st == RUNNING then
    local tg, kg = groupsof(r)
    bump(k.flow, 't', task, -1)
    REL[#REL + 1] = tg
    if kg then
      if keyed(k.flow, task) then bump(k.flow, kpre(task), r[RLK], -1) end
      REL[#REL + 1] = kg
    end
  end
  if r[RSK] and r[RSK] ~= '' then seqleave(k, id, r) end
  if r[RIK] ~= '' then
    local v = redis.call('HGET', k.idem, r[RIK])
    if v and string.sub(v, 1, #id + 1) == id .. ':' then redis.call('HDEL', k.idem, r[RIK]) end
  end
  local n = r[RRN]
  if n > 0 then
    if r[RRS] ~= RUN_RUNNING then
      bump(k.rstat, task, RSN[r[RRS]], -1)
      bump(k.rstat, task, 'rt', r[RRB] - r[RRF])
    end
    if n > 1 then
      local f = {}
      for i = 1, n - 1 do f[i] = id .. '|' .. i end
      local rv = hmget(k.run, f)
      for i = 1, n - 1 do
        if rv[i] then
          local _, _, _, _, s, b, fin = munpack(rv[i])
          if s ~= 'running' then
            bump(k.rstat, task, s, -1)
            bump(k.rstat, task, 'rt', b - fin)
          end
        end
      end
      bulk('HDEL', k.run, f)
    end
  end
  local steps = redis.call('ZRANGEBYLEX', k.cpx, '[' .. id .. '|', '(' .. id .. '}')
  if #steps > 0 then
    local f = {}
    for _, s in ipairs(steps) do
      f[#f + 1] = s .. '|v'
      f[#f + 1] = s .. '|c'
    end
    bulk('HDEL', k.cp, f)
    redis.call('ZREMRANGEBYLEX', k.cpx, '[' .. id .. '|', '(' .. id .. '}')
  end
  unschedule(k, id, r)
  zrem(k.done, id)
  zrem(k.dead, id)
  zrem(k.lease, id)
  J[id] = false
end

local function wake()
  if ARGV[2] ~= '' then redis.call('PUBLISH', ARGV[2], '1') end
end

-- jobout is a job as scripts return it: {id, record, cold fields,
-- result}. It flushes first, so that the result it reads is current.
local function jobout(k, id)
  local r = get(k, id)
  local pk = packed(r)
  P[id] = pk
  flush(k)
  local v = redis.call('HMGET', k.job, id .. '|x', id .. '|r')
  return {id, pk, v[1] or '', v[2] or ''}
end

-- The transitions of one job by id, for the keys k of its queue (see
-- kq): the per-job scripts run one, a bulk step one per job. Each returns
-- nil when the job took the action, else why not: 'notfound', 'conflict'
-- or the state that refuses it; and, after nil, whether the queue's
-- listeners hear of it (the script publishes once per queue).

-- cancelone cancels a queued, sleeping or running job with reason; a job
-- already cancelled is left as it is, without error.
local function cancelone(k, id, now, reason)
  local r = getk(k, id)
  if not r then return 'notfound' end
  if r[RST] == SUCCEEDED or r[RST] == FAILED then return SN[r[RST]] end
  if r[RST] == CANCELLED then return nil, false end
  finish(k, id, r, CANCELLED, now, RUN_CANCELLED, reason)
  return nil, true
end

-- retryone queues a failed or cancelled job again. A job whose key holds
-- while active takes its idempotency key again, unless another job holds
-- it by then ('conflict'). A job of a sequence gets back in line (see
-- seqenter).
local function retryone(k, id, now)
  local r = getk(k, id)
  if not r then return 'notfound' end
  if r[RST] ~= FAILED and r[RST] ~= CANCELLED then return SN[r[RST]] end
  if r[RUQ] == 1 and r[RIK] ~= '' then
    local v = redis.call('HGET', k.idem, r[RIK])
    if v and string.sub(v, 1, #id + 1) == id .. ':' then
      local c2 = string.find(v, ':', #id + 2, true)
      if c2 then redis.call('HSET', k.idem, r[RIK], string.sub(v, 1, c2 - 1)) end
    else
      local held = false
      if v then
        if string.find(v, '|', 1, true) then
          held = true -- reserved by a prepared part of a batch
        else
          local c1 = string.find(v, ':', 1, true)
          local c2 = string.find(v, ':', c1 + 1, true)
          held = not c2 or now < tonumber(string.sub(v, c2 + 1))
        end
      end
      if held then return 'conflict' end
      local fp = select(7, munpack(redis.call('HGET', k.job, id .. '|x')))
      redis.call('HSET', k.idem, r[RIK], id .. ':' .. fp)
    end
  end
  setstate(k, id, r, QUEUED)
  zrem(k.done, id)
  if r[RA] >= r[RMA] then r[RMA] = r[RA] + 1 end
  r[RFA], r[RRA] = 0, now
  if r[RSK] and r[RSK] ~= '' then seqenter(k, id, r, now) else place(k, id, r, now) end
  setdeadline(k, id, r)
  put(id, r)
  return nil, true
end

-- deleteone deletes a job with everything it owns (see purge), a running
-- one only with force, appending the job hash fields to delete to del. Its
-- third result is the state the job was in.
local function deleteone(k, id, force, del)
  local r = getk(k, id)
  if not r then return 'notfound' end
  local st = r[RST]
  if st == RUNNING and not force then return SN[st] end
  purge(k, id, r, del)
  return nil, st < SUCCEEDED, SN[st]
end

-- refused is the reply of a per-job script to a transition's refusal e:
-- {'notfound'}, {'conflict'} or {'state', state}.
local function refused(e)
  if e == 'notfound' or e == 'conflict' then return {e} end
  return {'state', e}
end

-- begin starts a call: it binds the standard functions and empties what
-- the last call collected (a library's state outlives its calls).
local function begin()
  sformat, mpack, munpack, spack, sunpack = string.format, cmsgpack.pack, cmsgpack.unpack, struct.pack, struct.unpack
  -- flush empties the others at the end of every call; a call that failed
  -- may have left them full
  if next(J) then J = {} end
  if next(JK) then JK = {} end
  if next(EX) then EX = {} end
  if #JW > 0 or next(P) or #RS > 0 then JW, JWS, P, RS = {}, {}, {}, {} end
  if #ZO > 0 or next(S) then Z, ZO, S = {}, {}, {} end
  NOW = nil
  if #REL > 0 or #SQ > 0 then REL, SQ = {}, {} end
  if next(KEYED) then KEYED = {} end
end
`
