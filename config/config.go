package config

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/internal/tfenv"
)

// The cloud config's declaration (Config and its blocks), Load and Parse.
// The settings below are documented by their `doc` tags, which
// docs/configuration.md is generated from (reference.go); their defaults
// are declared in defaults.go, the rules of the duration settings in
// durations.go.

// Config is the decoded cloud config.
type Config struct {
	ClusterName string `hcl:"cluster_name" doc:"Names the cluster in every workspace and resource name: 1-63 characters of lowercase letters, digits and '-', starting with a letter."`
	// Namespace is the admin's side of the trust boundary (docs/security.md).
	Namespace   string `hcl:"namespace,optional" doc:"tfccm's own namespace, which only the cluster admin (and the approvers it names) may write: review mode's published plans, their sealed Secrets and key, and the records tfccm keeps about the cluster live here, never in a tenant's namespace. The Helm chart sets it to the release namespace."`
	WorkDir     string `hcl:"work_dir,optional" doc:"Holds the workspace directories and, with the local backend, their state. A relative path is made absolute."`
	TemplateSet string `hcl:"template_set,optional" doc:"The built-in template set (local, baremetal, hcloud, digitalocean, exoscale, google, oci, openstack, proxmox, vsphere)."`
	OverrideDir string `hcl:"override_dir,optional" doc:"A directory of per-cluster template modules layered over the built-in set, module by module; re-read when it changes."`
	// LoadBalancerClass and ServeClassless decide which LoadBalancer
	// Services tfccm serves (ServesClass); docs/load-balancer-class.md.
	LoadBalancerClass string `hcl:"load_balancer_class,optional" doc:"The spec.loadBalancerClass tfccm serves: Services of this class get their load balancer from tfccm's own controller loop (the service controller skips classed Services); Services of any other class are never touched. A qualified name, like a label key."`
	ServeClassless    *bool  `hcl:"serve_classless,optional" doc:"Also serves Services without a spec.loadBalancerClass, through the cloud-provider service controller (default true). false leaves them to another implementation: the service controller is then not started (it logs that the provider has no load balancers) and only Services of load_balancer_class are served."`

	// BaremetalValuesFile is the Helm chart's typed baremetal values
	// (baremetal.go); the admin's, like every setting here.
	BaremetalValuesFile string `hcl:"baremetal_values_file,optional" doc:"A JSON file of the baremetal set's typed values, as the Helm chart's baremetal value holds them (the chart writes it beside the cloud config and sets this; a relative path is the cloud config's directory's): the LB hosts, their login, vip_pool, VRRP and address pools, turned by tfccm into load_balancer.settings and address_pool blocks. Only with template_set = \"baremetal\" and without load_balancer.settings."`

	Terraform     *Terraform     `hcl:"terraform,block" doc:"How tofu (or terraform) is run."`
	Backend       *Backend       `hcl:"backend,block" doc:"The state backend of tfccm's workspaces; its body is passed through to tofu, with the per-workspace key added by tfccm. The kubernetes backend's namespace is the cluster admin's and holds nothing but state: never kube-system (the Helm chart's is <release>-state)."`
	LoadBalancer  *LoadBalancer  `hcl:"load_balancer,block" doc:"The LoadBalancer facet."`
	Routes        *Routes        `hcl:"routes,block" doc:"The Routes facet."`
	Instances     *Instances     `hcl:"instances,block" doc:"The Instances and Zones facets, answered from Terraform state."`
	Encryption    *Encryption    `hcl:"encryption,block" doc:"OpenTofu's state and plan encryption for every workspace and state source (docs/encryption.md)."`
	ChangeWindows *ChangeWindows `hcl:"change_windows,block" doc:"When plans may be applied: allow and deny windows and a freeze switch; outside them plans are made and published but not applied (docs/gitops.md#change-windows)."`
	Policies      []Policy       `hcl:"policy,block" doc:"A rule over every plan, in CEL, checked before each apply, in review mode's publication and in tfccm plan (docs/policy.md)."`
	Compat        *Compat        `hcl:"compat,block" doc:"Compatibility with other load balancer controllers' Service annotations, for migrations."`

	// Filename is the file the config was read from.
	Filename string
}

// Terraform configures how tofu/terraform is run.
type Terraform struct {
	Binary           string            `hcl:"binary,optional" doc:"The tofu or terraform executable: a path, or a name looked up on PATH."`
	Parallelism      int               `hcl:"parallelism,optional" doc:"Bounds concurrent tofu runs across workspaces."`
	TimeoutRaw       string            `hcl:"timeout,optional" doc:"Bounds one init, plan, apply or destroy."`
	DriftIntervalRaw string            `hcl:"drift_interval,optional" doc:"How often every applied workspace is re-planned, and re-applied if the infrastructure drifted; \"0\" turns it off."`
	CoalesceQuietRaw string            `hcl:"coalesce_quiet,optional" doc:"A burst of updates to an applied load balancer (node churn) becomes one apply, started once no newer update came for this long; \"0s\" turns it off."`
	CoalesceMaxRaw   string            `hcl:"coalesce_max,optional" doc:"The latest a coalesced apply starts after the burst's first update; not shorter than coalesce_quiet."`
	CLIConfigFile    string            `hcl:"cli_config_file,optional" doc:"Passed as TF_CLI_CONFIG_FILE (provider mirror, plugin cache)."`
	ProviderLockFile string            `hcl:"provider_lock_file,optional" doc:"Cluster admin: an OpenTofu dependency lock file with the checksums of the providers in the mirror, written by the build beside it (the image's is /usr/local/share/tfccm/providers.lock.hcl; make build writes bin/providers.lock.hcl). Every workspace's init starts from it, so a provider package that does not match is refused (Event TerraformProviderChecksumMismatch) instead of trusted on first use; the lock file is never deleted to get past a mismatch (docs/operations.md#provider-integrity)."`
	PluginCacheDir   string            `hcl:"plugin_cache_dir,optional" doc:"Passed as TF_PLUGIN_CACHE_DIR."`
	ProviderMTLS     bool              `hcl:"provider_mtls,optional" doc:"Keeps go-plugin's automatic mTLS between tofu and its providers. By default tfccm turns it off (TF_DISABLE_PLUGIN_TLS) and puts each command's provider sockets in a directory only the controller's user can enter (work_dir/.plugins), which guards them as the certificates did and saves two certificates per provider start (tofu starts each provider two or three times per command; docs/scale.md)."`
	Env              map[string]string `hcl:"env,optional" doc:"Cluster admin: credentials for tofu and its providers. A workspace gets a variable only when its template module declares the name (credentials.hcl; templates/CONTRACT.md): an undeclared one reaches no workspace. Values are secret: they never appear in logs, Events or rendered files. TF_VAR_*, TF_CLI_ARGS*, TF_LOG* and the variables tfccm manages are refused."`
	PassEnv          []string          `hcl:"pass_env,optional" doc:"Cluster admin: names of process environment variables passed through to tofu, like env's: each only to the workspaces whose template module declares it (credentials.hcl); their values are secret like env's."`
	Review           bool              `hcl:"review,optional" doc:"Review mode: a plan with changes (a destroy included) is published and applied only after its plan hash is approved (tfccm approve)."`
	Runner           string            `hcl:"runner,optional" doc:"Where tofu runs: \"process\" (in the CCM's pod) or \"job\" (each tofu command of a workspace in a Kubernetes Job from tfccm's image, on the cluster's nodes; needs a remote state backend; docs/scale.md#runner-jobs)."`
	Job              *Job              `hcl:"job,block" doc:"The job runner's Jobs (runner = \"job\")."`

	// Encryption is the cloud config's encryption block (Config.Encryption),
	// here for the environment of every tofu run (EnvSettings).
	Encryption *Encryption

	// The durations parsed from the *Raw settings (durations.go).
	Timeout       time.Duration
	DriftInterval time.Duration
	CoalesceQuiet time.Duration
	CoalesceMax   time.Duration
}

// Backend is the state backend for tfccm's workspaces. Its body is passed
// through to tofu; tfccm adds the per-workspace key.
type Backend struct {
	Type string   `hcl:"type,label" doc:"The backend type (local, kubernetes, s3, gcs, azurerm, pg, consul, http, ...)."`
	Body hcl.Body `hcl:",remain" doc:"The backend's settings, as in a terraform { backend } block. Secret-looking settings (access_key, password, token, ...) are passed with -backend-config, never written to a workspace."`

	// Attributes are the evaluated backend settings.
	Attributes map[string]cty.Value
	// Range is where the block was declared.
	Range hcl.Range
}

// HealthCheck is the default load balancer health check (used unless the
// Service has externalTrafficPolicy=Local).
type HealthCheck struct {
	Protocol string `hcl:"protocol,optional" doc:"HTTP, HTTPS or TCP (case-insensitive)."`
	Port     int    `hcl:"port,optional" doc:"The node port checked (kube-proxy's health port by default)."`
	Path     string `hcl:"path,optional" doc:"The HTTP(S) path checked; none for TCP."`
}

// LoadBalancer configures the LoadBalancer facet.
type LoadBalancer struct {
	Enabled     *bool        `hcl:"enabled,optional" doc:"Serves Services of type LoadBalancer (default true)."`
	HealthCheck *HealthCheck `hcl:"health_check,block" doc:"The load balancer's health check of the nodes, unless the Service has externalTrafficPolicy: Local (then its health check node port is used)."`
	Settings    cty.Value    `hcl:"settings,optional" doc:"An object of cluster values passed to templates as settings (the admin's): a Service's tfccm.io/vars replaces only the keys service_vars lists."`
	// ServiceVars is the admin's allow-list of the settings a Service (its
	// tenant) may set through tfccm.io/vars (docs/security.md).
	ServiceVars   []string      `hcl:"service_vars,optional" doc:"The settings keys a Service may set for itself through its tfccm.io/vars annotation (the admin's allow-list; a namespace tenant writes the annotation), e.g. [\"size\"]. Any other key in tfccm.io/vars is refused: the Service gets a Warning Event naming the key and this list, tfccm.io/Accepted=False, and its load balancer is left as last applied. Default none: tfccm.io/vars is refused whole. Allow only keys that shape the Service's own load balancer; never one that names a host, a path, a pool or an address (each template set's README says which of its settings are safe per Service)."`
	EnsureWaitRaw string        `hcl:"ensure_wait,optional" doc:"How long EnsureLoadBalancer waits for the apply in flight to end before answering \"retry later\", which the service controller records as a SyncLoadBalancerFailed Warning (every error it gets is one): the default outlasts any apply within terraform.timeout, so a slow but healthy apply raises no Warning. Each wait holds one service worker (--concurrent-service-syncs). \"0s\" never waits."`
	Adoptions     []Adopt       `hcl:"adopt,block" doc:"Existing load balancers the Services of a namespace may adopt with tfccm.io/adopt (one block per namespace, labelled with its name; docs/migrate-from-ccm.md). None: adoption is refused."`
	AddressPools  []AddressPool `hcl:"address_pool,block" doc:"A named pool of addresses tfccm allocates load balancer addresses from (one block per pool; docs/address-pools.md). With none, tfccm allocates nothing and the template does (the local and baremetal sets from settings.vip_pool)."`
	// EnsureWait is parsed from EnsureWaitRaw.
	EnsureWait        time.Duration
	HealthIntervalRaw string `hcl:"health_interval,optional" doc:"How often the backend health of every load balancer whose template set can read it (a health module, docs/templates.md) is read from the load balancer itself, for the Service's tfccm.io/Degraded condition and tfccm_load_balancer_backends_up: one read-only tofu refresh (apply -refresh-only into a state of its own: nothing is created, changed or destroyed) per template set whose hosts health module reads every LB host once for all its load balancers (local, baremetal), else per load balancer. \"0s\" turns it off."`
	// HealthInterval is parsed from HealthIntervalRaw.
	HealthInterval time.Duration
}

// AllowsServiceVar reports whether a Service may set settings key through
// tfccm.io/vars: whether the admin listed it in service_vars.
func (lb *LoadBalancer) AllowsServiceVar(key string) bool {
	for _, k := range lb.ServiceVars {
		if k == key {
			return true
		}
	}
	return false
}

// Routes configures the Routes facet.
type Routes struct {
	Enabled        *bool     `hcl:"enabled,optional" doc:"Serves the route controller from the cluster's routes workspace. Off unless the block sets enabled = true, settings or batch_window."`
	Settings       cty.Value `hcl:"settings,optional" doc:"An object of cluster values passed to the routes template as settings."`
	BatchWindowRaw string    `hcl:"batch_window,optional" doc:"How long CreateRoute/DeleteRoute calls are gathered into one apply."`
	// BatchWindow is parsed from BatchWindowRaw.
	BatchWindow time.Duration
}

// Instances configures the Instances and Zones facets.
type Instances struct {
	Enabled         *bool         `hcl:"enabled,optional" doc:"Serves node lookups (Instances, Zones) from Terraform state when at least one source is declared; false turns it off."`
	Mapping         string        `hcl:"mapping,optional" doc:"An instances.hcl file overriding the template set's mapping of state resources to instances."`
	Sources         []StateSource `hcl:"source,block" doc:"A Terraform state to read instances from (one or more)."`
	TTLRaw          string        `hcl:"ttl,optional" doc:"How long a read of the state is served before it is refreshed."`
	MaxStalenessRaw string        `hcl:"max_staleness,optional" doc:"How old a state may get (refreshes failing) before lookups fail; not shorter than ttl."`
	RefreshRate     float64       `hcl:"refresh_rate,optional" doc:"Refreshes per second per source (token bucket)."`
	RefreshBurst    int           `hcl:"refresh_burst,optional" doc:"The token bucket's burst."`
	// The durations parsed from the *Raw settings.
	TTL          time.Duration
	MaxStaleness time.Duration
}

// StateSource is one Terraform state to read instances from: a working
// directory (read through the backend it declares) or a state file; either
// is read as raw state, without provider plugins.
type StateSource struct {
	Name       string `hcl:"name,label" doc:"Names the source in logs and errors."`
	Dir        string `hcl:"dir,optional" doc:"A Terraform working directory, never written to: the backend block of its *.tf files (literal settings; none means its local terraform.tfstate) is copied into a scratch directory, initialized without providers and read with tofu state pull; no provider plugin is needed."`
	StateFile  string `hcl:"state_file,optional" doc:"A state file, read directly (through tofu state pull only to decrypt it). Exactly one of dir and state_file."`
	AllowEmpty bool   `hcl:"allow_empty,optional" doc:"Installs a read that finds no instance after one that found some (the infrastructure really was destroyed); lookups then fail (an empty state never reports a node gone). By default such a read (an emptied or missing remote state) fails like an unreadable backend: the last good state keeps serving up to max_staleness."`
}

// Enabled reports whether a facet's *bool switch is on (default on).
func Enabled(b *bool) bool { return b == nil || *b }

// RoutesEnabled reports whether the Routes facet is on: only when the
// routes block sets enabled = true, batch_window or non-empty settings.
func (c *Config) RoutesEnabled() bool {
	r := c.Routes
	if r == nil || !Enabled(r.Enabled) {
		return false
	}
	if r.Enabled != nil || r.BatchWindowRaw != "" {
		return true
	}
	s := r.Settings
	return s != cty.NilVal && !s.IsNull() && s.IsKnown() && s.CanIterateElements() && s.LengthInt() > 0
}

// ServesClass reports whether tfccm serves a LoadBalancer Service whose
// spec.loadBalancerClass is class (nil: none): the one rule the CCM and
// the offline CLI share.
func (c *Config) ServesClass(class *string) bool {
	if class == nil {
		return Enabled(c.ServeClassless)
	}
	return *class == c.LoadBalancerClass
}

// Load reads and validates the config file at path.
func Load(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cloud config: %w", err)
	}
	return Parse(src, path)
}

// Parse decodes src (named filename in diagnostics), applies defaults and
// validates it; the files it names by a relative path (baremetal_values_file)
// are read from filename's directory. The error, if any, is a
// *DiagnosticsError listing every problem as file:line: summary; detail.
func Parse(src []byte, filename string) (*Config, error) {
	return parse(src, filename, func(name string) ([]byte, error) {
		if !filepath.IsAbs(name) {
			name = filepath.Join(filepath.Dir(filename), name)
		}
		return os.ReadFile(name)
	})
}

// ParseFS is Parse of the file name in fsys, reading the files it names
// (baremetal_values_file) from fsys too.
func ParseFS(fsys fs.FS, name string) (*Config, error) {
	src, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("read cloud config: %w", err)
	}
	return parse(src, name, func(n string) ([]byte, error) { return fs.ReadFile(fsys, path.Join(path.Dir(name), n)) })
}

func parse(src []byte, filename string, read func(string) ([]byte, error)) (*Config, error) {
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
	if diags := c.applyBaremetalValues(f.Body, read); diags.HasErrors() {
		return nil, &DiagnosticsError{Diags: diags}
	}
	if diags := c.finish(f.Body); diags.HasErrors() {
		return nil, &DiagnosticsError{Diags: diags}
	}
	if diags := c.finishEncryption(src); diags.HasErrors() {
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

// Identity names this controller deployment in the claim file written
// before each tofu run and in lock checks: "tfccm/<cluster_name>".
func (c *Config) Identity() string { return "tfccm/" + c.ClusterName }

// EnvSettings are the terraform settings that shape tofu's environment
// (tfenv.Build), with home as HOME when the process has none.
func (t *Terraform) EnvSettings(home string) tfenv.Settings {
	s := tfenv.Settings{Env: t.Env, PassEnv: t.PassEnv, CLIConfigFile: t.CLIConfigFile, PluginCacheDir: t.PluginCacheDir, Home: home}
	if e := t.Encryption; e != nil {
		s.Encryption, s.EncryptionSecrets = e.Source, e.Secrets
	}
	return s
}
