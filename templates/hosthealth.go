package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/workspace"
)

// Hosts health (one read per LB host, not per load balancer): a set may
// carry a module HostHealthDir beside its load balancer modules, a
// read-only root module that reads every host the set's load balancers
// use once (lbhost_host_health) and works out, for every load balancer
// tfccm hands it, what that load balancer's own health module would have
// output. tfccm refreshes it once per health interval for all the set's
// applied load balancers together and reports each one's entry exactly as
// it reports a health module's outputs.
//
// Precedence: a load balancer whose module comes from the same place as
// the hosts health module (both built in, or both from the override
// directory) is handed to it; an entry in its output replaces the load
// balancer's own health module (which is then not run); a load balancer
// it returns no entry for (a variant it does not read: the local set's
// routed one) is read by its own health module, as before.
const (
	HostHealthDir = "hosthealth"
	// HostHealthLBsVar is the module's input of the load balancers to
	// read, by load balancer id.
	HostHealthLBsVar = "load_balancers"
	// HostHealthOutput is its output: by load balancer id, an object with
	// the attributes a health module outputs (HealthOutput, HostsOutput,
	// VIPHoldersOutput, BGPSessionsOutput; null ones count as absent).
	HostHealthOutput = "load_balancers"
	// HostHealthWorkspace names the module's probe (its copy under the
	// work dir's probes).
	HostHealthWorkspace = "hosthealth"
)

// HostHealthLBType is one element of the load_balancers input: the load
// balancer's module key ("loadbalancer", "loadbalancer.<variant>") and
// its applied `service` input.
var HostHealthLBType = cty.Object(map[string]cty.Type{
	"module":  cty.String,
	"service": ServiceType,
})

// HostHealthLB is a load balancer handed to the hosts health module.
type HostHealthLB struct {
	ID     string // load_balancer_id
	Module string
	// Service is the load balancer's applied `service` input
	// (ReadAppliedInputs).
	Service cty.Value
}

// HostHealth returns the set's hosts health module, nil without one.
func (s *Set) HostHealth() *Module {
	m, ok := s.modules[HostHealthDir]
	if !ok || m.Kind != KindHostHealth {
		return nil
	}
	return m
}

// HostHealthReads reports whether the set's hosts health module is the
// one to read load balancer module key (both from the same place);
// false without one.
func (s *Set) HostHealthReads(key string) bool {
	h, lb := s.HostHealth(), s.modules[key]
	return h != nil && lb != nil && lb.Kind == KindLoadBalancer && path.Dir(h.Origin) == path.Dir(lb.Origin)
}

// HostHealthModule returns the key of svc's load balancer module when the
// set's hosts health module reads it (HostHealthReads).
func (s *Set) HostHealthModule(svc *corev1.Service) (string, bool) {
	m, err := s.loadBalancerModule(svc)
	if err != nil || !s.HostHealthReads(m.Key) {
		return "", false
	}
	return m.Key, true
}

// RenderHostHealth renders the hosts health module's probe over lbs with
// the cluster's load balancer settings (a Service's tfccm.io/vars do not
// reach it): the module's files and its inputs, no backend (a probe keeps
// no state).
func (s *Set) RenderHostHealth(cfg *config.Config, lbs []HostHealthLB) (*workspace.Spec, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	m := s.HostHealth()
	if m == nil {
		return nil, errors.New("render hosts health: the template set has no hosthealth module")
	}
	vals := map[string]cty.Value{}
	for _, lb := range lbs {
		if lb.ID == "" || lb.Service == cty.NilVal {
			return nil, fmt.Errorf("render hosts health: a load balancer without id or service")
		}
		vals[lb.ID] = cty.ObjectVal(map[string]cty.Value{"module": str(lb.Module), "service": lb.Service})
	}
	// An object, converted to the declared map type by render: each
	// load balancer's service has its own module's type.
	lbsVal := cty.EmptyObjectVal
	if len(vals) > 0 {
		lbsVal = cty.ObjectVal(vals)
	}
	settings, err := settingsVal(m, cfg.LoadBalancer.Settings, "load_balancer.settings", nil, nil)
	if err != nil {
		return nil, err
	}
	r, err := s.render(cfg, m, HostHealthWorkspace, map[string]cty.Value{
		"cluster_name":   str(cfg.ClusterName),
		HostHealthLBsVar: lbsVal,
		SettingsVar:      settings,
	})
	if err != nil {
		return nil, err
	}
	delete(r.Spec.Files, BackendFile)
	delete(r.Spec.Modes, BackendFile)
	r.Spec.Hash = r.Spec.ContentHash()
	return r.Spec, nil
}

// DecodeHostHealth reads the hosts health module's output: by load
// balancer id, that load balancer's outputs as a health module's (the
// Decode* functions read them).
func DecodeHostHealth(outputs map[string]json.RawMessage) (map[string]map[string]json.RawMessage, error) {
	raw, ok := outputs[HostHealthOutput]
	if !ok {
		return nil, fmt.Errorf("the hosts health module has no `%s` output", HostHealthOutput)
	}
	var lbs map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &lbs); err != nil {
		return nil, fmt.Errorf("output `%s` is not a map of load balancer id to an object of health outputs: %w", HostHealthOutput, err)
	}
	for id, outs := range lbs {
		for k, v := range outs {
			if string(v) == "null" {
				delete(outs, k)
			}
		}
		if _, ok := outs[HealthOutput]; !ok {
			return nil, fmt.Errorf("output `%s[%q]` has no `%s`", HostHealthOutput, id, HealthOutput)
		}
	}
	return lbs, nil
}

// ReadAppliedInputs reads a load balancer workspace's inputs file (its
// TfvarsFile as rendered) back: its load_balancer_id and its service
// input, what the hosts health module gets of it.
func ReadAppliedInputs(tfvars []byte) (id string, service cty.Value, err error) {
	f, diags := hclsyntax.ParseConfig(tfvars, TfvarsFile, hcl.InitialPos)
	if diags.HasErrors() {
		return "", cty.NilVal, fmt.Errorf("read %s: %s", TfvarsFile, diags.Error())
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		return "", cty.NilVal, fmt.Errorf("read %s: %s", TfvarsFile, diags.Error())
	}
	get := func(name string) (cty.Value, error) {
		a, ok := attrs[name]
		if !ok {
			return cty.NilVal, fmt.Errorf("read %s: no %s", TfvarsFile, name)
		}
		v, d := a.Expr.Value(nil)
		if d.HasErrors() {
			return cty.NilVal, fmt.Errorf("read %s: %s: %s", TfvarsFile, name, d.Error())
		}
		return v, nil
	}
	idVal, err := get("load_balancer_id")
	if err != nil {
		return "", cty.NilVal, err
	}
	if !idVal.Type().Equals(cty.String) || idVal.IsNull() {
		return "", cty.NilVal, fmt.Errorf("read %s: load_balancer_id is not a string", TfvarsFile)
	}
	if service, err = get("service"); err != nil {
		return "", cty.NilVal, err
	}
	return idVal.AsString(), service, nil
}
