package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

// Defaults applied by Load when a field is omitted.
const (
	DefaultWorkDir           = "/var/lib/tfccm"
	DefaultTemplateSet       = "local"
	DefaultParallelism       = 4
	DefaultOperationTimeout  = 10 * time.Minute
	DefaultDriftInterval     = time.Hour
	DefaultCoalesceQuiet     = 2 * time.Second
	DefaultCoalesceMax       = 10 * time.Second
	DefaultHealthCheckPort   = 10256
	DefaultHealthCheckPath   = "/healthz"
	DefaultStateTTL          = 30 * time.Second
	DefaultStateMaxStaleness = 10 * time.Minute
	DefaultStateRefreshRate  = 1.0 // refreshes per second per source
	DefaultStateRefreshBurst = 3
)

// Config is the decoded cloud config.
type Config struct {
	// ClusterName names the cluster in every workspace and resource name.
	ClusterName string `hcl:"cluster_name"`
	// WorkDir holds workspace directories and, with the local backend, state.
	WorkDir string `hcl:"work_dir,optional"`
	// TemplateSet is the built-in template set (local, aws, ...).
	TemplateSet string `hcl:"template_set,optional"`
	// OverrideDir is a directory of per-cluster template modules layered over
	// the built-in set, module by module.
	OverrideDir string `hcl:"override_dir,optional"`

	Terraform    *Terraform    `hcl:"terraform,block"`
	Backend      *Backend      `hcl:"backend,block"`
	LoadBalancer *LoadBalancer `hcl:"load_balancer,block"`
	Routes       *Routes       `hcl:"routes,block"`
	Instances    *Instances    `hcl:"instances,block"`

	// Filename is the file the config was read from.
	Filename string
}

// Terraform configures how tofu/terraform is run.
type Terraform struct {
	// Binary is the tofu or terraform executable (path or name on PATH).
	Binary string `hcl:"binary,optional"`
	// Parallelism bounds concurrent tofu runs across workspaces.
	Parallelism int `hcl:"parallelism,optional"`
	// Timeout bounds one init/plan/apply/destroy, as a Go duration.
	TimeoutRaw string `hcl:"timeout,optional"`
	// DriftInterval is how often every applied workspace is re-planned
	// (and re-applied if the infrastructure drifted), as a Go duration;
	// "0" turns it off.
	DriftIntervalRaw string `hcl:"drift_interval,optional"`
	// CoalesceQuietRaw and CoalesceMaxRaw gather a burst of updates to an
	// applied load balancer (node churn) into one apply: it starts once no
	// newer update came for coalesce_quiet, at the latest coalesce_max
	// after the first; "0s" quiet turns it off.
	CoalesceQuietRaw string `hcl:"coalesce_quiet,optional"`
	CoalesceMaxRaw   string `hcl:"coalesce_max,optional"`
	// CLIConfigFile is passed as TF_CLI_CONFIG_FILE (provider mirror, plugin cache).
	CLIConfigFile string `hcl:"cli_config_file,optional"`
	// PluginCacheDir is passed as TF_PLUGIN_CACHE_DIR.
	PluginCacheDir string `hcl:"plugin_cache_dir,optional"`
	// Env is extra environment for tofu (credentials). Values are secret:
	// they never appear in logs, Events or rendered files.
	Env map[string]string `hcl:"env,optional"`
	// PassEnv names process environment variables passed through to tofu.
	PassEnv []string `hcl:"pass_env,optional"`
	// Review turns on review mode: a plan with changes (a destroy
	// included) is published and applied only after its plan hash is
	// approved. Default false.
	Review bool `hcl:"review,optional"`

	Timeout       time.Duration
	DriftInterval time.Duration
	CoalesceQuiet time.Duration
	CoalesceMax   time.Duration
}

// Backend is the state backend for tfccm's workspaces. Its body is passed
// through to tofu; tfccm adds the per-workspace key.
type Backend struct {
	Type string   `hcl:"type,label"`
	Body hcl.Body `hcl:",remain"`

	// Attributes are the evaluated backend settings.
	Attributes map[string]cty.Value
	// Range is where the block was declared.
	Range hcl.Range
}

// HealthCheck is the default load balancer health check (used unless the
// Service has externalTrafficPolicy=Local).
type HealthCheck struct {
	Protocol string `hcl:"protocol,optional"`
	Port     int    `hcl:"port,optional"`
	Path     string `hcl:"path,optional"`
}

// LoadBalancer configures the LoadBalancer facet.
type LoadBalancer struct {
	Enabled     *bool        `hcl:"enabled,optional"`
	HealthCheck *HealthCheck `hcl:"health_check,block"`
	// Settings are cluster values passed to templates as `settings`,
	// merged with per-Service tfccm.io/vars.
	Settings cty.Value `hcl:"settings,optional"`
	// EnsureWaitRaw is how long EnsureLoadBalancer waits for its apply
	// before answering "retry later" (which the service controller reports
	// as a Warning Event), as a Go duration; "0s" never waits.
	EnsureWaitRaw string `hcl:"ensure_wait,optional"`
	EnsureWait    time.Duration
}

// DefaultEnsureWait is load_balancer.ensure_wait's default: long enough for
// most applies of self-hosted load balancers, short enough that a slow
// cloud apply frees the service worker soon.
const DefaultEnsureWait = 10 * time.Second

// Routes configures the Routes facet.
type Routes struct {
	Enabled  *bool     `hcl:"enabled,optional"`
	Settings cty.Value `hcl:"settings,optional"`
	// BatchWindowRaw is how long CreateRoute/DeleteRoute calls are gathered
	// into one apply, as a Go duration.
	BatchWindowRaw string `hcl:"batch_window,optional"`
	BatchWindow    time.Duration
}

// Instances configures the Instances and Zones facets.
type Instances struct {
	Enabled *bool `hcl:"enabled,optional"`
	// Mapping overrides the template set's instances.hcl.
	Mapping         string        `hcl:"mapping,optional"`
	Sources         []StateSource `hcl:"source,block"`
	TTLRaw          string        `hcl:"ttl,optional"`
	MaxStalenessRaw string        `hcl:"max_staleness,optional"`
	RefreshRate     float64       `hcl:"refresh_rate,optional"`
	RefreshBurst    int           `hcl:"refresh_burst,optional"`
	TTL             time.Duration
	MaxStaleness    time.Duration
}

// StateSource is one Terraform state to read instances from: a working
// directory (read through its configured backend) or a state file.
type StateSource struct {
	Name      string `hcl:"name,label"`
	Dir       string `hcl:"dir,optional"`
	StateFile string `hcl:"state_file,optional"`
}

// Enabled reports whether a facet's *bool switch is on (default on).
func Enabled(b *bool) bool { return b == nil || *b }

// Load reads and validates the config file at path.
func Load(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cloud config: %w", err)
	}
	return Parse(src, path)
}

// Parse decodes src (named filename in diagnostics), applies defaults and
// validates it. The error, if any, is a *DiagnosticsError listing every
// problem as file:line: summary; detail.
func Parse(src []byte, filename string) (*Config, error) {
	p := hclparse.NewParser()
	f, diags := p.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, &DiagnosticsError{Diags: diags}
	}
	var c Config
	if diags := gohcl.DecodeBody(f.Body, nil, &c); diags.HasErrors() {
		return nil, &DiagnosticsError{Diags: diags}
	}
	c.Filename = filename
	if diags := c.finish(f.Body); diags.HasErrors() {
		return nil, &DiagnosticsError{Diags: diags}
	}
	return &c, nil
}

// DiagnosticsError reports every error diagnostic, one per line, each
// starting with file:line,column.
type DiagnosticsError struct {
	Diags hcl.Diagnostics
}

func (e *DiagnosticsError) Error() string {
	var lines []string
	for _, d := range e.Diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		line := d.Summary
		if d.Detail != "" {
			line += "; " + d.Detail
		}
		if d.Subject != nil {
			line = d.Subject.String() + ": " + line
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the underlying diagnostics.
func (e *DiagnosticsError) Unwrap() error { return e.Diags }

func (c *Config) finish(body hcl.Body) hcl.Diagnostics {
	var diags hcl.Diagnostics
	content, _, _ := body.PartialContent(rootSchema)
	attrRange := func(name string) *hcl.Range {
		if a, ok := content.Attributes[name]; ok {
			return a.Expr.Range().Ptr()
		}
		r := body.MissingItemRange()
		return &r
	}
	errAt := func(r *hcl.Range, summary, detail string) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: r})
	}

	if !validName(c.ClusterName) {
		errAt(attrRange("cluster_name"), "Invalid cluster_name",
			"cluster_name must be 1-63 characters of lowercase letters, digits and '-', starting with a letter.")
	}
	if c.WorkDir == "" {
		c.WorkDir = DefaultWorkDir
	}
	if !filepath.IsAbs(c.WorkDir) {
		abs, err := filepath.Abs(c.WorkDir)
		if err != nil {
			errAt(attrRange("work_dir"), "Invalid work_dir", err.Error())
		}
		c.WorkDir = abs
	}
	if c.TemplateSet == "" {
		c.TemplateSet = DefaultTemplateSet
	}
	if c.Terraform == nil {
		c.Terraform = &Terraform{}
	}
	t := c.Terraform
	if t.Binary == "" {
		t.Binary = "tofu"
	}
	if t.Parallelism == 0 {
		t.Parallelism = DefaultParallelism
	}
	if t.Parallelism < 0 {
		errAt(blockAttrRange(content, "terraform", "parallelism"), "Invalid parallelism", "terraform.parallelism must be positive.")
	}
	t.Timeout = DefaultOperationTimeout
	if t.TimeoutRaw != "" {
		d, err := time.ParseDuration(t.TimeoutRaw)
		if err != nil || d <= 0 {
			errAt(blockAttrRange(content, "terraform", "timeout"), "Invalid timeout", fmt.Sprintf("terraform.timeout must be a positive Go duration such as \"10m\", got %q.", t.TimeoutRaw))
		}
		if d > 0 {
			t.Timeout = d
		}
	}
	t.DriftInterval = DefaultDriftInterval
	if t.DriftIntervalRaw != "" {
		d, err := time.ParseDuration(t.DriftIntervalRaw)
		if err != nil || d < 0 {
			errAt(blockAttrRange(content, "terraform", "drift_interval"), "Invalid drift_interval", fmt.Sprintf("terraform.drift_interval must be a Go duration such as \"1h\" (\"0\" turns drift repair off), got %q.", t.DriftIntervalRaw))
		} else {
			t.DriftInterval = d
		}
	}
	t.CoalesceQuiet, t.CoalesceMax = DefaultCoalesceQuiet, DefaultCoalesceMax
	for _, d := range []struct {
		raw, name string
		dst       *time.Duration
	}{{t.CoalesceQuietRaw, "coalesce_quiet", &t.CoalesceQuiet}, {t.CoalesceMaxRaw, "coalesce_max", &t.CoalesceMax}} {
		if d.raw == "" {
			continue
		}
		v, err := time.ParseDuration(d.raw)
		if err != nil || v < 0 || v > 10*time.Minute {
			errAt(blockAttrRange(content, "terraform", d.name), "Invalid "+d.name, fmt.Sprintf("terraform.%s must be a Go duration from \"0s\" to \"10m\", got %q.", d.name, d.raw))
			continue
		}
		*d.dst = v
	}
	if t.CoalesceQuiet > t.CoalesceMax && t.CoalesceMax > 0 {
		errAt(blockAttrRange(content, "terraform", "coalesce_max"), "Invalid coalesce_max", fmt.Sprintf("terraform.coalesce_max (%s) must not be shorter than coalesce_quiet (%s).", t.CoalesceMax, t.CoalesceQuiet))
	}
	for k := range t.Env {
		if strings.HasPrefix(k, "TF_VAR_") || k == "TF_LOG" || k == "TF_LOG_PATH" {
			errAt(blockAttrRange(content, "terraform", "env"), "Invalid env",
				fmt.Sprintf("terraform.env may not set %s: template inputs come from the rendered workspace and logging is managed by tfccm.", k))
		}
	}

	if c.Backend == nil {
		c.Backend = &Backend{Type: "local", Attributes: map[string]cty.Value{}}
	} else {
		diags = append(diags, c.Backend.decode()...)
		for _, b := range content.Blocks {
			if b.Type == "backend" {
				c.Backend.Range = b.DefRange
			}
		}
	}

	if c.LoadBalancer == nil {
		c.LoadBalancer = &LoadBalancer{}
	}
	lb := c.LoadBalancer
	if lb.HealthCheck == nil {
		lb.HealthCheck = &HealthCheck{}
	}
	hc := lb.HealthCheck
	if hc.Protocol == "" {
		hc.Protocol = "HTTP"
	}
	hc.Protocol = strings.ToUpper(hc.Protocol)
	if hc.Protocol != "HTTP" && hc.Protocol != "TCP" && hc.Protocol != "HTTPS" {
		errAt(blockAttrRange(content, "load_balancer", "health_check", "protocol"), "Invalid health_check protocol", fmt.Sprintf("load_balancer.health_check.protocol must be HTTP, HTTPS or TCP, got %q.", hc.Protocol))
	}
	if hc.Port == 0 {
		hc.Port = DefaultHealthCheckPort
	}
	if hc.Port < 1 || hc.Port > 65535 {
		errAt(blockAttrRange(content, "load_balancer", "health_check", "port"), "Invalid health_check port", fmt.Sprintf("load_balancer.health_check.port must be 1-65535, got %d.", hc.Port))
	}
	if hc.Path == "" && hc.Protocol != "TCP" {
		hc.Path = DefaultHealthCheckPath
	}
	diags = append(diags, checkSettings(lb.Settings, blockAttrRange(content, "load_balancer", "settings"), "load_balancer.settings")...)
	lb.Settings = normalizeSettings(lb.Settings)
	lb.EnsureWait = DefaultEnsureWait
	if lb.EnsureWaitRaw != "" {
		d, err := time.ParseDuration(lb.EnsureWaitRaw)
		if err != nil || d < 0 || d > 5*time.Minute {
			errAt(blockAttrRange(content, "load_balancer", "ensure_wait"), "Invalid ensure_wait", fmt.Sprintf("load_balancer.ensure_wait must be a Go duration from \"0s\" to \"5m\", got %q.", lb.EnsureWaitRaw))
		} else {
			lb.EnsureWait = d
		}
	}

	if c.Routes == nil {
		c.Routes = &Routes{}
	}
	diags = append(diags, checkSettings(c.Routes.Settings, blockAttrRange(content, "routes", "settings"), "routes.settings")...)
	c.Routes.Settings = normalizeSettings(c.Routes.Settings)
	c.Routes.BatchWindow = 2 * time.Second
	if c.Routes.BatchWindowRaw != "" {
		d, err := time.ParseDuration(c.Routes.BatchWindowRaw)
		if err != nil || d < 0 {
			errAt(blockAttrRange(content, "routes", "batch_window"), "Invalid batch_window", fmt.Sprintf("routes.batch_window must be a Go duration such as \"2s\", got %q.", c.Routes.BatchWindowRaw))
		} else {
			c.Routes.BatchWindow = d
		}
	}

	if c.Instances == nil {
		c.Instances = &Instances{}
	}
	in := c.Instances
	in.TTL, in.MaxStaleness = DefaultStateTTL, DefaultStateMaxStaleness
	for _, d := range []struct {
		raw, field string
		dst        *time.Duration
	}{{in.TTLRaw, "ttl", &in.TTL}, {in.MaxStalenessRaw, "max_staleness", &in.MaxStaleness}} {
		if d.raw == "" {
			continue
		}
		v, err := time.ParseDuration(d.raw)
		if err != nil || v <= 0 {
			errAt(blockAttrRange(content, "instances", d.field), "Invalid "+d.field, fmt.Sprintf("instances.%s must be a positive Go duration such as \"30s\", got %q.", d.field, d.raw))
			continue
		}
		*d.dst = v
	}
	if in.MaxStaleness < in.TTL {
		errAt(blockAttrRange(content, "instances", "max_staleness"), "Invalid max_staleness", "instances.max_staleness must not be shorter than instances.ttl.")
	}
	if in.RefreshRate == 0 {
		in.RefreshRate = DefaultStateRefreshRate
	}
	if in.RefreshBurst == 0 {
		in.RefreshBurst = DefaultStateRefreshBurst
	}
	if in.RefreshRate < 0 || in.RefreshBurst < 0 {
		errAt(blockAttrRange(content, "instances", "refresh_rate"), "Invalid refresh rate", "instances.refresh_rate and refresh_burst must be positive.")
	}
	seen := map[string]bool{}
	for _, s := range in.Sources {
		r := blockAttrRange(content, "instances", "source")
		if seen[s.Name] {
			errAt(r, "Duplicate state source", fmt.Sprintf("instances source %q is declared twice.", s.Name))
		}
		seen[s.Name] = true
		if (s.Dir == "") == (s.StateFile == "") {
			errAt(r, "Invalid state source", fmt.Sprintf("instances source %q must set exactly one of dir or state_file.", s.Name))
		}
	}
	return diags
}

var rootSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "cluster_name"}, {Name: "work_dir"}, {Name: "template_set"}, {Name: "override_dir"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "terraform"}, {Type: "backend", LabelNames: []string{"type"}},
		{Type: "load_balancer"}, {Type: "routes"}, {Type: "instances"},
	},
}

// blockAttrRange finds the range of the attribute or block at path (block
// types, then a final attribute or block name) under the top-level block of
// type block, for diagnostics. It falls back to the nearest enclosing block.
func blockAttrRange(content *hcl.BodyContent, block string, path ...string) *hcl.Range {
	for _, b := range content.Blocks {
		if b.Type == block {
			return rangeIn(b.Body, b.DefRange, path)
		}
	}
	return nil
}

func rangeIn(body hcl.Body, fallback hcl.Range, path []string) *hcl.Range {
	if len(path) == 0 {
		return fallback.Ptr()
	}
	name := path[0]
	schema := &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: name}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: name}},
	}
	content, _, diags := body.PartialContent(schema)
	if diags.HasErrors() {
		// A labelled block such as source "x" { ... }.
		schema.Blocks = []hcl.BlockHeaderSchema{{Type: name, LabelNames: []string{"name"}}}
		content, _, _ = body.PartialContent(schema)
	}
	if content == nil {
		return fallback.Ptr()
	}
	if a, ok := content.Attributes[name]; ok {
		return a.Expr.Range().Ptr()
	}
	for _, b := range content.Blocks {
		if len(path) == 1 {
			return b.DefRange.Ptr()
		}
		return rangeIn(b.Body, b.DefRange, path[1:])
	}
	return fallback.Ptr()
}

func (b *Backend) decode() hcl.Diagnostics {
	b.Attributes = map[string]cty.Value{}
	if !validBackendType(b.Type) {
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

// AttributeNames lists the backend's settings in a stable order.
func (b *Backend) AttributeNames() []string {
	names := make([]string, 0, len(b.Attributes))
	for n := range b.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func checkSettings(v cty.Value, r *hcl.Range, field string) hcl.Diagnostics {
	if v == cty.NilVal || v.IsNull() {
		return nil
	}
	t := v.Type()
	if !t.IsObjectType() && !t.IsMapType() {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid settings", Detail: field + " must be an object, such as { vip_pool = \"10.0.0.0/24\" }.", Subject: r}}
	}
	return nil
}

func normalizeSettings(v cty.Value) cty.Value {
	if v == cty.NilVal || v.IsNull() {
		return cty.EmptyObjectVal
	}
	return v
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

func validBackendType(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
