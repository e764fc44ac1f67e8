package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
)

// BenchmarkEngineVsRawTofu compares the engine's plan+apply of a changed
// workspace with the same work done by raw `tofu plan -out` + `tofu apply
// plan` processes, alternated in one run. It reports ns/op of each and
// their ratio (engine/raw; goal <= 1.2).
//
//	go test -run '^$' -bench EngineVsRawTofu ./workspace/
func BenchmarkEngineVsRawTofu(b *testing.B) {
	tofu := repo.Tofu(b)
	e := newTestEngine(b, Options{Binary: tofu})
	rawDir := filepath.Join(b.TempDir(), "raw")
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		b.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
	raw := func(args ...string) {
		cmd := exec.Command(tofu, args...)
		cmd.Dir = rawDir
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("tofu %v: %v\n%s", args, err, out)
		}
	}
	spec := func(n int) Spec {
		s := Spec{Name: "bench", Files: map[string][]byte{"main.tf": []byte(benchModule)}}
		s.Files["tfccm.auto.tfvars"] = []byte("n = " + strconv.Itoa(n) + "\n")
		return s
	}
	writeRaw := func(s Spec) {
		for p, c := range s.Files {
			if err := os.WriteFile(filepath.Join(rawDir, p), c, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Both sides init once, outside the measurement.
	first := spec(0)
	writeRaw(first)
	raw("init", "-no-color", "-input=false")
	if _, err := e.Apply(first); err != nil {
		b.Fatal(err)
	}
	waitApplied(b, e, first)

	var engineTime, rawTime time.Duration
	ctx := context.Background()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		s := spec(i)
		t0 := time.Now()
		if _, err := e.Apply(s); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Wait(ctx, s.Name, s.ContentHash()); err != nil {
			b.Fatal(err)
		}
		engineTime += time.Since(t0)

		t0 = time.Now()
		writeRaw(s)
		raw("plan", "-no-color", "-input=false", "-out=raw.tfplan")
		raw("apply", "-no-color", "-input=false", "-auto-approve", "raw.tfplan")
		rawTime += time.Since(t0)
	}
	b.StopTimer()
	b.ReportMetric(float64(engineTime.Nanoseconds())/float64(b.N), "engine-ns/op")
	b.ReportMetric(float64(rawTime.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(float64(engineTime)/float64(rawTime), "ratio")
}

const benchModule = `variable "n" {
  type = number
}

resource "terraform_data" "r" {
  count = 5
  input = "${count.index}-${var.n}"
}

output "inputs" {
  value = terraform_data.r[*].output
}
`

// BenchmarkChurnCoalescing replays node churn against 20 load balancer
// workspaces through the engine with the default coalescing: 5 nodes added
// and 5 removed within 10 s, each node event changing every workspace. It
// reports tofu applies per workspace (goal <= 2) and the time from the
// last event until every workspace has applied it (goal <= 30 s).
//
//	go test -run '^$' -bench ChurnCoalescing -benchtime 1x ./workspace/
func BenchmarkChurnCoalescing(b *testing.B) {
	for _, c := range []struct {
		name string
		c    Coalesce
	}{{"off", Coalesce{}}, {"default", Coalesce{Quiet: 2 * time.Second, Max: 10 * time.Second}}} {
		b.Run(c.name, func(b *testing.B) { benchChurn(b, c.c) })
	}
}

func benchChurn(b *testing.B, coalesce Coalesce) {
	const services, events = 20, 10
	for i := 0; i < b.N; i++ {
		bin, calls := countingBinary(b)
		e := newTestEngine(b, Options{Binary: bin, Parallelism: DefaultParallelism, Coalesce: coalesce})
		spec := func(svc, nodes int) Spec {
			s := Spec{Name: "lb-" + strconv.Itoa(svc), Coalesce: true, Files: map[string][]byte{"main.tf": []byte(benchModule)}}
			s.Files["tfccm.auto.tfvars"] = []byte("n = " + strconv.Itoa(nodes) + "\n")
			return s
		}
		ctx := context.Background()
		for s := 0; s < services; s++ {
			if _, err := e.Apply(spec(s, 0)); err != nil {
				b.Fatal(err)
			}
		}
		for s := 0; s < services; s++ {
			waitApplied(b, e, spec(s, 0))
		}
		before := count(calls(), "apply")
		// One node event per second: the service controller updates every
		// load balancer for each.
		for ev := 1; ev <= events; ev++ {
			for s := 0; s < services; s++ {
				if _, err := e.Apply(spec(s, ev)); err != nil {
					b.Fatal(err)
				}
			}
			if ev < events {
				time.Sleep(time.Second)
			}
		}
		last := time.Now()
		for s := 0; s < services; s++ {
			want := spec(s, events)
			if _, err := e.Wait(ctx, want.Name, want.ContentHash()); err != nil {
				b.Fatal(err)
			}
		}
		converged := time.Since(last)
		applies := count(calls(), "apply") - before
		b.ReportMetric(float64(applies)/services, "applies/service")
		b.ReportMetric(converged.Seconds(), "s-to-converge")
	}
}
