-- Argo CD health check for Services served by tfccm (a resource
-- customization of the core kind Service: argocd-cm key
-- resource.customizations.health.Service). It reads tfccm's conditions:
--   tfccm.io/Accepted=False                          -> Degraded (the Service is refused)
--   tfccm.io/Programmed=False, AwaitingApproval,
--     ChangeWindowClosed or Applying                 -> Progressing, with tfccm's message
--     (the plan hash and summary, or when the next change window opens)
--   tfccm.io/Programmed=False, any other reason
--     (ApplyFailed, PolicyDenied, InvalidInput)      -> Degraded
--   tfccm.io/Programmed=True                         -> Healthy
-- Conditions written for an older generation of the Service: Progressing
-- (tfccm has not acted on the change yet).
-- Services of other types, or that tfccm has not written conditions on
-- (another load balancer class), keep Argo CD's built-in rule: a
-- LoadBalancer is Healthy once it has an ingress address.
local hs = {}

local generation = obj.metadata and obj.metadata.generation

local function condition(type)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function stale(c)
  return c ~= nil and generation ~= nil and c.observedGeneration ~= nil and c.observedGeneration < generation
end

local function ingress()
  local lb = obj.status and obj.status.loadBalancer
  return lb ~= nil and lb.ingress ~= nil and #lb.ingress > 0
end

if obj.spec == nil or obj.spec.type ~= "LoadBalancer" then
  hs.status = "Healthy"
  return hs
end

local accepted = condition("tfccm.io/Accepted")
local programmed = condition("tfccm.io/Programmed")
if stale(accepted) or stale(programmed) then
  hs.status = "Progressing"
  hs.message = "tfccm has not acted on generation " .. tostring(generation) .. " of the Service yet"
  return hs
end

if accepted ~= nil and accepted.status == "False" then
  hs.status = "Degraded"
  hs.message = accepted.message
  return hs
end

if programmed ~= nil then
  hs.message = programmed.message
  if programmed.status == "True" then
    hs.status = "Healthy"
  elseif programmed.reason == "AwaitingApproval" or programmed.reason == "ChangeWindowClosed" or programmed.reason == "Applying" then
    hs.status = "Progressing"
  else
    hs.status = "Degraded"
  end
  return hs
end

if ingress() then
  hs.status = "Healthy"
else
  hs.status = "Progressing"
  hs.message = "Waiting for the load balancer"
end
return hs
