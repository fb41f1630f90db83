package redisq

// luaDeleteJob deletes one job with everything it owns (see deleteone).
// A running job is deleted only when force is '1': its lease goes with it,
// so its worker's next fenced call finds no job and fails with a lost
// lease. ARGV: now, channel, id, force. Returns {'ok', state},
// {'notfound'} or {'state', 'running'}.
const luaDeleteJob = `
local k = keys(1)
local id = ARGV[3]
local del = {}
local e, w, st = deleteone(k, id, ARGV[4] == '1', del)
if e then return refused(e) end
bulk('HDEL', k.job, del)
if w then wake() end
return {'ok', st}
`

// luaDeleteQueue runs one step of deleting a queue: it deletes up to limit
// of its jobs in any state (running ones with their leases, as
// luaDeleteJob with force does), in the order of the task index. When no
// job is left it deletes the queue's config (and so its paused flag), its
// run statistics and its job counts but those of prepared batch parts,
// which stay with the parts. Prepared parts and batch decisions are left
// alone: a batch a client is committing stays whole, and its jobs are
// deleted by a later step. ARGV: now, channel, limit. Returns {'ok', done,
// id...} with done 1 when no job is left and the ids it deleted.
const luaDeleteQueue = `
local k = keys(1)
local limit = tonumber(ARGV[3])
local ms = redis.call('ZRANGEBYLEX', k.idx, '[k|', '(k}', 'LIMIT', '0', limit + 1)
local n = math.min(#ms, limit)
local ids = {}
for i = 1, n do ids[i] = string.match(ms[i], '[^|]*$') end
fetch(k, ids)
local out = {'ok', 0}
local del = {}
for i = 1, n do
  local id = ids[i]
  local r = J[id]
  if r then
    purge(k, id, r, del)
    out[#out + 1] = id
  else
    zrem(k.idx, ms[i])
  end
end
if #del > 0 then bulk('HDEL', k.job, del) end
if #ms <= limit then
  flush(k)
  redis.call('DEL', k.conf, k.rstat)
  local c = redis.call('HGETALL', k.cnt)
  local drop = {}
  for i = 1, #c, 2 do
    if c[i + 1] == '0' or string.sub(c[i], -8) ~= '|pending' then drop[#drop + 1] = c[i] end
  end
  if #drop > 0 then bulk('HDEL', k.cnt, drop) end
  out[2] = 1
end
return out
`

// luaFlowConfig stores a task's flow limits where the claim script reads
// them ("" drops them) and lets every job the gates hold back for the task
// back into its queue's ready set: the next claim holds back again those
// the new limits still hold. ARGV: now, channel, task, limits. Returns
// {'ok', n} with the number of jobs let back.
const luaFlowConfig = `
local k = keys(1)
local task, cfg = ARGV[3], ARGV[4]
if cfg == '' then redis.call('HDEL', k.tflow, task) else redis.call('HSET', k.tflow, task, cfg) end
local n = 0
for _, rg in ipairs({{'[t|' .. task .. '#', '(t|' .. task .. '$'}, {'[k|' .. task .. '|', '(k|' .. task .. '}'},
    {'[r|' .. task .. '#', '(r|' .. task .. '$'}, {'[rk|' .. task .. '|', '(rk|' .. task .. '}'}}) do
  local ms = redis.call('ZRANGEBYLEX', k.gate, rg[1], rg[2])
  local ch = {}
  for _, m in ipairs(ms) do
    local a = string.find(m, '#', 1, true)
    local b = string.find(m, '#', a + 1, true)
    local c = string.find(m, '#', b + 1, true)
    redis.call('ZADD', string.sub(m, a + 1, b - 1), '0', string.sub(m, b + 1, c - 1))
    ch[string.sub(m, c + 1)] = true
  end
  if #ms > 0 then bulk('ZREM', k.gate, ms) end
  for c, _ in pairs(ch) do
    if c ~= '' then redis.call('PUBLISH', c, '1') end
  end
  n = n + #ms
end
return {'ok', n}
`

// luaRunningByKey returns the running jobs of a task per limit key: the
// key counts when the task's are kept (see KEYED in the library), else
// counted from the records of the running jobs (see keycounts). ARGV:
// now, channel, task. Returns {'ok', key, count, ...}.
const luaRunningByKey = `
local k = keys(1)
local task = ARGV[3]
local out = {'ok'}
if keyed(k.flow, task) then
  local pre = kpre(task) .. '|'
  local cur = '0'
  repeat
    local sc = redis.call('HSCAN', k.flow, cur, 'MATCH', pre .. '*', 'COUNT', '1000')
    cur = sc[1]
    for i = 1, #sc[2], 2 do
      out[#out + 1] = string.sub(sc[2][i], #pre + 1)
      out[#out + 1] = tonumber(sc[2][i + 1])
    end
  until cur == '0'
else
  for lk, n in pairs(keycounts(k, task)) do
    out[#out + 1] = lk
    out[#out + 1] = n
  end
end
return out
`
