-- Argo CD health check for Federator's kinds (federator.io ReplicationTask, ServiceBusMirror,
-- FailoverGroup, ReplicationApplication). Argo CD runs it with the live object in `obj` and expects a table {status, message}.
-- It follows kstatus: a stale status.observedGeneration means "not reconciled yet"; Stalled=True is a
-- failure that needs a human; Reconciling=True or Ready!=True is work in progress; Ready=True is healthy.
-- Install: docs/health-checks/README.md. Tested by tests/health/test_argocd_health.py.
local hs = { status = "Progressing", message = "Waiting for the operator to report status" }

local function condition(conditions, wanted)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == wanted then
      return c
    end
  end
  return nil
end

local function describe(c, fallback)
  if c == nil then
    return fallback
  end
  local text = c.reason or fallback
  if c.message ~= nil and c.message ~= "" then
    text = text .. ": " .. c.message
  end
  return text
end

local generation = obj.metadata and obj.metadata.generation
local status = obj.status
if status == nil then
  return hs
end

if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end

local conditions = status.conditions
local stalled = condition(conditions, "Stalled")
local reconciling = condition(conditions, "Reconciling")
local ready = condition(conditions, "Ready")

-- A condition written for an older generation does not describe the current spec.
local function current(c)
  return c ~= nil and (generation == nil or c.observedGeneration == nil or c.observedGeneration >= generation)
end

if current(stalled) and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled, "Stalled")
  return hs
end
if current(reconciling) and reconciling.status == "True" then
  hs.message = describe(reconciling, "Reconciling")
  return hs
end
if not current(ready) then
  if ready ~= nil then
    hs.message = "Waiting for the Ready condition of generation " .. tostring(generation)
  end
  return hs
end
if ready.status ~= "True" then
  hs.message = describe(ready, "Not ready")
  return hs
end

-- FailoverGroup: failing back is a transition in progress; failed over is a healthy, noteworthy state.
if obj.kind == "FailoverGroup" and status.phase == "FailingBack" then
  hs.message = "Failing back: " .. describe(ready, "Ready")
  return hs
end
hs.status = "Healthy"
hs.message = describe(ready, "Ready")
if obj.kind == "FailoverGroup" and status.phase == "FailedOver" then
  hs.message = "Failed over: " .. hs.message
end
return hs
