package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tfccm/tfccm/internal/tfenv"
)

// The second half of Parse, after gohcl: every block's defaults filled in
// and every check gohcl cannot make, one finish step per block, each
// problem reported at the range of its setting.

// checker gathers the diagnostics of one Parse, each at the range of the
// setting it is about.
type checker struct {
	body    hcl.Body
	content *hcl.BodyContent
	diags   hcl.Diagnostics
}

// errAt records an error at the setting path names: a top-level attribute,
// or a block type followed by attribute or nested block names.
func (k *checker) errAt(path []string, summary, detail string) {
	k.diags = append(k.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: k.rangeOf(path)})
}

func (k *checker) rangeOf(path []string) *hcl.Range {
	if len(path) == 1 {
		if a, ok := k.content.Attributes[path[0]]; ok {
			return a.Expr.Range().Ptr()
		}
		r := k.body.MissingItemRange()
		return &r
	}
	return blockAttrRange(k.content, path[0], path[1:]...)
}

// at is a setting's path, for errAt.
func at(path ...string) []string { return path }

// finish fills in defaults and checks what gohcl cannot, one block at a
// time; it reports every problem, not just the first.
func (c *Config) finish(body hcl.Body) hcl.Diagnostics {
	content, _, _ := body.PartialContent(rootSchema)
	k := &checker{body: body, content: content}
	c.fillBlocks()
	c.finishRoot(k)
	c.Terraform.finish(k, c)
	c.finishBackend(k)
	c.finishRunner(k)
	c.finishNamespaces(k)
	c.LoadBalancer.finish(k, c)
	c.Routes.finish(k, c)
	c.Instances.finish(k, c)
	c.finishPolicies(k)
	c.finishWindows(k)
	c.Compat.finish(k)
	return k.diags
}

// fillBlocks gives every omitted block its empty value, so that defaults
// can be applied to it.
func (c *Config) fillBlocks() {
	if c.Terraform == nil {
		c.Terraform = &Terraform{}
	}
	if c.LoadBalancer == nil {
		c.LoadBalancer = &LoadBalancer{}
	}
	if c.LoadBalancer.HealthCheck == nil {
		c.LoadBalancer.HealthCheck = &HealthCheck{}
	}
	if c.Routes == nil {
		c.Routes = &Routes{}
	}
	if c.Instances == nil {
		c.Instances = &Instances{}
	}
	if c.Compat == nil {
		c.Compat = &Compat{}
	}
}

func (c *Config) finishRoot(k *checker) {
	if !validName(c.ClusterName) {
		k.errAt(at("cluster_name"), "Invalid cluster_name",
			"cluster_name must be 1-63 characters of lowercase letters, digits and '-', starting with a letter.")
	}
	c.Namespace = orDefault(c.Namespace, DefaultNamespace)
	if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		k.errAt(at("namespace"), "Invalid namespace", fmt.Sprintf("namespace %q: %s.", c.Namespace, strings.Join(errs, "; ")))
	}
	c.WorkDir = orDefault(c.WorkDir, DefaultWorkDir)
	if !filepath.IsAbs(c.WorkDir) {
		abs, err := filepath.Abs(c.WorkDir)
		if err != nil {
			k.errAt(at("work_dir"), "Invalid work_dir", err.Error())
		}
		c.WorkDir = abs
	}
	c.TemplateSet = orDefault(c.TemplateSet, DefaultTemplateSet)
	c.LoadBalancerClass = orDefault(c.LoadBalancerClass, DefaultLoadBalancerClass)
	if errs := validation.IsQualifiedName(c.LoadBalancerClass); len(errs) > 0 {
		k.errAt(at("load_balancer_class"), "Invalid load_balancer_class",
			fmt.Sprintf("load_balancer_class must be a qualified name like a label key (what spec.loadBalancerClass accepts), e.g. %q: %s.", DefaultLoadBalancerClass, strings.Join(errs, "; ")))
	}
}

// parseDurations parses every duration setting of block, then checks the
// ones that must not be shorter than another (durations.go).
func (c *Config) parseDurations(k *checker, block string) {
	for _, d := range durations {
		if d.block != block {
			continue
		}
		raw := d.raw(c)
		v, ok := d.parse(raw)
		if !ok {
			k.errAt(at(d.block, d.name), "Invalid "+d.name, d.invalid(raw))
		}
		*d.dst(c) = v
	}
	for _, d := range durations {
		if d.block != block || d.atLeast == "" {
			continue
		}
		least, _ := durationSetting(block, d.atLeast)
		if v, lv := *d.dst(c), *least.dst(c); v > 0 && v < lv {
			k.errAt(at(d.block, d.name), "Invalid "+d.name, d.short(v, lv))
		}
	}
}

func (t *Terraform) finish(k *checker, c *Config) {
	t.Binary = orDefault(t.Binary, DefaultBinary)
	if t.Parallelism == 0 {
		t.Parallelism = DefaultParallelism
	}
	if t.Parallelism < 0 {
		k.errAt(at("terraform", "parallelism"), "Invalid parallelism", "terraform.parallelism must be positive.")
	}
	c.parseDurations(k, "terraform")
	for name := range t.Env {
		if err := tfenv.CheckName(name); err != nil {
			k.errAt(at("terraform", "env"), "Invalid env", fmt.Sprintf("terraform.env: %v.", err))
		}
	}
	for _, name := range t.PassEnv {
		if err := tfenv.CheckName(name); err != nil {
			k.errAt(at("terraform", "pass_env"), "Invalid pass_env", fmt.Sprintf("terraform.pass_env: %v.", err))
		}
	}
}

func (c *Config) finishBackend(k *checker) {
	if c.Backend == nil {
		c.Backend = &Backend{Type: DefaultBackendType, Attributes: map[string]cty.Value{}}
		return
	}
	k.diags = append(k.diags, c.Backend.decode()...)
	for _, b := range k.content.Blocks {
		if b.Type == "backend" {
			c.Backend.Range = b.DefRange
		}
	}
}

func (b *Backend) decode() hcl.Diagnostics {
	b.Attributes = map[string]cty.Value{}
	if !tfenv.ValidBackendType(b.Type) {
		r := b.Body.MissingItemRange()
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid backend type", Detail: fmt.Sprintf("backend type %q is not a valid Terraform backend name.", b.Type), Subject: &r}}
	}
	attrs, diags := b.Body.JustAttributes()
	if diags.HasErrors() {
		return diags
	}
	for name, a := range attrs {
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			b.Attributes[name] = v
		}
	}
	return diags
}

func (lb *LoadBalancer) finish(k *checker, c *Config) {
	hc := lb.HealthCheck
	hc.Protocol = strings.ToUpper(orDefault(hc.Protocol, DefaultHealthCheckProtocol))
	if hc.Protocol != "HTTP" && hc.Protocol != "TCP" && hc.Protocol != "HTTPS" {
		k.errAt(at("load_balancer", "health_check", "protocol"), "Invalid health_check protocol", fmt.Sprintf("load_balancer.health_check.protocol must be HTTP, HTTPS or TCP, got %q.", hc.Protocol))
	}
	if hc.Port == 0 {
		hc.Port = DefaultHealthCheckPort
	}
	if hc.Port < 1 || hc.Port > 65535 {
		k.errAt(at("load_balancer", "health_check", "port"), "Invalid health_check port", fmt.Sprintf("load_balancer.health_check.port must be 1-65535, got %d.", hc.Port))
	}
	if hc.Path == "" && hc.Protocol != "TCP" {
		hc.Path = DefaultHealthCheckPath
	}
	lb.Settings = settings(k, lb.Settings, "load_balancer")
	lb.finishServiceVars(k)
	lb.finishAdoptions(k)
	lb.finishPools(k)
	c.parseDurations(k, "load_balancer")
}

// finishServiceVars checks the allow-list of tfccm.io/vars keys: each a
// settings key (an HCL identifier), none twice.
func (lb *LoadBalancer) finishServiceVars(k *checker) {
	seen := map[string]bool{}
	for _, key := range lb.ServiceVars {
		switch {
		case !hclsyntax.ValidIdentifier(key):
			k.errAt(at("load_balancer", "service_vars"), "Invalid service_vars",
				fmt.Sprintf("load_balancer.service_vars: %q is not a settings key (letters, digits, '_' and '-', starting with a letter).", key))
		case seen[key]:
			k.errAt(at("load_balancer", "service_vars"), "Invalid service_vars",
				fmt.Sprintf("load_balancer.service_vars: %q is listed twice.", key))
		}
		seen[key] = true
	}
}

func (r *Routes) finish(k *checker, c *Config) {
	r.Settings = settings(k, r.Settings, "routes")
	c.parseDurations(k, "routes")
}

func (in *Instances) finish(k *checker, c *Config) {
	c.parseDurations(k, "instances")
	if in.RefreshRate == 0 {
		in.RefreshRate = DefaultStateRefreshRate
	}
	if in.RefreshBurst == 0 {
		in.RefreshBurst = DefaultStateRefreshBurst
	}
	if in.RefreshRate < 0 || in.RefreshBurst < 0 {
		k.errAt(at("instances", "refresh_rate"), "Invalid refresh rate", "instances.refresh_rate and refresh_burst must be positive.")
	}
	seen := map[string]bool{}
	for _, s := range in.Sources {
		if seen[s.Name] {
			k.errAt(at("instances", "source"), "Duplicate state source", fmt.Sprintf("instances source %q is declared twice.", s.Name))
		}
		seen[s.Name] = true
		if (s.Dir == "") == (s.StateFile == "") {
			k.errAt(at("instances", "source"), "Invalid state source", fmt.Sprintf("instances source %q must set exactly one of dir or state_file.", s.Name))
		}
	}
}

// settings checks a block's settings (an object, or omitted) and returns
// them with omitted as the empty object.
func settings(k *checker, v cty.Value, block string) cty.Value {
	if v == cty.NilVal || v.IsNull() {
		return cty.EmptyObjectVal
	}
	if t := v.Type(); !t.IsObjectType() && !t.IsMapType() {
		k.errAt(at(block, "settings"), "Invalid settings", block+".settings must be an object, such as { vip_pool = \"10.0.0.0/24\" }.")
	}
	return v
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
