package locks

// State locks and claims: the lock tofu reports when it cannot take one,
// the claim file an engine writes before it runs tofu in a workspace, and
// the decision whether a lock was left by an earlier incarnation of this
// controller (which may release it) or is anyone else's (never stolen).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tfccm/tfccm/internal/fsutil"
)

// ClaimFile is the claim's path inside a workspace directory.
const ClaimFile = ".tfccm/claim.json"

// LockInfo is the state lock tofu reports when it cannot acquire it.
type LockInfo struct {
	ID, Path, Operation, Who, Created string
}

var lockField = regexp.MustCompile(`(?m)^[│ \t]*(ID|Path|Operation|Who|Created):[ \t]*(.*?)[ \t]*$`)

// ParseLockError extracts the lock info from tofu's stderr, if the failure
// is a held state lock: "Error acquiring the state lock" (plan, apply,
// destroy, refresh, import) or, from init, "Error loading state: the state
// is already locked by another tofu client".
func ParseLockError(stderr string) (LockInfo, bool) {
	if !strings.Contains(stderr, "Error acquiring the state lock") &&
		!(strings.Contains(stderr, "Lock Info:") && strings.Contains(stderr, "already locked")) {
		return LockInfo{}, false
	}
	var li LockInfo
	for _, m := range lockField.FindAllStringSubmatch(stderr, -1) {
		switch m[1] {
		case "ID":
			li.ID = m[2]
		case "Path":
			li.Path = m[2]
		case "Operation":
			li.Operation = m[2]
		case "Who":
			li.Who = m[2]
		case "Created":
			li.Created = m[2]
		}
	}
	return li, li.ID != ""
}

// Holder says who holds the lock, since when and its ID, for messages.
func (li LockInfo) Holder() string {
	s := li.Who
	if s == "" {
		s = "unknown Holder"
	}
	if li.Operation != "" {
		s += " (" + strings.TrimPrefix(li.Operation, "OperationType") + ")"
	}
	if li.Created != "" {
		s += " since " + li.Created
		if t, err := parseLockTime(li.Created); err == nil {
			s += " (" + time.Since(t).Round(time.Second).String() + " ago)"
		}
	}
	return s + ", lock ID " + li.ID
}

// Claim is written to .tfccm/claim.json before the engine runs tofu in a
// workspace and removed when the run ends. If the controller dies
// mid-run, the claim survives and identifies the lock tofu left behind as
// this controller's own.
type Claim struct {
	Identity string    `json:"identity"`
	Host     string    `json:"host"`
	Who      string    `json:"who"` // user@host, as tofu records it in a lock
	PID      int       `json:"pid"`
	PIDStart uint64    `json:"pid_start"` // /proc/<pid>/stat starttime
	BootID   string    `json:"boot_id"`
	Op       string    `json:"op"`
	Started  time.Time `json:"started"`
}

// ClaimPath is the claim file of workspace directory dir.
func ClaimPath(dir string) string { return filepath.Join(dir, ClaimFile) }

// SelfClaim describes this process.
func SelfClaim(identity, op string) Claim {
	host, _ := os.Hostname()
	return Claim{
		Identity: identity,
		Host:     host,
		Who:      TofuWho(),
		PID:      os.Getpid(),
		PIDStart: ProcStart(os.Getpid()),
		BootID:   bootID(),
		Op:       op,
		Started:  time.Now().UTC(),
	}
}

// WriteClaim writes c as dir's claim.
func WriteClaim(dir string, c Claim) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(ClaimPath(dir), b, 0o600); err != nil {
		return fmt.Errorf("write claim: %w", err)
	}
	return nil
}

// ReadClaim reads dir's claim; false when there is none (or it is not
// readable).
func ReadClaim(dir string) (Claim, bool) {
	b, err := os.ReadFile(ClaimPath(dir))
	if err != nil {
		return Claim{}, false
	}
	var c Claim
	if json.Unmarshal(b, &c) != nil {
		return Claim{}, false
	}
	return c, true
}

// RemoveClaim removes dir's claim.
func RemoveClaim(dir string) {
	if err := os.Remove(ClaimPath(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = err // a leftover claim only matters together with a leftover lock
	}
}

// StaleOwnLock decides whether lock li was left by an earlier incarnation
// of this controller: the workspace's claim must name the lock's holder
// (tofu's user@host) and be ours (same identity), and the process that
// wrote it must be gone (or be this process, which is not running tofu in
// this workspace now since runs are serialized per workspace).
func StaleOwnLock(li LockInfo, c Claim, self Claim) bool {
	if c.Identity != self.Identity || li.Who == "" || li.Who != c.Who {
		return false
	}
	if created, err := parseLockTime(li.Created); err == nil && created.Before(c.Started.Add(-time.Minute)) {
		return false // the lock predates our claim: someone else's
	}
	if c.Host != self.Host {
		// An earlier pod of this deployment (identity is unique per
		// deployment and leader election allows one incarnation).
		return true
	}
	if c.BootID != "" && c.BootID != self.BootID {
		return true
	}
	if c.PID == self.PID && c.PIDStart == self.PIDStart {
		return true
	}
	return !ProcessAlive(c.PID, c.PIDStart)
}

// GoneHolder reports whether lock li was left by an earlier incarnation of
// c's controller that gone says is gone (Options.GoneLockHolder).
func (c Claim) GoneHolder(li LockInfo, gone func(who string) bool) bool {
	return gone != nil && li.Who != "" && li.Who != c.Who && gone(li.Who)
}

// LockOwner is the "user@host" tofu records as the holder of the locks
// this process takes.
func LockOwner() string { return TofuWho() }

func parseLockTime(s string) (time.Time, error) {
	// Go's time.Time.String format, as tofu prints it.
	if i := strings.Index(s, " m="); i >= 0 {
		s = s[:i]
	}
	return time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", s)
}

// ProcessAlive reports whether process pid, started at start (ProcStart;
// 0: unknown), still runs; a zombie counts as dead.
func ProcessAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && errors.Is(err, syscall.ESRCH) {
		return false
	}
	if st := ProcStart(pid); start != 0 && st != 0 && st != start {
		return false // pid reused
	}
	// Zombies count as dead.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// ProcStart is field 22 (starttime) of /proc/<pid>/stat, 0 if unknown.
func ProcStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// TofuWho is the "Who" tofu records in a lock: user@hostname.
func TofuWho() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
