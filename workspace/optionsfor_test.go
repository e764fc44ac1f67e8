package workspace

import (
	"reflect"
	"testing"
	"time"

	"github.com/tfccm/tfccm/config"
)

// TestOptionsFor: every setting of the cloud config that shapes the engine
// reaches Options, and every field of config.Terraform is either converted
// (a case below) or named as not the engine's.
func TestOptionsFor(t *testing.T) {
	cases := []struct {
		field string // config.Terraform's field (or "Config.<field>")
		set   func(*config.Config)
		check func(Options) bool
	}{
		{"Binary", func(c *config.Config) { c.Terraform.Binary = "/opt/tofu" }, func(o Options) bool { return o.Binary == "/opt/tofu" }},
		{"Parallelism", func(c *config.Config) { c.Terraform.Parallelism = 7 }, func(o Options) bool { return o.Parallelism == 7 }},
		{"Timeout", func(c *config.Config) { c.Terraform.Timeout = 3 * time.Minute }, func(o Options) bool { return o.Timeout == 3*time.Minute }},
		{"DriftInterval", func(c *config.Config) { c.Terraform.DriftInterval = time.Hour }, func(o Options) bool { return o.DriftInterval == time.Hour }},
		{"CoalesceQuiet", func(c *config.Config) { c.Terraform.CoalesceQuiet = 2 * time.Second }, func(o Options) bool { return o.Coalesce.Quiet == 2*time.Second }},
		{"CoalesceMax", func(c *config.Config) { c.Terraform.CoalesceMax = 9 * time.Second }, func(o Options) bool { return o.Coalesce.Max == 9*time.Second }},
		{"CLIConfigFile", func(c *config.Config) { c.Terraform.CLIConfigFile = "/etc/tofurc" }, func(o Options) bool { return o.CLIConfigFile == "/etc/tofurc" }},
		{"ProviderLockFile", func(c *config.Config) { c.Terraform.ProviderLockFile = "/l.hcl" }, func(o Options) bool { return o.ProviderLockFile == "/l.hcl" }},
		{"PluginCacheDir", func(c *config.Config) { c.Terraform.PluginCacheDir = "/cache" }, func(o Options) bool { return o.PluginCacheDir == "/cache" }},
		{"ProviderMTLS", func(c *config.Config) { c.Terraform.ProviderMTLS = true }, func(o Options) bool { return o.ProviderMTLS }},
		{"Env", func(c *config.Config) { c.Terraform.Env = map[string]string{"TOKEN": "x"} }, func(o Options) bool { return o.Env["TOKEN"] == "x" }},
		{"PassEnv", func(c *config.Config) { c.Terraform.PassEnv = []string{"AWS_KEY"} }, func(o Options) bool { return reflect.DeepEqual(o.PassEnv, []string{"AWS_KEY"}) }},
		{"Review", func(c *config.Config) { c.Terraform.Review = true }, func(o Options) bool { return o.Review }},
		{"Encryption", func(c *config.Config) { c.Encryption = &config.Encryption{Source: "enc {}", Secrets: []string{"k"}} },
			func(o Options) bool {
				return o.Encryption == "enc {}" && reflect.DeepEqual(o.EncryptionSecrets, []string{"k"})
			}},
		{"Config.WorkDir", func(c *config.Config) { c.WorkDir = "/var/lib/tfccm" }, func(o Options) bool { return o.WorkDir == "/var/lib/tfccm" }},
		{"Config.ClusterName", func(c *config.Config) { c.ClusterName = "prod" }, func(o Options) bool { return o.Identity == "tfccm/prod" }},
	}
	// Not the engine's: the raw forms of parsed durations, and the job
	// runner's settings (package workspace/jobrunner makes Options.Exec).
	notEngine := map[string]bool{
		"TimeoutRaw": true, "DriftIntervalRaw": true, "CoalesceQuietRaw": true, "CoalesceMaxRaw": true,
		"Runner": true, "Job": true,
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			covered[tc.field] = true
			cfg := &config.Config{Terraform: &config.Terraform{}}
			if tc.check(OptionsFor(cfg)) {
				t.Fatalf("OptionsFor of an empty config already passes the check of %s", tc.field)
			}
			tc.set(cfg)
			if !tc.check(OptionsFor(cfg)) {
				t.Errorf("config %s does not reach Options: %+v", tc.field, OptionsFor(cfg))
			}
		})
	}
	ty := reflect.TypeFor[config.Terraform]()
	for i := range ty.NumField() {
		if f := ty.Field(i).Name; !covered[f] && !notEngine[f] {
			t.Errorf("config.Terraform.%s has no case in TestOptionsFor (nor is it named as not the engine's)", f)
		}
	}
}
