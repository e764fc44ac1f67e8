-- Argo CD health check for Services served by tfccm (a resource
-- customization of the core kind Service: argocd-cm key
-- resource.customizations.health.Service). It reads the conditions tfccm
-- writes on a LoadBalancer Service (docs/gitops.md):
--   tfccm.io/Accepted=False                          -> Degraded (the Service is refused)
--   tfccm.io/Programmed=False, AwaitingApproval,
--     ChangeWindowClosed, Applying or PlanStale      -> Progressing, with tfccm's message
--     (the plan hash and summary, when the next change window opens, what
--     is being applied; a stale plan is planned again for approval)
--   tfccm.io/Programmed=False, any other reason
--     (ApplyFailed, PolicyDenied, InvalidInput)      -> Degraded
--   tfccm.io/Programmed=True (Applied, DriftRepaired) -> Healthy once the
--     Service has its ingress address (the service controller publishes it
--     just after tfccm's apply ends: Progressing until then)
-- An edit of the Service is Programmed=False Applying from the moment
-- tfccm takes it up until its apply ends. Services have no
-- metadata.generation and the conditions no observedGeneration, so the
-- moment between the edit and tfccm taking it up (the service
-- controller's next sync, normally well under a second) shows the
-- previous health.
-- Services of other types, or that tfccm has not written conditions on
-- (another load balancer class), keep Argo CD's built-in rule: a
-- LoadBalancer is Healthy once it has an ingress address.
local hs = {}

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

local function ingress()
  local lb = obj.status and obj.status.loadBalancer
  return lb ~= nil and lb.ingress ~= nil and #lb.ingress > 0
end

local progressing = { AwaitingApproval = true, ChangeWindowClosed = true, Applying = true, PlanStale = true }

if obj.spec == nil or obj.spec.type ~= "LoadBalancer" then
  hs.status = "Healthy"
  return hs
end

local accepted = condition("tfccm.io/Accepted")
local programmed = condition("tfccm.io/Programmed")

if accepted ~= nil and accepted.status == "False" then
  hs.status = "Degraded"
  hs.message = accepted.message
  return hs
end

if programmed ~= nil then
  hs.message = programmed.message
  if programmed.status == "True" and ingress() then
    hs.status = "Healthy"
  elseif programmed.status == "True" then
    hs.status = "Progressing"
    hs.message = "applied; waiting for the address to be published"
  elseif progressing[programmed.reason] then
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
