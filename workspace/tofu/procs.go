package tofu

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/tfccm/tfccm/workspace/locks"

	"k8s.io/klog/v2"
)

// Processes the engine starts, and what is left of them.
//
// terraform-exec starts every tofu command in a process group of its own
// (Setpgid) with a parent-death signal (Pdeathsig: SIGKILL), so tofu dies
// with the engine's process; step locks its OS thread while tofu runs,
// since Linux sends that signal when the forking thread exits, not the
// process. Providers tofu starts are in tofu's group but get no such
// signal: when tofu is killed they live on. So each command carries two
// variables that tofu passes on to everything it starts:
//
//	TFCCM_RUN=<engine pid>:<engine start time>:<command number>
//	TFCCM_WORKSPACE=<the workspace directory>
//
// A command that did not end cleanly (failed, timed out, cancelled) is
// ended as a whole: every process group holding a process of that run is
// killed (EndRun). At Start, an engine ends what an earlier incarnation
// left under its work dir (EndLeftovers): processes whose TFCCM_RUN names
// an engine that is gone, and processes without those variables whose
// working directory is under the work dir and whose process group leader
// is gone (a provider orphaned by a killed tofu of an older tfccm).
// tfccm's own lbhost provider also exits by itself when tofu is gone.
const (
	envRun       = "TFCCM_RUN"
	envWorkspace = "TFCCM_WORKSPACE"
)

// proc is what EndRun and EndLeftovers read of a process.
type proc struct {
	pid, pgid int
	run, ws   string // TFCCM_RUN, TFCCM_WORKSPACE ("" when not set)
	cwd       string
	cmd       string // argv[0]
}

// runs counts the tofu commands this process started, over all its
// engines: a run ID names one command of the process (two engines of one
// process numbering their own commands gave two commands one ID, and one
// engine's failed command ended the other's running apply).
var runs atomic.Uint64

// RunID names one tofu command of process c (the value of TFCCM_RUN).
func RunID(c locks.Claim) string {
	return fmt.Sprintf("%d:%d:%d", c.PID, c.PIDStart, runs.Add(1))
}

// RunEnv is the environment that marks a command's processes.
func RunEnv(id, dir string) map[string]string {
	return map[string]string{envRun: id, envWorkspace: dir}
}

// EndRun kills every process group holding a process of run id: what a
// tofu command that did not end cleanly left running (its providers).
func EndRun(id, workspace string) {
	ended := killGroups(func(p proc) bool { return p.run == id })
	if len(ended) > 0 {
		klog.InfoS("Ended the processes a tofu command left running", "workspace", workspace, "processes", ended)
	}
}

// EndLeftovers kills what earlier incarnations of this controller left
// running under workDir, before this engine runs anything there.
func EndLeftovers(workDir string) {
	under := func(p string) bool {
		return p == workDir || strings.HasPrefix(p, workDir+string(filepath.Separator))
	}
	ended := killGroups(func(p proc) bool {
		if p.run != "" {
			return under(p.ws) && !runOwnerAlive(p.run)
		}
		return under(p.cwd) && p.pgid != p.pid && !locks.ProcessAlive(p.pgid, 0)
	})
	for _, p := range ended {
		klog.InfoS("Ended a process an earlier incarnation left in its work dir", "process", p)
	}
}

// Marked describes the processes of this machine that carry a
// TFCCM_WORKSPACE under work: what the tofu commands run there started,
// and what those started (while they run).
func Marked(work string) []string {
	var out []string
	for _, p := range scanProcs() {
		if p.ws == work || strings.HasPrefix(p.ws, work+string(filepath.Separator)) {
			out = append(out, fmt.Sprintf("%d %s (run %s)", p.pid, p.cmd, p.run))
		}
	}
	return out
}

// killGroups sends SIGKILL to the process group of every process match
// accepts (to the process alone if it shares this process's group) and
// describes the processes it matched.
func killGroups(match func(proc) bool) []string {
	own, self := syscall.Getpgrp(), os.Getpid()
	var ended []string
	groups := map[int]bool{}
	for _, p := range scanProcs() {
		if p.pid == self || !match(p) {
			continue
		}
		ended = append(ended, p.String())
		switch {
		case p.pgid <= 1 || p.pgid == own:
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		case !groups[p.pgid]:
			groups[p.pgid] = true
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
	}
	return ended
}

func (p proc) String() string {
	ws := p.ws
	if ws == "" {
		ws = p.cwd
	}
	return fmt.Sprintf("%d %s (workspace %s)", p.pid, p.cmd, filepath.Base(ws))
}

// runOwnerAlive reports whether the engine named in a TFCCM_RUN value
// still runs.
func runOwnerAlive(run string) bool {
	f := strings.SplitN(run, ":", 3)
	if len(f) != 3 {
		return false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	return err1 == nil && err2 == nil && locks.ProcessAlive(pid, start)
}

// scanProcs reads every process of this machine that can be read (the
// same user's, or all for root). Processes that exit meanwhile are
// skipped.
func scanProcs() []proc {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	out := make([]proc, 0, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		p, err := readProc(d, pid)
		if err == nil {
			out = append(out, p)
		}
	}
	return out
}

func readProc(d string, pid int) (proc, error) {
	p := proc{pid: pid}
	stat, err := os.ReadFile(filepath.Join(d, "stat"))
	if err != nil {
		return p, err
	}
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 3 || f[0] == "Z" {
		return p, errors.New("zombie or unreadable")
	}
	p.pgid, _ = strconv.Atoi(f[2])
	if env, err := os.ReadFile(filepath.Join(d, "environ")); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			k, v, _ := strings.Cut(string(kv), "=")
			switch k {
			case envRun:
				p.run = v
			case envWorkspace:
				p.ws = v
			}
		}
	}
	p.cwd, _ = os.Readlink(filepath.Join(d, "cwd"))
	if cmd, err := os.ReadFile(filepath.Join(d, "cmdline")); err == nil {
		p.cmd, _, _ = strings.Cut(string(cmd), "\x00")
	}
	return p, nil
}
