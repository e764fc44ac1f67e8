package chartvalues

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/version"
)

// Load and the cloud config it writes, as the chart's tfccm.cloudConfig
// template writes it: every value from the values file is an HCL string
// written by hclwrite (never spliced), but cloudConfig.terraform and
// cloudConfig.inline, which are the admin's HCL.

// The release Load assumes, the one the docs install: helm install tfccm
// -n kube-system.
const (
	ReleaseName      = "tfccm"
	ReleaseNamespace = "kube-system"
)

// The files the chart's ConfigMap holds and the image's paths it names
// (deploy/image; TestChartValuesMatchChart keeps them equal).
const (
	cloudConfigFile   = "cloud.hcl"
	baremetalFile     = "baremetal.json"
	workDir           = "/var/lib/tfccm"
	cliConfigFile     = "/etc/tfccm/tofurc"
	providerLockFile  = "/usr/local/share/tfccm/providers.lock.hcl"
	overrideDir       = "/etc/tfccm/templates"
	sshKeyDir         = "/etc/tfccm/ssh"
	bgpPasswordDir    = "/etc/tfccm/bgp"
	stateNamespaceFmt = "%s-state"
	runnerNSFmt       = "%s-runners"
)

// Load returns the cloud config the chart gives the CCM for valuesYAML
// (a values file over the chart's defaults, release tfccm in
// kube-system). Bad values are an error naming the key.
func Load(valuesYAML []byte) (*config.Config, error) {
	files, err := Files(valuesYAML)
	if err != nil {
		return nil, err
	}
	fsys := fstest.MapFS{}
	for name, b := range files {
		fsys[name] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	cfg, err := config.ParseFS(fsys, cloudConfigFile)
	if err != nil {
		return nil, fmt.Errorf("the cloud config of these values: %w", err)
	}
	return cfg, nil
}

// Files are the cloud config files the chart's ConfigMap holds for
// valuesYAML: cloud.hcl and, with baremetal.hosts, baremetal.json.
func Files(valuesYAML []byte) (map[string][]byte, error) {
	v, err := parse(valuesYAML)
	if err != nil {
		return nil, err
	}
	if err := v.check(); err != nil {
		return nil, err
	}
	files := map[string][]byte{cloudConfigFile: v.cloudHCL()}
	if v.hasBaremetal() {
		b, err := v.baremetalJSON()
		if err != nil {
			return nil, err
		}
		files[baremetalFile] = b
	}
	return files, nil
}

// check is the chart's validation of the values read here (tfccm.validate).
func (v *values) check() error {
	c := v.CloudConfig
	var errs []error
	if c.ExistingConfigMap != "" {
		errs = append(errs, errors.New("cloudConfig.existingConfigMap: the cloud config is in that ConfigMap, not in the values; use it (--config) instead"))
	}
	if c.TemplateSet == "" {
		errs = append(errs, errors.New("cloudConfig.templateSet is required (e.g. baremetal)"))
	}
	if c.ClusterName == "" {
		errs = append(errs, errors.New("cloudConfig.clusterName is required: 1-63 of a-z, 0-9 and -, starting with a letter"))
	}
	if v.hasBaremetal() {
		if c.TemplateSet != "baremetal" {
			errs = append(errs, fmt.Errorf("baremetal.hosts is set but cloudConfig.templateSet is %q: the typed baremetal values are the baremetal set's", c.TemplateSet))
		}
		if v.SSHKey.ExistingSecret == "" {
			errs = append(errs, errors.New("sshKey.existingSecret is required with baremetal.hosts: the Secret holding tfccm's SSH private key for the LB hosts"))
		}
	}
	return errors.Join(errs...)
}

// q is s as an HCL string literal ("${" and "%{" escaped).
func q(s string) string { return string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes()) }

func (v *values) fullname() string { return ReleaseName }

func (v *values) stateNamespace() string {
	if ns := v.StateBackend.Kubernetes.Namespace; ns != "" {
		return ns
	}
	return fmt.Sprintf(stateNamespaceFmt, v.fullname())
}

func (v *values) runnerNamespace() string {
	if ns := v.Runner.Namespace; ns != "" {
		return ns
	}
	return fmt.Sprintf(runnerNSFmt, v.fullname())
}

// image is the chart's tfccm.image; the chart's appVersion is this
// build's version.
func (v *values) image() string {
	if v.Image.Digest != "" {
		return v.Image.Repository + "@" + v.Image.Digest
	}
	tag := v.Image.Tag
	if tag == "" {
		tag = version.Version()
	}
	return v.Image.Repository + ":" + tag
}

// cloudHCL is the chart's cloud.hcl for v.
func (v *values) cloudHCL() []byte {
	c := v.CloudConfig
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("cluster_name = %s", q(c.ClusterName))
	line("namespace = %s", q(ReleaseNamespace))
	line("template_set = %s", q(c.TemplateSet))
	line("work_dir = %s", q(workDir))
	if c.LoadBalancerClass != "" {
		line("load_balancer_class = %s", q(c.LoadBalancerClass))
	}
	if c.ServeClassless != nil && !*c.ServeClassless {
		line("serve_classless = false")
	}
	if len(v.Templates.Files) > 0 || v.Templates.ExistingConfigMap != "" {
		line("override_dir = %s", q(overrideDir))
	}
	if v.hasBaremetal() {
		line("baremetal_values_file = %s", q(baremetalFile))
	}
	line("terraform {")
	line("cli_config_file = %s", q(cliConfigFile))
	line("provider_lock_file = %s", q(providerLockFile))
	if keys := v.Credentials.Keys; len(keys) > 0 {
		line("pass_env = %s", list(keys))
	}
	if c.Terraform != "" {
		line("%s", strings.TrimSuffix(c.Terraform, "\n"))
	}
	if v.Review.Enabled {
		line("review = true")
	}
	if v.Runner.Enabled {
		v.jobHCL(line)
	}
	line("}")
	if c.Inline != "" {
		line("%s", strings.TrimSuffix(c.Inline, "\n"))
	}
	if v.StateBackend.Type == "kubernetes" {
		line("backend \"kubernetes\" {")
		line("namespace = %s", q(v.stateNamespace()))
		line("in_cluster_config = true")
		line("}")
	}
	return hclwrite.Format([]byte(b.String()))
}

// jobHCL writes the terraform block's runner and job settings.
func (v *values) jobHCL(line func(string, ...any)) {
	r := v.Runner
	line("runner = \"job\"")
	line("job {")
	line("namespace = %s", q(v.runnerNamespace()))
	line("image = %s", q(v.image()))
	line("service_account = %s", q(r.ServiceAccount))
	line("cpu = %s", q(r.CPU))
	line("memory = %s", q(r.Memory))
	line("memory_limit = %s", q(r.MemoryLimit))
	if r.Pool > 0 {
		line("pool = %d", r.Pool)
	}
	if r.HostNetwork {
		line("host_network = true")
	}
	var mounts []string
	if s := v.SSHKey.ExistingSecret; s != "" {
		mounts = append(mounts, q(sshKeyDir)+" = "+q(s))
	}
	if s := v.bgpSecret(); s != "" {
		mounts = append(mounts, q(bgpPasswordDir)+" = "+q(s))
	}
	if len(mounts) > 0 {
		line("secret_mounts = { %s }", strings.Join(mounts, ", "))
	}
	if len(r.NodeSelector) > 0 {
		keys := make([]string, 0, len(r.NodeSelector))
		for k := range r.NodeSelector {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kv []string
		for _, k := range keys {
			kv = append(kv, q(k)+" = "+q(r.NodeSelector[k]))
		}
		line("node_selector = { %s }", strings.Join(kv, ", "))
	}
	if len(r.Tolerations) > 0 {
		line("tolerations = %s", list(r.Tolerations))
	}
	line("}")
}

func list(ss []string) string {
	var out []string
	for _, s := range ss {
		out = append(out, q(s))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// baremetalJSON is the chart's baremetal.json: the baremetal value as
// given, with the path where the chart mounts sshKey.
func (v *values) baremetalJSON() ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(v.Baremetal, &m); err != nil {
		return nil, fmt.Errorf("baremetal: %w", err)
	}
	m["sshPrivateKeyFile"] = sshKeyDir + "/" + v.SSHKey.Key
	if b, ok := m["bgp"].(map[string]any); !ok || len(b) == 0 {
		delete(m, "bgp") // the chart's default, {}: no BGP
	} else if v.bgpSecret() != "" {
		b["passwordFile"] = bgpPasswordDir + "/password"
	}
	return json.Marshal(m)
}

// bgpSecret is baremetal.bgp.passwordSecret ("" without), which the chart
// mounts at bgpPasswordDir.
func (v *values) bgpSecret() string {
	var b struct {
		BGP struct {
			PasswordSecret string `json:"passwordSecret"`
		} `json:"bgp"`
	}
	if !v.hasBaremetal() || json.Unmarshal(v.Baremetal, &b) != nil {
		return ""
	}
	return b.BGP.PasswordSecret
}
