package ccm

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/jobrunner"
)

// jobRunner: runner = "job" makes this binary the engine's executable with
// the job settings in its environment, and keeps the earlier leaders'
// lock rule beside the runners' one.
func TestJobRunnerOptions(t *testing.T) {
	src := `cluster_name = "c"
terraform {
  binary = "/usr/local/bin/tofu"
  runner = "job"
  job {
    image       = "tfccm:dev"
    tolerations = ["dedicated=tofu:NoSchedule", "gpu"]
    host_network = true
  }
}
backend "kubernetes" {
  in_cluster_config = true
}
`
	cfg, err := config.Parse([]byte(src), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	opts := workspace.Options{GoneLockHolder: func(who string) bool { return who == "root@old-leader" }}
	locks, err := jobRunner(cfg, &opts)
	if err != nil || locks == nil || opts.Exec == nil || opts.Exec.Path == "" {
		t.Fatalf("jobRunner: %v, %+v", err, opts.Exec)
	}
	var jc jobrunner.Config
	if err := json.Unmarshal([]byte(opts.Exec.Env[jobrunner.EnvConfig]), &jc); err != nil {
		t.Fatal(err)
	}
	want := []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "tofu", Effect: corev1.TaintEffectNoSchedule},
		{Key: "gpu", Operator: corev1.TolerationOpExists},
	}
	if jc.Image != "tfccm:dev" || jc.Identity != cfg.Identity() || jc.Tofu != "/usr/local/bin/tofu" || !jc.HostNetwork || len(jc.Tolerations) != 2 || jc.Tolerations[0] != want[0] || jc.Tolerations[1] != want[1] {
		t.Errorf("job config %+v", jc)
	}
	if jc.Resources.Limits.Memory().String() != config.DefaultJobMemoryLimit || jc.Deadline <= workspace.DefaultTimeout {
		t.Errorf("resources %v, deadline %s", jc.Resources, jc.Deadline)
	}
	// The kubernetes backend reads the runner pod's token; no plugin
	// cache on the nodes unless the admin names one.
	if !jc.StateToken || jc.PluginCache != "" {
		t.Errorf("backend kubernetes: state token %v, plugin cache %q; want true and none", jc.StateToken, jc.PluginCache)
	}
	if !opts.GoneLockHolder("root@old-leader") || opts.GoneLockHolder("root@someone") {
		t.Error("the earlier leaders' lock rule is lost")
	}

	// Any other backend: no token in tofu's container.
	cfg.Backend.Type = "s3"
	if _, err := jobRunner(cfg, &opts); err != nil {
		t.Fatal(err)
	}
	jc = jobrunner.Config{}
	if err := json.Unmarshal([]byte(opts.Exec.Env[jobrunner.EnvConfig]), &jc); err != nil || jc.StateToken {
		t.Errorf("backend s3: state token %v (%v); want none", jc.StateToken, err)
	}

	cfg.Terraform.Runner = config.RunnerProcess
	opts = workspace.Options{}
	if locks, err := jobRunner(cfg, &opts); locks != nil || err != nil || opts.Exec != nil {
		t.Errorf("in-process runner: %v %v %+v", locks, err, opts.Exec)
	}
}
