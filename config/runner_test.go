package config

import (
	"strings"
	"testing"
)

func TestRunner(t *testing.T) {
	const kube = "backend \"kubernetes\" {\n  secret_suffix = \"tfccm\"\n  in_cluster_config = true\n}\n"
	cases := []struct {
		name, src string
		want      []string // error substrings; none: valid
	}{
		{"default is process", `cluster_name = "a"`, nil},
		{"job with kubernetes backend", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"tfccm:x\"\n    tolerations = [\"node-role.kubernetes.io/control-plane:NoSchedule\", \"dedicated=tofu\"]\n  }\n}\n" + kube, nil},
		{"job with the local backend", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"tfccm:x\"\n  }\n}\n", []string{"cloud.hcl:3,12-17: Runner needs remote state", `terraform.runner = "job" needs a remote state backend`}},
		{"job without image", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n}\n" + kube, []string{"Missing job image"}},
		{"unknown runner", "cluster_name = \"a\"\nterraform {\n  runner = \"pod\"\n}\n", []string{"cloud.hcl:3,12-17: Invalid runner"}},
		{"bad toleration", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"x\"\n    tolerations = [\"a:Never\"]\n  }\n}\n" + kube, []string{"Invalid job toleration", "effect must be"}},
		{"bad memory", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"x\"\n    memory = \"lots\"\n  }\n}\n" + kube, []string{"Invalid job memory"}},
		{"memory limit below the request", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"x\"\n    memory_limit = \"48Mi\"\n  }\n}\n" + kube, []string{"Invalid job memory_limit", `terraform.job.memory_limit "48Mi" is below terraform.job.memory "256Mi"`}},
		// The admin's side of the trust boundary: never the cluster's own
		// namespace, and never the state's for the runners' Secrets.
		{"job in kube-system", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"x\"\n    namespace = \"kube-system\"\n  }\n}\n" + kube, []string{"cloud.hcl:6,17-30: Runner Jobs in kube-system", `e.g. "tfccm-runners"`}},
		{"job in the state namespace", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"x\"\n    namespace = \"default\"\n  }\n}\n" + kube, []string{"cloud.hcl:6,17-26: Runner Jobs in the state namespace", "input Secrets"}},
		{"pool of 64", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"x\"\n    pool = 64\n  }\n}\n" + kube, nil},
		{"pool above 64", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"x\"\n    pool = 65\n  }\n}\n" + kube, []string{"cloud.hcl:6,12-14: Invalid job pool", "terraform.job.pool = 65: want 0 (a Job per command) to 64"}},
		{"negative pool", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"x\"\n    pool = -1\n  }\n}\n" + kube, []string{"Invalid job pool"}},
		{"relative plugin cache", "cluster_name = \"a\"\nterraform {\n  runner = \"job\"\n  job {\n    image = \"x\"\n    plugin_cache = \"cache\"\n  }\n}\n" + kube, []string{"Invalid job plugin_cache"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.src), "cloud.hcl")
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Terraform.Job == nil || cfg.Terraform.Job.Namespace != DefaultJobNamespace {
					t.Errorf("job defaults not filled in: %+v", cfg.Terraform.Job)
				}
				return
			}
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

// TestBackendNamespace: the kubernetes backend's state never goes to
// kube-system, and the error says why and what to use instead.
func TestBackendNamespace(t *testing.T) {
	cases := []struct {
		name, backend, ns, want string // want: an error substring; "": valid
	}{
		{"own namespace", "backend \"kubernetes\" {\n  namespace = \"tfccm-state\"\n}\n", "tfccm-state", ""},
		{"omitted: the backend's default", "backend \"kubernetes\" {\n  secret_suffix = \"x\"\n}\n", "default", ""},
		{"kube-system", "backend \"kubernetes\" {\n  namespace = \"kube-system\"\n}\n", "", `cloud.hcl:3,15-28: State in kube-system; backend "kubernetes" namespace = "kube-system": whoever reads the state Secrets`},
		{"another backend", "backend \"s3\" {\n  bucket = \"kube-system\"\n}\n", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte("cluster_name = \"a\"\n"+tc.backend), "cloud.hcl")
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want an error containing %q", err, tc.want)
				}
				if !strings.Contains(err.Error(), `"tfccm-state"`) {
					t.Errorf("the error names no namespace to use instead: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.BackendNamespace(); got != tc.ns {
				t.Errorf("BackendNamespace() = %q, want %q", got, tc.ns)
			}
		})
	}
}
