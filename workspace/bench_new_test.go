package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/workspace/backends"
)

// newWorkspacesBench is the number of new workspaces
// BenchmarkNewWorkspacesVsRawTofu creates on each side.
const newWorkspacesBench = 40

// BenchmarkNewWorkspacesVsRawTofu measures what the engine itself saves
// on new workspaces where the cloud costs nothing: newWorkspacesBench
// workspaces of one template (a provider started by every command, one
// terraform_data object, a local backend of their own) created at the
// engine's default parallelism, against raw `tofu init`, `plan -out` and
// `apply` of the same files at the same parallelism, in one run. It
// reports the wall-time ratio (engine/raw; the burst's goal is <= 0.8)
// and the CPU seconds per workspace of tofu and its providers on each
// side, also of the engine with provider_mtls (go-plugin's certificates
// on every provider start), from the children's resource usage.
//
// The e2e burst (TestBurstVsRawTofu) measures the same against the local
// cloud, where every apply also waits for the load balancer host.
//
//	go test -run '^$' -bench NewWorkspacesVsRawTofu -benchtime 1x ./workspace/
func BenchmarkNewWorkspacesVsRawTofu(b *testing.B) {
	cliConfig, err := repo.LBHostCLIConfig()
	if err != nil {
		b.Fatal(err)
	}
	tofu := repo.Tofu(b)
	var raw, engine, mtls newWorkspacesRun
	for i := 0; i < b.N; i++ {
		raw.add(rawNewWorkspaces(b, tofu, cliConfig))
		engine.add(engineNewWorkspaces(b, tofu, cliConfig, false))
		mtls.add(engineNewWorkspaces(b, tofu, cliConfig, true))
	}
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N*newWorkspacesBench) }
	b.ReportMetric(float64(engine.wall)/float64(raw.wall), "ratio")
	b.ReportMetric(per(raw.cpu), "raw-cpu-s/ws")
	b.ReportMetric(per(engine.cpu), "engine-cpu-s/ws")
	b.ReportMetric(per(mtls.cpu), "engine-mtls-cpu-s/ws")
	b.ReportMetric(float64(engine.cpu)/float64(mtls.cpu), "cpu-vs-mtls")
	b.Logf("NEW workspaces=%d parallelism=%d wall engine=%s raw=%s engine(mtls)=%s; cpu/ws engine=%.3fs raw=%.3fs engine(mtls)=%.3fs",
		b.N*newWorkspacesBench, DefaultParallelism, engine.wall.Round(time.Millisecond), raw.wall.Round(time.Millisecond),
		mtls.wall.Round(time.Millisecond), per(engine.cpu), per(raw.cpu), per(mtls.cpu))
}

// newWorkspacesRun is one side's wall time and CPU time (its tofu
// processes and their providers).
type newWorkspacesRun struct{ wall, cpu time.Duration }

func (r *newWorkspacesRun) add(o newWorkspacesRun) { r.wall += o.wall; r.cpu += o.cpu }

// childrenCPU is the user and system time of this process's children
// that have ended, their own children included once reaped.
func childrenCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// newWorkspaceSpec is new workspace i under dir: preparedModule with a
// local state of its own.
func newWorkspaceSpec(dir string, i int) Spec {
	name := fmt.Sprintf("new-%d", i)
	backend := backends.Info{Type: "local", Attributes: map[string]cty.Value{"path": cty.StringVal(filepath.Join(dir, name+".tfstate"))}}
	return preparedSpec(name, i, backend, "")
}

func engineNewWorkspaces(b *testing.B, tofu, cliConfig string, mtls bool) newWorkspacesRun {
	b.Helper()
	states := b.TempDir()
	e := newTestEngine(b, Options{Binary: tofu, CLIConfigFile: cliConfig, Parallelism: DefaultParallelism, ProviderMTLS: mtls})
	specs := make([]Spec, newWorkspacesBench)
	for i := range specs {
		specs[i] = newWorkspaceSpec(states, i)
	}
	cpu, start := childrenCPU(b), time.Now()
	for _, s := range specs {
		if _, err := e.Apply(s); err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range specs {
		waitApplied(b, e, s)
	}
	return newWorkspacesRun{wall: time.Since(start), cpu: childrenCPU(b) - cpu}
}

func rawNewWorkspaces(b *testing.B, tofu, cliConfig string) newWorkspacesRun {
	b.Helper()
	root, states := b.TempDir(), b.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE=" + cliConfig}
	dirs := make([]string, newWorkspacesBench)
	for i := range dirs {
		s := newWorkspaceSpec(states, i)
		dirs[i] = filepath.Join(root, s.Name)
		if err := os.MkdirAll(dirs[i], 0o700); err != nil {
			b.Fatal(err)
		}
		for p, c := range s.Files {
			if err := os.WriteFile(filepath.Join(dirs[i], p), c, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	work := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	cpu, start := childrenCPU(b), time.Now()
	for range DefaultParallelism {
		wg.Go(func() {
			for dir := range work {
			commands:
				for _, args := range [][]string{
					{"init", "-input=false", "-no-color"},
					{"plan", "-input=false", "-no-color", "-out=tfplan"},
					{"apply", "-input=false", "-no-color", "tfplan"},
				} {
					cmd := exec.CommandContext(context.Background(), tofu, args...)
					cmd.Dir, cmd.Env = dir, env
					if out, err := cmd.CombinedOutput(); err != nil {
						mu.Lock()
						failed = fmt.Errorf("tofu %v in %s: %w\n%s", args, dir, err, out)
						mu.Unlock()
						break commands
					}
				}
			}
		})
	}
	for _, d := range dirs {
		work <- d
	}
	close(work)
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	return newWorkspacesRun{wall: time.Since(start), cpu: childrenCPU(b) - cpu}
}
