package tofu

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/workspace/backends"
)

// A prepared .terraform: what init wrote into a workspace of one provider
// set (InitCache.Key), kept beside the shared lock file, so that a new
// workspace of the same template starts initialized without a tofu
// process: its providers (links into the mirror or plugin cache, or the
// unpacked files, hard-linked), its modules manifest and, with a backend
// block, the backend's recorded settings with this workspace's own values
// put in.
//
// tofu stays the judge. It accepts recorded backend settings that equal
// the configuration (and then records its own hash of them); anything it
// finds missing or different fails the plan with a diagnostic that runs
// init after all (needsReinit). Only fresh workspaces are seeded (no
// .terraform yet, no named Terraform workspace).
//
// With runner pods (Setup.Exec) the same holds for what travels: the
// engine's .terraform after a pod's init has no providers (they do not
// travel) but the pod's record of the links it made
// (workspace/jobrunner/providerlinks.go), so a seeded workspace's first
// command links its providers from the pod's plugin cache and runs alone.
// Without that, each new workspace's init in a pod listed every state
// with the kubernetes backend: 5.72 s per new load balancer at 200.
//
// The entry holds copies (tofu never writes there); a seeded workspace
// holds hard links to them, which it drops before tofu init runs in it
// (init rewrites installed files in place), so no init ever writes into a
// file another workspace shares.

// Files of a prepared entry, beside the shared lock file.
const (
	preparedDir     = "terraform"             // .terraform without its backend record
	preparedBackend = "backend.json"          // the donor's backend record and the sums of its values
	SeededMarker    = ".tfccm-prepared"       // in .terraform: its files are shared links
	preparedLockSum = "terraform.lock.sha256" // the lock file the prepared .terraform was initialized with
)

// preparedRecord is the donor workspace's backend record (its
// .terraform/terraform.tfstate) and, per setting tfccm wrote, the sum of
// the JSON value tofu recorded for it: a new workspace's record is the
// donor's with those settings replaced, and only when each recorded value
// is what tfccm wrote (the mapping is proven, not assumed).
type preparedRecord struct {
	Record json.RawMessage   `json:"record"`
	Sums   map[string]string `json:"sums"`
}

// backendValues are the backend settings tfccm gives init for spec: the
// attributes of the backend block and the secret settings of the
// -backend-config file, as tofu records them (JSON).
func backendValues(spec *DirSpec) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for k, v := range spec.Backend.Attributes {
		b, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			return nil, fmt.Errorf("backend setting %s: %w", k, err)
		}
		out[k] = b
	}
	_, file := backends.SplitSecrets(spec.Backend.Type, spec.BackendConfig)
	for k, v := range file {
		b, err := ctyjson.Marshal(cty.StringVal(v), cty.String)
		if err != nil {
			return nil, fmt.Errorf("backend setting %s: %w", k, err)
		}
		out[k] = b
	}
	return out, nil
}

func sumJSON(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err == nil {
		b = buf.Bytes()
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// KeepPrepared keeps dir's .terraform, just written by a successful init
// of spec, as key's prepared one (unless there is one already).
func (c *InitCache) KeepPrepared(dir, key string, spec *DirSpec) {
	if spec != nil && spec.NamedWorkspace() {
		return
	}
	entry := c.Entry(key)
	lock, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		return // no providers: init has little to do
	}
	if have, err := os.ReadFile(filepath.Join(entry, preparedLockSum)); err == nil && exists(filepath.Join(entry, preparedDir)) {
		if strings.TrimSpace(string(have)) == lockSum(lock) {
			return
		}
		// Prepared with another lock file: replaced by this one.
		_ = os.Remove(filepath.Join(entry, preparedLockSum))
		_ = os.RemoveAll(filepath.Join(entry, preparedDir))
	}
	var rec *preparedRecord
	if spec != nil && hasBackendBlock(spec) {
		var err error
		if rec, err = donorRecord(dir, spec); err != nil {
			klog.V(2).InfoS("Not keeping a prepared .terraform", "workspace", filepath.Base(dir), "reason", err)
			return
		}
	}
	if err := os.MkdirAll(entry, 0o700); err != nil {
		klog.InfoS("Could not keep a prepared .terraform", "workspace", filepath.Base(dir), "err", err)
		return
	}
	tmp, err := os.MkdirTemp(entry, ".prepare-")
	if err != nil {
		klog.InfoS("Could not keep a prepared .terraform", "workspace", filepath.Base(dir), "err", err)
		return
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(filepath.Join(dir, ".terraform"), filepath.Join(tmp, preparedDir), false, skipOwnRecord); err != nil {
		klog.InfoS("Could not keep a prepared .terraform", "workspace", filepath.Base(dir), "err", err)
		return
	}
	if rec != nil {
		b, err := json.Marshal(rec)
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, preparedBackend), b, 0o600)
		}
		if err != nil {
			klog.InfoS("Could not keep a prepared .terraform", "workspace", filepath.Base(dir), "err", err)
			return
		}
		if err := os.Rename(filepath.Join(tmp, preparedBackend), filepath.Join(entry, preparedBackend)); err != nil {
			return
		}
	}
	if err := os.WriteFile(filepath.Join(entry, preparedLockSum), []byte(lockSum(lock)+"\n"), 0o600); err != nil {
		return
	}
	// The directory last: a reader sees an entry only once it is whole.
	if err := os.Rename(filepath.Join(tmp, preparedDir), filepath.Join(entry, preparedDir)); err != nil && !errors.Is(err, fs.ErrExist) {
		klog.V(2).InfoS("Could not keep a prepared .terraform", "workspace", filepath.Base(dir), "err", err)
	}
}

// skipOwnRecord leaves out what belongs to one workspace: its backend
// record and selected Terraform workspace.
func skipOwnRecord(rel string) bool {
	return rel == backends.RecordFile || rel == "environment" || rel == SeededMarker
}

// UnlinkPrepared drops the shared links of a seeded .terraform in dir
// before tofu init writes there: init installs the providers and modules
// manifest again into files of this workspace's own. A backend record
// tofu never adopted (its hash is still the 0 seedRecord wrote) goes too:
// init then configures the backend afresh instead of asking to migrate
// from settings tfccm wrote (a record tofu adopted stays: it is what a
// changed backend migrates from).
func UnlinkPrepared(dir string) {
	dot := filepath.Join(dir, ".terraform")
	if !exists(filepath.Join(dot, SeededMarker)) {
		return
	}
	drop := []string{"providers", "modules", SeededMarker}
	if rec, err := backends.LoadRecord(dir); err == nil && rec.Unadopted() {
		drop = append(drop, backends.RecordFile)
	}
	for _, sub := range drop {
		if err := os.RemoveAll(filepath.Join(dot, sub)); err != nil {
			klog.InfoS("Could not drop a prepared .terraform's links; init runs over them", "workspace", filepath.Base(dir), "err", err)
		}
	}
}

// hasBackendBlock reports whether spec's files configure a backend (the
// local backend with no settings is tofu's default and needs no record).
func hasBackendBlock(spec *DirSpec) bool {
	return !spec.Backend.IsLocal() || len(spec.Backend.Attributes) > 0 || len(spec.BackendConfig) > 0
}

// donorRecord reads the backend record init wrote into dir and proves
// that each of spec's settings is recorded as tfccm wrote it.
func donorRecord(dir string, spec *DirSpec) (*preparedRecord, error) {
	donor, err := backends.LoadRecord(dir)
	if err != nil {
		return nil, err
	}
	config, err := donor.Settings()
	if err != nil {
		return nil, err
	}
	values, err := backendValues(spec)
	if err != nil {
		return nil, err
	}
	rec := &preparedRecord{Record: donor.Raw(), Sums: map[string]string{}}
	for k, v := range values {
		got, ok := config[k]
		if !ok || sumJSON(got) != sumJSON(v) {
			return nil, fmt.Errorf("backend setting %s is not recorded as written", k)
		}
		rec.Sums[k] = sumJSON(v)
	}
	return rec, nil
}

// SeedPrepared gives dir (a fresh workspace: no .terraform) key's
// prepared .terraform and, with spec's backend block, a backend record
// of spec's own settings. It reports whether dir is now initialized.
func (c *InitCache) SeedPrepared(dir, key string, spec *DirSpec) bool {
	if (spec != nil && spec.NamedWorkspace()) || exists(filepath.Join(dir, ".terraform")) {
		return false
	}
	entry := c.Entry(key)
	src := filepath.Join(entry, preparedDir)
	if !exists(src) {
		return false
	}
	// Only with the lock file it was initialized with (the shared one may
	// have been replaced since).
	lock, err := os.ReadFile(filepath.Join(dir, LockFile))
	want, serr := os.ReadFile(filepath.Join(entry, preparedLockSum))
	if err != nil || serr != nil || strings.TrimSpace(string(want)) != lockSum(lock) {
		return false
	}
	var record []byte
	if spec != nil && hasBackendBlock(spec) {
		var err error
		if record, err = c.seedRecord(entry, spec); err != nil {
			klog.V(2).InfoS("Running init: no prepared backend record", "workspace", filepath.Base(dir), "reason", err)
			return false
		}
	}
	tmp, err := os.MkdirTemp(dir, ".terraform-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(src, filepath.Join(tmp, "t"), true, nil); err != nil {
		klog.InfoS("Could not use the prepared .terraform; running init", "workspace", filepath.Base(dir), "err", err)
		return false
	}
	if record != nil {
		if err := os.WriteFile(filepath.Join(tmp, "t", backends.RecordFile), record, 0o600); err != nil {
			return false
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "t", SeededMarker), nil, 0o600); err != nil {
		return false
	}
	if err := os.Rename(filepath.Join(tmp, "t"), filepath.Join(dir, ".terraform")); err != nil {
		return false
	}
	return true
}

// seedRecord is spec's backend record: the donor's with spec's settings.
func (c *InitCache) seedRecord(entry string, spec *DirSpec) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(entry, preparedBackend))
	if err != nil {
		return nil, err
	}
	var rec preparedRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	values, err := backendValues(spec)
	if err != nil {
		return nil, err
	}
	if len(values) != len(rec.Sums) {
		return nil, errors.New("another set of backend settings than the prepared one")
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if _, ok := rec.Sums[k]; !ok {
			return nil, fmt.Errorf("backend setting %s is not in the prepared record", k)
		}
	}
	donor, err := backends.ParseRecord(rec.Record)
	if err != nil {
		return nil, err
	}
	return donor.WithSettings(values)
}

// copyTree copies the tree at src to dst: directories made, symbolic
// links recreated, regular files copied, or with link hard-linked (copied
// where a link is not possible). skip, if set, leaves out paths relative
// to src.
func copyTree(src, dst string, link bool, skip func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if skip != nil && rel != "." && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case d.Type().IsRegular():
			if link && os.Link(p, out) == nil {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return copyFile(p, out, info.Mode().Perm())
		}
		return nil
	})
}

// copyFile copies the regular file src to a new file dst (streamed:
// provider binaries are tens of MiB).
func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
