package nodes

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hierarchies lists the mount points of the host's cgroup hierarchies (v1
// controllers, named ones and a v2 "unified" one of a hybrid layout).
func hierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && (fields[2] == "cgroup" || fields[2] == "cgroup2") {
			out = append(out, fields[1])
		}
	}
	sort.Strings(out)
	return out, sc.Err()
}

// makeCgroupRoot creates root (e.g. /tfccm-t1-node-a) in every hierarchy,
// as kubelet with the cgroupfs driver requires; a new cpuset cgroup gets
// its parent's cpus and mems, or no task could join it.
func makeCgroupRoot(root string) error {
	hs, err := hierarchies()
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	for _, h := range hs {
		dir := filepath.Join(h, root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
				return fmt.Errorf("cgroups: %s: %w", filepath.Join(dir, f), err)
			}
		}
	}
	return nil
}

// cgroupPIDs lists the processes in root's cgroup subtree, in any hierarchy.
func cgroupPIDs(root string) ([]int, error) {
	hs, err := hierarchies()
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	for _, h := range hs {
		err := filepath.WalkDir(filepath.Join(h, root), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	pids := make([]int, 0, len(seen))
	for pid := range seen {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids, nil
}

// removeCgroupRoot kills every process left in root's subtree (the pods'
// containers) and removes its cgroup directories, deepest first, in every
// hierarchy.
func removeCgroupRoot(root string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids, err := cgroupPIDs(root)
		if err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups: processes %v in %s do not exit", pids, root)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	hs, err := hierarchies()
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	var errs []error
	for _, h := range hs {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		// Children sort after their parents: remove in reverse.
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := rmdirRetry(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// rmdirRetry removes an empty cgroup; a cgroup whose last task just died
// can be busy for a moment.
func rmdirRetry(dir string) error {
	var err error
	for i := 0; i < 50; i++ {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("cgroups: remove %s: %w", dir, err)
}

// CgroupLeftovers lists the cgroup directories named like a node's cgroup
// root (prefix "/tfccm-") in any hierarchy.
func CgroupLeftovers() []string {
	hs, _ := hierarchies()
	var out []string
	for _, h := range hs {
		m, _ := filepath.Glob(filepath.Join(h, cgroupPrefix+"*"))
		out = append(out, m...)
	}
	return out
}

// cgroupPrefix starts every node's cgroup root.
const cgroupPrefix = "tfccm-"
