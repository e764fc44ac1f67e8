package harness

import (
	"os"
	"os/exec"
	"slices"
	"testing"
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
