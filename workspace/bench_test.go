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
