package jobrunner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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
// stay, a link inside the workspace travels as a link.
func TestPackSyncRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, src, map[string]string{"main.tf": "a", "modules/lb/main.tf": "m", ".tfccm/plan.tfplan": "plan", ".tfccm/claim.json": "claim", ".terraform/providers/p": "bin"})
	for link, target := range map[string]string{"link.tf": "main.tf", "modules/up.tf": "../main.tf"} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	// tofu's links into the plugin cache (absolute, out of the workspace)
	// do not travel and are not refused.
	if err := os.Symlink(t.TempDir(), filepath.Join(src, ".terraform/providers/cached")); err != nil {
		t.Fatal(err)
	}
	write(t, dst, map[string]string{"main.tf": "old", "stale.tf": "x", ".tfccm/applied.json": "rec", ".terraform/providers/p": "local"})
	u, err := unpack(packed(t, src))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.syncDir(dst); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"main.tf": "a", ".tfccm/plan.tfplan": "plan", ".tfccm/applied.json": "rec", ".terraform/providers/p": "local", "link.tf": "a", "modules/up.tf": "a"} {
		got, err := os.ReadFile(filepath.Join(dst, rel))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", rel, got, err, want)
		}
	}
	if target, err := os.Readlink(filepath.Join(dst, "link.tf")); err != nil || target != "main.tf" {
		t.Errorf("link.tf is not a link to main.tf: %q, %v", target, err)
	}
	for _, rel := range []string{"stale.tf", ".tfccm/claim.json"} {
		if _, err := os.Stat(filepath.Join(dst, rel)); err == nil {
			t.Errorf("%s is still there", rel)
		}
	}
}

// packed is dir packed as a workspace archive with an empty document.
func packed(t *testing.T, dir string) []byte {
	t.Helper()
	a := newArchive()
	if err := a.addDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := a.add(docName, 0o600, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	b, err := a.bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Packing never follows a link out of the workspace: one there (a runner
// that planted it in an earlier result, or anything else) is refused,
// naming it, and its target is never read.
func TestPackRefusesLinksOutOfTheWorkspace(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "token")
	write(t, filepath.Dir(outside), map[string]string{"token": "s3cret-token"})
	for _, tc := range []struct{ link, target, want string }{
		{"token.tf", outside, "link token.tf -> " + outside + " is absolute"},
		{"token.tf", "/var/run/secrets/kubernetes.io/serviceaccount/token", "link token.tf -> /var/run/secrets/kubernetes.io/serviceaccount/token is absolute"},
		{"modules/x.tf", "../../token", "link modules/x.tf -> ../../token leads out of the workspace"},
		{".terraform/modules/m", "../../../other-ws", "link .terraform/modules/m -> ../../../other-ws leads out of the workspace"},
	} {
		t.Run(tc.link, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{"main.tf": "a", "modules/lb/main.tf": "m", ".terraform/modules/modules.json": "{}"})
			if err := os.Symlink(tc.target, filepath.Join(dir, tc.link)); err != nil {
				t.Fatal(err)
			}
			a := newArchive()
			err := a.addDir(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrLink) {
				t.Fatalf("pack: %v; want an error naming %q", err, tc.want)
			}
			b, _ := a.bytes()
			if bytes.Contains(b, []byte("s3cret")) {
				t.Error("the link's target was packed")
			}
		})
	}
}

// crafted is an archive of workspace entries as a runner pod may send
// them (links among files, in any order).
type craftedEntry struct {
	name, link, data string
}

func crafted(t *testing.T, entries ...craftedEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o600, Size: int64(len(e.data)), Typeflag: tar.TypeReg}
		if e.link != "" {
			h = &tar.Header{Name: e.name, Linkname: e.link, Mode: 0o777, Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A result archive that reaches out of the workspace is refused whole,
// naming the entry, and nothing is written: not in the workspace, not
// beyond it (in another workspace, over the CCM's files).
func TestUnpackRefusesLinksOutOfTheWorkspace(t *testing.T) {
	doc := craftedEntry{name: docName, data: `{"exit":0}`}
	for _, tc := range []struct {
		name    string
		entries []craftedEntry
		want    string
	}{
		{"escaping link", []craftedEntry{{name: "ws/x.tf", link: "../other-ws/main.tf"}}, "link x.tf -> ../other-ws/main.tf leads out of the workspace"},
		{"escaping link in a directory", []craftedEntry{{name: "ws/modules/lb/x.tf", link: "../../../../etc/passwd"}}, "link modules/lb/x.tf -> ../../../../etc/passwd leads out of the workspace"},
		{"absolute link", []craftedEntry{{name: "ws/x.tf", link: "/etc/passwd"}}, "link x.tf -> /etc/passwd is absolute"},
		{"service account token", []craftedEntry{{name: "ws/token.auto.tfvars", link: "/var/run/secrets/kubernetes.io/serviceaccount/token"}},
			"link token.auto.tfvars -> /var/run/secrets/kubernetes.io/serviceaccount/token is absolute"},
		{"write through a link", []craftedEntry{{name: "ws/d", link: "modules"}, {name: "ws/d/main.tf", data: "x"}}, "d/main.tf lies beyond link d"},
		{"write through a later link", []craftedEntry{{name: "ws/d/main.tf", data: "x"}, {name: "ws/d", link: "modules"}}, "d/main.tf lies beyond link d"},
		{"write through an escaping link", []craftedEntry{{name: "ws/up", link: ".."}, {name: "ws/up/other-ws/main.tf", data: "x"}}, "link up -> .. leads out of the workspace"},
		{"link through a link", []craftedEntry{{name: "ws/d", link: "modules"}, {name: "ws/d/x.tf", link: "main.tf"}}, "d/x.tf lies beyond link d"},
		{"link to the workspace itself", []craftedEntry{{name: "ws/y.tf", link: "."}, {name: "ws/y.tf/z", data: "x"}}, "y.tf/z lies beyond link y.tf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "ws")
			write(t, dir, map[string]string{"main.tf": "a", "modules/lb/main.tf": "m"})
			write(t, parent, map[string]string{"other-ws/main.tf": "theirs"})
			b := crafted(t, append([]craftedEntry{doc}, tc.entries...)...)
			_, err := decodeResult(b, dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrLink) {
				t.Fatalf("result: %v; want an error naming %q", err, tc.want)
			}
			if got := tree(t, parent); got != "ws/main.tf=a ws/modules/lb/main.tf=m other-ws/main.tf=theirs" && got != "other-ws/main.tf=theirs ws/main.tf=a ws/modules/lb/main.tf=m" {
				t.Errorf("files after the refused result: %s", got)
			}
		})
	}
}

// A link already in the workspace (an earlier version's, or made by hand)
// is never written through: an entry beyond it is refused.
func TestSyncRefusesWritesThroughALinkOnDisk(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ws")
	write(t, dir, map[string]string{"main.tf": "a"})
	write(t, parent, map[string]string{"other-ws/main.tf": "theirs"})
	if err := os.Symlink("../other-ws", filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	b := crafted(t, craftedEntry{name: docName, data: `{}`}, craftedEntry{name: "ws/d/main.tf", data: "mine"})
	_, err := decodeResult(b, dir)
	if err == nil || !strings.Contains(err.Error(), "d/main.tf: lies beyond link d") {
		t.Fatalf("result: %v; want the entry beyond link d refused", err)
	}
	if got, _ := os.ReadFile(filepath.Join(parent, "other-ws/main.tf")); string(got) != "theirs" {
		t.Errorf("another workspace's file was written: %q", got)
	}
}

// tree lists the regular files under dir as rel=content, sorted.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel)+"="+string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
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
