package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestProcesses(t *testing.T) {
	cmd := exec.Command("sleep", "30.4242")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for _, tc := range []struct {
		name  string
		match func([]string) bool
		want  bool
	}{
		{"argv matches", func(a []string) bool { return len(a) == 2 && a[0] == "sleep" && a[1] == "30.4242" }, true},
		{"other argument", func(a []string) bool { return len(a) == 2 && a[0] == "sleep" && a[1] == "30.4243" }, false},
		{"trailing NUL is not an argument", func(a []string) bool { return a[len(a)-1] == "" && a[0] == "sleep" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := slices.Contains(Processes(tc.match), cmd.Process.Pid); got != tc.want {
				t.Errorf("sleep's pid %d found: %v, want %v", cmd.Process.Pid, got, tc.want)
			}
		})
	}
}

func TestProcessesUnder(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	start := func(cwd string, env ...string) int {
		cmd := exec.Command("sleep", "30")
		cmd.Dir, cmd.Env = cwd, append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd.Process.Pid
	}
	in := start(dir)
	named := start(elsewhere, "TFCCM_WORKSPACE="+dir+"/lb-x")
	out := start(elsewhere)
	var pids []int
	for _, p := range ProcessesUnder(dir) {
		pids = append(pids, p.PID)
	}
	if !slices.Contains(pids, in) || !slices.Contains(pids, named) || slices.Contains(pids, out) {
		t.Errorf("ProcessesUnder = %v; want %d and %d, not %d", pids, in, named, out)
	}
}

func TestProcessCPU(t *testing.T) {
	// A shell that burns CPU itself, then waits for a child that burns
	// more: the child's time shows as Children only once it was waited for.
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'; sleep 30`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var got CPU
	err := Eventually(t.Context(), 30*time.Second, "the child's CPU counted", func(context.Context) error {
		var err error
		if got, err = ProcessCPU(cmd.Process.Pid); err != nil {
			return err
		}
		if got.Own == 0 || got.Children == 0 {
			return fmt.Errorf("%+v", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ProcessCPU(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
