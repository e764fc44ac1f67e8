package ccm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/ccm/lbcontroller"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/jobrunner"
)

// jobRunner is terraform { runner = "job" }: the engine's executable is
// this binary as jobrunner's stand-in for tofu, and state locks of this
// controller's finished runner pods are released (jobrunner.Locks).
// It returns nil, nil for the in-process runner.
func jobRunner(cfg *config.Config, opts *workspace.Options) (*jobrunner.Locks, error) {
	t := cfg.Terraform
	if t.Runner != config.RunnerJob {
		return nil, nil
	}
	jc, err := jobConfig(cfg)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("job runner: %w", err)
	}
	b, err := json.Marshal(jc)
	if err != nil {
		return nil, fmt.Errorf("job runner: %w", err)
	}
	opts.Exec = &workspace.Exec{Path: self, Env: map[string]string{jobrunner.EnvConfig: string(b)}}
	locks := jobrunner.NewLocks(jc)
	gone := opts.GoneLockHolder
	opts.GoneLockHolder = func(who string) bool {
		return (gone != nil && gone(who)) || locks.Gone(who)
	}
	return locks, nil
}

// startRunnerPool keeps the job runner's pool of warm runner pods
// (terraform.job.pool > 0) until ctx ends, or removes the pool an earlier
// configuration left (pool = 0). Nothing with the in-process runner.
func startRunnerPool(ctx context.Context, cfg *config.Config, client kubernetes.Interface, recorder record.EventRecorder) {
	if cfg.Terraform.Runner != config.RunnerJob {
		return
	}
	jc, err := jobConfig(cfg)
	if err != nil {
		klog.ErrorS(err, "Runner pool")
		return
	}
	pool := jobrunner.NewPool(jc, client)
	pool.Recorder, pool.PendingReason = recorder, lbcontroller.ReasonRunnerPoolPending
	go pool.Run(ctx)
}

// jobConfig is the job runner's configuration from the cloud config.
func jobConfig(cfg *config.Config) (*jobrunner.Config, error) {
	t, j := cfg.Terraform, cfg.Terraform.Job
	tofu := t.Binary
	if !filepath.IsAbs(tofu) {
		p, err := exec.LookPath(tofu)
		if err != nil {
			return nil, fmt.Errorf("job runner: terraform binary %q: %w", tofu, err)
		}
		tofu = p
	}
	timeout := t.Timeout
	jc := &jobrunner.Config{
		Namespace:      j.Namespace,
		Image:          j.Image,
		ServiceAccount: j.ServiceAccount,
		NodeSelector:   j.NodeSelector,
		PluginCache:    j.PluginCache,
		StateToken:     cfg.Backend != nil && cfg.Backend.Type == "kubernetes",
		HostNetwork:    j.HostNetwork,
		SecretMounts:   j.SecretMounts,
		Pool:           j.Pool,
		WorkDir:        cfg.WorkDir,
		Identity:       cfg.Identity(),
		Tofu:           tofu,
		Deadline:       timeout + 2*workspace.DefaultGracePeriod,
		Grace:          workspace.DefaultGracePeriod,
		Kubeconfig:     os.Getenv("KUBECONFIG"),
		KubeHost:       os.Getenv("KUBERNETES_SERVICE_HOST"),
		KubePort:       os.Getenv("KUBERNETES_SERVICE_PORT"),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(j.CPU), corev1.ResourceMemory: resource.MustParse(j.Memory)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(j.MemoryLimit)},
		},
	}
	for _, s := range j.Tolerations {
		tol, err := config.ParseToleration(s)
		if err != nil {
			return nil, fmt.Errorf("job runner: %w", err)
		}
		ct := corev1.Toleration{Key: tol.Key, Value: tol.Value, Effect: corev1.TaintEffect(tol.Effect), Operator: corev1.TolerationOpEqual}
		if tol.Value == "" {
			ct.Operator = corev1.TolerationOpExists
		}
		jc.Tolerations = append(jc.Tolerations, ct)
	}
	return jc, nil
}
