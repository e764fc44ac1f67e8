package config

import (
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(`cluster_name = "prod"`), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if c.WorkDir != DefaultWorkDir || c.TemplateSet != "local" || c.Terraform.Binary != "tofu" ||
		c.Terraform.Parallelism != DefaultParallelism || c.Terraform.Timeout != DefaultOperationTimeout {
		t.Errorf("defaults not applied: %+v %+v", c, c.Terraform)
	}
	if c.Backend.Type != "local" {
		t.Errorf("backend = %q, want local", c.Backend.Type)
	}
	hc := c.LoadBalancer.HealthCheck
	if hc.Protocol != "HTTP" || hc.Port != 10256 || hc.Path != "/healthz" {
		t.Errorf("health check defaults = %+v", hc)
	}
	if !c.LoadBalancer.Settings.Type().Equals(cty.EmptyObject) {
		t.Errorf("settings default = %#v", c.LoadBalancer.Settings)
	}
	if len(c.LoadBalancer.ServiceVars) != 0 || c.LoadBalancer.AllowsServiceVar("vip_pool") {
		t.Errorf("service_vars default = %q, want none", c.LoadBalancer.ServiceVars)
	}
	if c.LoadBalancer.EnsureWait != DefaultEnsureWait {
		t.Errorf("ensure_wait default %s", c.LoadBalancer.EnsureWait)
	}
	if c.Instances.TTL != DefaultStateTTL || c.Routes.BatchWindow != 2*time.Second {
		t.Errorf("durations: ttl %s batch %s", c.Instances.TTL, c.Routes.BatchWindow)
	}
}

// TestBlockDefaults: the defaults of settings inside blocks a minimal
// config omits are applied by Parse itself, so readers (package policy,
// package window, the job runner) read them from the parsed config.
func TestBlockDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		got       func(*Config) string
		want      string
	}{
		{"runner", ``, func(c *Config) string { return c.Terraform.Runner }, DefaultRunner},
		{"job namespace", ``, func(c *Config) string { return c.Terraform.Job.Namespace }, DefaultJobNamespace},
		{"policy action", "policy \"p\" {\n  validation {\n    expression = \"true\"\n  }\n}",
			func(c *Config) string { return c.Policies[0].Action }, DefaultPolicyAction},
		{"policy action given", "policy \"p\" {\n  action = \"warn\"\n  validation {\n    expression = \"true\"\n  }\n}",
			func(c *Config) string { return c.Policies[0].Action }, PolicyWarn},
		{"window time zone", "change_windows {\n  window \"w\" {\n    kind = \"allow\"\n    schedule = \"0 22 * * *\"\n    duration = \"1h\"\n  }\n}",
			func(c *Config) string { return c.ChangeWindows.Windows[0].TimeZone }, DefaultWindowTimeZone},
		{"window time zone given", "change_windows {\n  window \"w\" {\n    kind = \"allow\"\n    schedule = \"0 22 * * *\"\n    duration = \"1h\"\n    time_zone = \"Europe/Berlin\"\n  }\n}",
			func(c *Config) string { return c.ChangeWindows.Windows[0].TimeZone }, "Europe/Berlin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte("cluster_name = \"prod\"\n"+tc.src+"\n"), "cloud.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.got(c); got != tc.want {
				t.Errorf("%s = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestParseFull(t *testing.T) {
	src := `
cluster_name = "prod"
work_dir     = "/srv/tfccm"
template_set = "hcloud"
override_dir = "/etc/tfccm/templates"
terraform {
  binary      = "/usr/bin/terraform"
  parallelism = 8
  timeout     = "3m"
  env         = { HCLOUD_TOKEN = "secret" }
  pass_env    = ["AWS_PROFILE"]
}
backend "kubernetes" {
  namespace = "tfccm-state"
  in_cluster_config = true
}
load_balancer {
  health_check {
    protocol = "tcp"
    port     = 30000
  }
  settings = { vip_pool = "10.0.0.0/24", size = 2 }
  service_vars = ["size"]
}
instances {
  ttl           = "1m"
  max_staleness = "5m"
  source "infra" {
    dir = "/srv/infra"
  }
}
`
	c, err := Parse([]byte(src), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if c.Terraform.DriftInterval != DefaultDriftInterval {
		t.Errorf("drift interval = %s", c.Terraform.DriftInterval)
	}
	if c.Terraform.Timeout != 3*time.Minute || c.Terraform.Env["HCLOUD_TOKEN"] != "secret" {
		t.Errorf("terraform = %+v", c.Terraform)
	}
	if c.Backend.Type != "kubernetes" || len(c.Backend.Attributes) != 2 || c.Backend.Attributes["in_cluster_config"] != cty.True {
		t.Errorf("backend = %s %v", c.Backend.Type, c.Backend.Attributes)
	}
	if got := c.BackendNamespace(); got != "tfccm-state" {
		t.Errorf("backend namespace = %q", got)
	}
	hc := c.LoadBalancer.HealthCheck
	if hc.Protocol != "TCP" || hc.Port != 30000 || hc.Path != "" {
		t.Errorf("health check = %+v", hc)
	}
	if got := c.LoadBalancer.Settings.GetAttr("vip_pool").AsString(); got != "10.0.0.0/24" {
		t.Errorf("settings.vip_pool = %q", got)
	}
	if !c.LoadBalancer.AllowsServiceVar("size") || c.LoadBalancer.AllowsServiceVar("vip_pool") {
		t.Errorf("service_vars = %q: allows size %v, vip_pool %v", c.LoadBalancer.ServiceVars, c.LoadBalancer.AllowsServiceVar("size"), c.LoadBalancer.AllowsServiceVar("vip_pool"))
	}
	if len(c.Instances.Sources) != 1 || c.Instances.Sources[0].Dir != "/srv/infra" || c.Instances.TTL != time.Minute {
		t.Errorf("instances = %+v", c.Instances)
	}
}

func TestParseErrorsNameFileLine(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"missing cluster_name", `work_dir = "/x"`, []string{`cloud.hcl:1,1-1: Missing required argument; The argument "cluster_name" is required`}},
		{"bad cluster_name", "cluster_name = \"Bad_Name\"\n", []string{"cloud.hcl:1,16-26: Invalid cluster_name"}},
		{"unknown attribute", "cluster_name = \"a\"\nfoo = 1\n", []string{`cloud.hcl:2,1-4: Unsupported argument`}},
		{"bad drift interval", "cluster_name = \"a\"\nterraform {\n  drift_interval = \"-1h\"\n}\n", []string{"cloud.hcl:3,20-25: Invalid drift_interval"}},
		{"bad timeout", "cluster_name = \"a\"\nterraform {\n  timeout = \"soon\"\n}\n", []string{"cloud.hcl:3,13-19: Invalid timeout"}},
		{"secret env refused", "cluster_name = \"a\"\nterraform {\n  env = { TF_VAR_x = \"1\" }\n}\n", []string{"cloud.hcl:3,9-27: Invalid env", "TF_VAR_x"}},
		{"bad health check", "cluster_name = \"a\"\nload_balancer {\n  health_check {\n    port = 70000\n  }\n}\n", []string{"cloud.hcl:4,12-17: Invalid health_check port"}},
		{"settings not object", "cluster_name = \"a\"\nload_balancer {\n  settings = \"x\"\n}\n", []string{"cloud.hcl:3,14-17: Invalid settings"}},
		{"source needs one of", "cluster_name = \"a\"\ninstances {\n  source \"x\" {\n  }\n}\n", []string{"cloud.hcl:3,3-13: Invalid state source"}},
		{"staleness below ttl", "cluster_name = \"a\"\ninstances {\n  ttl = \"5m\"\n  max_staleness = \"1m\"\n}\n", []string{"cloud.hcl:4,19-23: Invalid max_staleness"}},
		{"bad ensure wait", "cluster_name = \"a\"\nload_balancer {\n  ensure_wait = \"3h\"\n}\n", []string{"cloud.hcl:3,17-21: Invalid ensure_wait"}},
		{"bad coalesce", "cluster_name = \"a\"\nterraform {\n  coalesce_quiet = \"20s\"\n  coalesce_max = \"5s\"\n}\n", []string{"Invalid coalesce_max"}},
		{"bad load balancer class", "cluster_name = \"a\"\nload_balancer_class = \"tfccm.io/a b\"\n", []string{"cloud.hcl:2,23-37: Invalid load_balancer_class"}},
		{"service_vars not a key", "cluster_name = \"a\"\nload_balancer {\n  service_vars = [\"size\", \"a b\"]\n}\n", []string{"cloud.hcl:3,18-33: Invalid service_vars", `"a b" is not a settings key`}},
		{"service_vars twice", "cluster_name = \"a\"\nload_balancer {\n  service_vars = [\"size\", \"size\"]\n}\n", []string{"Invalid service_vars", `"size" is listed twice`}},
		{"service_vars not a list", "cluster_name = \"a\"\nload_balancer {\n  service_vars = \"size\"\n}\n", []string{"cloud.hcl:3,19-23: Unsuitable value type"}},
		{"two errors reported", "cluster_name = \"A\"\nterraform {\n  timeout = \"x\"\n}\n", []string{"Invalid cluster_name", "Invalid timeout"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "cloud.hcl")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestDurationAtLeast: a duration that must not be shorter than another
// of its block (its row's atLeast) is checked against the other's parsed
// value, its default included; 0 (off) is never too short.
func TestDurationAtLeast(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"coalesce_max below the default quiet", "terraform {\n  coalesce_max = \"1s\"\n}", "terraform.coalesce_max (1s) must not be shorter than coalesce_quiet (2s)."},
		{"coalesce_max off", "terraform {\n  coalesce_quiet = \"20s\"\n  coalesce_max = \"0s\"\n}", ""},
		{"coalesce_max equal", "terraform {\n  coalesce_quiet = \"5s\"\n  coalesce_max = \"5s\"\n}", ""},
		{"ttl above the default max_staleness", "instances {\n  ttl = \"20m\"\n}", "instances.max_staleness must not be shorter than instances.ttl."},
		{"max_staleness equal", "instances {\n  ttl = \"5m\"\n  max_staleness = \"5m\"\n}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte("cluster_name = \"a\"\n"+tc.src+"\n"), "cloud.hcl")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestServesClass(t *testing.T) {
	metallb, mine, other := "metallb.io/metallb", "example.com/lb", DefaultLoadBalancerClass
	for _, tc := range []struct {
		name, src string
		class     *string
		want      bool
	}{
		{"class-less by default", "", nil, true},
		{"the default class", "", &other, true},
		{"another class", "", &metallb, false},
		{"class-less turned off", "serve_classless = false\n", nil, false},
		{"own class with class-less off", "serve_classless = false\n", &other, true},
		{"a configured class", "load_balancer_class = \"example.com/lb\"\n", &mine, true},
		{"the default class once another is configured", "load_balancer_class = \"example.com/lb\"\n", &other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte("cluster_name = \"a\"\n"+tc.src), "cloud.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ServesClass(tc.class); got != tc.want {
				t.Errorf("ServesClass = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReviewAttribute(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      bool
		err       string
	}{
		{"default off", `cluster_name = "a"`, false, ""},
		{"on", "cluster_name = \"a\"\nterraform {\n  review = true\n}\n", true, ""},
		{"off", "cluster_name = \"a\"\nterraform {\n  review = false\n}\n", false, ""},
		{"not a bool", "cluster_name = \"a\"\nterraform {\n  review = \"maybe\"\n}\n", false, "cloud.hcl:3,13-18: Unsuitable value type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.src), "cloud.hcl")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one at %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Terraform.Review != tc.want {
				t.Errorf("review = %v, want %v", c.Terraform.Review, tc.want)
			}
		})
	}
}

func TestPolicyAndWindowSettings(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"policy \"Bad\" {\n  validation {\n    expression = \"true\"\n  }\n}", "Invalid policy name"},
		{"policy \"a\" {\n  action = \"block\"\n  validation {\n    expression = \"true\"\n  }\n}", `action is deny, warn, require-approval, approve, not "block"`},
		{`policy "a" {}`, "has no validation block"},
		{"policy \"a\" {\n  validation {\n    expression = \"true\"\n  }\n}\npolicy \"a\" {\n  validation {\n    expression = \"true\"\n  }\n}", `policy "a" is declared twice`},
		{`change_windows {
  window "w" {
    kind = "maybe"
    schedule = "0 22 * * *"
    duration = "4h"
  }
}`, `kind is allow or deny, not "maybe"`},
		{`change_windows {
  window "w" {
    kind = "allow"
    schedule = "0 22 * * *"
    duration = "-4h"
  }
}`, `duration "-4h" is not a positive duration`},
	} {
		_, err := Parse([]byte("cluster_name = \"x\"\n"+tc.src), "cloud.hcl")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.src, err, tc.want)
		}
	}
	c, err := Parse([]byte(`cluster_name = "x"
policy "a" {
  validation {
    expression = "true"
  }
}
change_windows {
  window "w" {
    kind     = "allow"
    schedule = "0 22 * * *"
    duration = "90m"
  }
}`), "cloud.hcl")
	if err != nil || c.Policies[0].Action != PolicyDeny || c.ChangeWindows.Windows[0].Duration != 90*time.Minute {
		t.Fatalf("%v %+v", err, c)
	}
}
