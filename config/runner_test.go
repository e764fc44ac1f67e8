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
