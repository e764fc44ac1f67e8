package jobrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCarried(t *testing.T) {
	for rel, want := range map[string]bool{
		"main.tf":                         true,
		"modules/lb/main.tf":              true,
		".terraform.lock.hcl":             true,
		".terraform/terraform.tfstate":    true,
		".terraform/modules/modules.json": true,
		".terraform/providers/registry.opentofu.org/x/y/1.0.0/linux_amd64/p": false,
		".tfccm/plan.tfplan":     true,
		".tfccm/applied.json":    false,
		".tfccm/claim.json":      false,
		".tfccm/applied/main.tf": false,
	} {
		if got := carried(rel); got != want {
			t.Errorf("carried(%q) = %v, want %v", rel, got, want)
		}
	}
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, s := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// A workspace packed, changed by the "runner" and synced back: new and
// changed files arrive, removed carried files go, the engine's own files
// stay.
func TestPackSyncRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, src, map[string]string{"main.tf": "a", ".tfccm/plan.tfplan": "plan", ".tfccm/claim.json": "claim", ".terraform/providers/p": "bin"})
	if err := os.Symlink("main.tf", filepath.Join(src, "link.tf")); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "in.auto.tfvars")
	write(t, filepath.Dir(outside), map[string]string{"in.auto.tfvars": "x = 1"})
	for _, d := range []string{src, dst} {
		if err := os.Symlink(outside, filepath.Join(d, "in.auto.tfvars")); err != nil {
			t.Fatal(err)
		}
	}
	write(t, dst, map[string]string{"main.tf": "old", "stale.tf": "x", ".tfccm/applied.json": "rec", ".terraform/providers/p": "local"})
	a := newArchive()
	if err := a.addDir(src); err != nil {
		t.Fatal(err)
	}
	if err := a.add(docName, 0o600, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	b, err := a.bytes()
	if err != nil {
		t.Fatal(err)
	}
	u, err := unpack(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.syncDir(dst); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"main.tf": "a", ".tfccm/plan.tfplan": "plan", ".tfccm/applied.json": "rec", ".terraform/providers/p": "local", "link.tf": "a"} {
		got, err := os.ReadFile(filepath.Join(dst, rel))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", rel, got, err, want)
		}
	}
	// A link out of the workspace travels as its file's content and stays
	// a link where it is one.
	if _, ok := func() (entry, bool) {
		for _, e := range u.ws {
			if e.rel == "in.auto.tfvars" && e.link == "" && string(e.data) == "x = 1" {
				return e, true
			}
		}
		return entry{}, false
	}(); !ok {
		t.Error("the link out of the workspace did not travel as its content")
	}
	if target, err := os.Readlink(filepath.Join(dst, "in.auto.tfvars")); err != nil || target != outside {
		t.Errorf("in.auto.tfvars is no longer a link to %s: %q, %v", outside, target, err)
	}
	for _, rel := range []string{"stale.tf", ".tfccm/claim.json"} {
		if _, err := os.Stat(filepath.Join(dst, rel)); err == nil {
			t.Errorf("%s is still there", rel)
		}
	}
}

func TestUnpackRefusesUnsafeNames(t *testing.T) {
	for _, name := range []string{"ws/../../etc/passwd", "/abs", "ws/.tfccm/claim.json"} {
		a := newArchive()
		if err := a.add(name, 0o600, []byte("x")); err != nil {
			t.Fatal(err)
		}
		b, _ := a.bytes()
		if _, err := unpack(b); err == nil {
			t.Errorf("%s: unpacked", name)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		size, parts int
		err         string
	}{
		{0, 1, ""},
		{PartSize, 1, ""},
		{PartSize + 1, 2, ""},
		{PartSize * MaxParts, MaxParts, ""},
		{PartSize*MaxParts + 1, 0, "workspace w packs to 7.0 MiB (gzip), above the job runner's limit of 7.0 MiB (8 Secrets of 900 KiB)"},
	} {
		parts, err := split(make([]byte, tc.size), "workspace w")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("size %d: error %v, want %q", tc.size, err, tc.err)
			}
			continue
		}
		if err != nil || len(parts) != tc.parts {
			t.Errorf("size %d: %d parts, %v; want %d", tc.size, len(parts), err, tc.parts)
		}
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		if n != tc.size {
			t.Errorf("size %d: parts hold %d bytes", tc.size, n)
		}
	}
}

func TestRequestShipsFilesNamedOutsideTheWorkspace(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	secretFile := filepath.Join(other, "w.tfbackend")
	write(t, other, map[string]string{"w.tfbackend": "token = \"s\""})
	a := newArchive()
	args := []string{"init", "-backend-config=" + secretFile, "-var-file=" + filepath.Join(dir, "in.tfvars"), "-lock-timeout=0s"}
	env := []string{"TF_IN_AUTOMATION=1", "PATH=/x", "KUBERNETES_SERVICE_HOST=h", EnvConfig + "={}", "TF_ENCRYPTION=k"}
	if err := newRequest(a, dir, args, env); err != nil {
		t.Fatal(err)
	}
	b, _ := a.bytes()
	u, err := unpack(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(u.extra["1"]) != `token = "s"` {
		t.Errorf("extra files %v", u.extra)
	}
	var req request
	if err := jsonUnmarshal(u.doc, &req); err != nil {
		t.Fatal(err)
	}
	got := req.resolve("/work/extra")
	want := []string{"init", "-backend-config=/work/extra/1", "-var-file=in.tfvars", "-lock-timeout=0s"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("args %q, want %q", got, want)
	}
	if len(req.Env) != 2 || req.Env["TF_ENCRYPTION"] != "k" || req.Env["TF_IN_AUTOMATION"] != "1" {
		t.Errorf("env %v: want TF_IN_AUTOMATION and TF_ENCRYPTION only", req.Env)
	}
}
