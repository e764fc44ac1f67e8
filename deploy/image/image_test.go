package image

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tfccm/tfccm/config"
)

var created = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// inputs writes fake binaries, a CA bundle and a provider mirror into a new
// directory, touching them with mtime and creating the mirror's files in
// the given order, and returns the Spec over them.
func inputs(t *testing.T, mtime time.Time, providerOrder []string) Spec {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, body string, mode os.FileMode) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s := Spec{
		CCM:      write("ccm", "ccm-binary", 0o700),
		CLI:      write("tfccm", "cli-binary", 0o755),
		Tofu:     write("tofu", "tofu-binary", 0o750),
		CABundle: write("ca.crt", pem, 0o600),
		License:  write("LICENSE", "Apache License", 0o600),
		Created:  created,
		Labels:   map[string]string{"org.opencontainers.image.revision": "abc"},
	}
	providers := map[string]string{
		"registry.opentofu.org/hashicorp/null/3.2.0/linux_amd64/terraform-provider-null_v3.2.0": "null",
		"registry.opentofu.org/hashicorp/null/index.json":                                       "{}",
		"example.com/acme/widget/1.0.0/linux_amd64/terraform-provider-widget":                   "widget",
	}
	for _, rel := range providerOrder {
		mode := os.FileMode(0o600)
		if strings.Contains(rel, "terraform-provider-") {
			mode = 0o700
		}
		write(filepath.Join("mirror", rel), providers[rel], mode)
	}
	s.Providers = filepath.Join(dir, "mirror")
	return s
}

var order1 = []string{
	"registry.opentofu.org/hashicorp/null/3.2.0/linux_amd64/terraform-provider-null_v3.2.0",
	"registry.opentofu.org/hashicorp/null/index.json",
	"example.com/acme/widget/1.0.0/linux_amd64/terraform-provider-widget",
}
var order2 = []string{order1[2], order1[1], order1[0]}

func digest(t *testing.T, s Spec) v1.Hash {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestReproducible: the digest depends on the inputs' content and the
// creation time only — not on file times, host modes, paths, creation
// order or the umask.
func TestReproducible(t *testing.T) {
	a := digest(t, inputs(t, time.Unix(1, 0), order1))
	b := digest(t, inputs(t, time.Now(), order2))
	if a != b {
		t.Fatalf("same content, different digests: %s vs %s", a, b)
	}
	s := inputs(t, time.Now(), order1)
	s.Created = created.Add(time.Second)
	if d := digest(t, s); d == a {
		t.Errorf("a different creation time gave the same digest")
	}
	s = inputs(t, time.Now(), order1)
	if err := os.WriteFile(s.Tofu, []byte("tofu-binary2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d := digest(t, s); d == a {
		t.Errorf("a different tofu binary gave the same digest")
	}
	s = inputs(t, time.Now(), order1[:2])
	if d := digest(t, s); d == a {
		t.Errorf("a different provider mirror gave the same digest")
	}
}

type fileInfo struct {
	mode     int64
	uid, gid int
	typ      byte
	body     string
	mtime    time.Time
}

func flatten(t *testing.T, img v1.Image) map[string]fileInfo {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]fileInfo{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out["/"+strings.TrimSuffix(h.Name, "/")] = fileInfo{h.Mode, h.Uid, h.Gid, h.Typeflag, string(b), h.ModTime}
	}
}

func TestContent(t *testing.T) {
	img, err := Build(inputs(t, time.Now(), order1))
	if err != nil {
		t.Fatal(err)
	}
	files := flatten(t, img)
	for p, want := range map[string]fileInfo{
		CCM:                 {mode: 0o755, typ: tar.TypeReg, body: "ccm-binary"},
		BinDir + "/tfccm":   {mode: 0o755, typ: tar.TypeReg, body: "cli-binary"},
		BinDir + "/tofu":    {mode: 0o755, typ: tar.TypeReg, body: "tofu-binary"},
		CABundle:            {mode: 0o644, typ: tar.TypeReg, body: pem},
		LicenseFile:         {mode: 0o644, typ: tar.TypeReg, body: "Apache License"},
		WorkDir:             {mode: 0o755, uid: UID, gid: GID, typ: tar.TypeDir},
		"/tmp":              {mode: 0o1777, typ: tar.TypeDir},
		"/etc/tfccm/config": {mode: 0o755, typ: tar.TypeDir},
		ProviderMirror + "/example.com/acme/widget/1.0.0/linux_amd64/terraform-provider-widget": {mode: 0o755, typ: tar.TypeReg, body: "widget"},
		ProviderMirror + "/registry.opentofu.org/hashicorp/null/index.json":                     {mode: 0o644, typ: tar.TypeReg, body: "{}"},
		ProviderMirror + "/example.com/acme":                                                    {mode: 0o755, typ: tar.TypeDir},
	} {
		got, ok := files[p]
		if !ok {
			t.Errorf("%s missing", p)
			continue
		}
		if !got.mtime.Equal(created) {
			t.Errorf("%s: mtime %s", p, got.mtime)
		}
		got.mtime = time.Time{}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", p, got, want)
		}
	}
	for p, f := range files {
		if !f.mtime.Equal(created) {
			t.Errorf("%s: mtime %s", p, f.mtime)
		}
		if f.typ != tar.TypeReg && f.typ != tar.TypeDir {
			t.Errorf("%s: type %c", p, f.typ)
		}
	}
	if !strings.Contains(files["/etc/passwd"].body, "tfccm:x:65532:65532:tfccm:/var/lib/tfccm:") ||
		!strings.Contains(files["/etc/group"].body, "tfccm:x:65532:") {
		t.Errorf("no user 65532:\n%s%s", files["/etc/passwd"].body, files["/etc/group"].body)
	}
	if rc := files[CLIConfig].body; !strings.Contains(rc, `path = "`+ProviderMirror+`"`) ||
		!strings.Contains(rc, `include = ["example.com/acme/widget", "registry.opentofu.org/hashicorp/null"]`) ||
		!strings.Contains(rc, `exclude = ["example.com/acme/widget", "registry.opentofu.org/hashicorp/null"]`) {
		t.Errorf("CLI config does not name the mirror:\n%s", rc)
	}

	if lock := files[ProviderLockFile].body; !strings.Contains(lock, `provider "example.com/acme/widget"`) || !strings.Contains(lock, `"h1:`) {
		t.Errorf("the providers' lock file does not lock the mirror's provider:\n%s", lock)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || c.WorkingDir != WorkDir || strings.Join(c.Entrypoint, " ") != CCM {
		t.Errorf("config: user %q, workdir %q, entrypoint %q", c.User, c.WorkingDir, c.Entrypoint)
	}
	if env := strings.Join(c.Env, "\n"); !strings.Contains(env, "TF_CLI_CONFIG_FILE="+CLIConfig) {
		t.Errorf("env lacks TF_CLI_CONFIG_FILE: %s", env)
	}
	if c.Labels["org.opencontainers.image.revision"] != "abc" || c.Labels["org.opencontainers.image.licenses"] != "Apache-2.0" || !cf.Created.Time.Equal(created) || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("labels %v, created %s, platform %s/%s", c.Labels, cf.Created, cf.OS, cf.Architecture)
	}
	for _, h := range cf.History {
		if !h.Created.Time.Equal(created) {
			t.Errorf("history entry %q created %s", h.CreatedBy, h.Created)
		}
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	if n := len(cf.RootFS.DiffIDs); n != 4 {
		t.Errorf("%d layers, want 4 (base, tofu, tfccm, providers)", n)
	}
}

// TestWrite reads the layout and the tarball back: both hold the image
// with its digest, under the given name.
func TestWrite(t *testing.T) {
	img, err := Build(inputs(t, time.Now(), order1))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	dir := t.TempDir()
	const ref = "ghcr.io/tfccm/tfccm:test"
	if err := WriteLayout(filepath.Join(dir, "oci"), img, ref); err != nil {
		t.Fatal(err)
	}
	// Writing again replaces the layout rather than adding a second image.
	if err := WriteLayout(filepath.Join(dir, "oci"), img, ref); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != want || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "test" {
		t.Errorf("layout index: %+v, want one image %s tagged test", m.Manifests, want)
	}

	if err := WriteTarball(filepath.Join(dir, "image.tar"), img, ref); err != nil {
		t.Fatal(err)
	}
	// A docker-archive has no manifest of its own (the loader writes one):
	// the image ID (config digest) and the layers are what it carries.
	tag, _ := name.NewTag(ref)
	back, err := tarball.ImageFromPath(filepath.Join(dir, "image.tar"), &tag)
	if err != nil {
		t.Fatal(err)
	}
	wantID, _ := img.ConfigName()
	if id, err := back.ConfigName(); err != nil || id != wantID {
		t.Errorf("tarball holds image ID %s (%v), want %s", id, err, wantID)
	}
	wantLayers, _ := img.Layers()
	gotLayers, err := back.Layers()
	if err != nil || len(gotLayers) != len(wantLayers) {
		t.Fatalf("tarball layers: %d (%v), want %d", len(gotLayers), err, len(wantLayers))
	}
	for i := range gotLayers {
		g, _ := gotLayers[i].Digest()
		w, _ := wantLayers[i].Digest()
		if g != w {
			t.Errorf("tarball layer %d: %s, want %s", i, g, w)
		}
	}
	if err := WriteTarball(filepath.Join(dir, "x.tar"), img, "not a ref"); err == nil {
		t.Error("an invalid reference was accepted")
	}
}

func TestBuildRejects(t *testing.T) {
	s := inputs(t, time.Now(), order1)
	s.Tofu = ""
	if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "tofu") {
		t.Errorf("no tofu: %v", err)
	}
	s = inputs(t, time.Now(), order1)
	if err := os.WriteFile(s.CABundle, []byte("not pem"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "PEM") {
		t.Errorf("bad CA bundle: %v", err)
	}
	s = inputs(t, time.Now(), order1)
	if err := os.Symlink("/dev/null", filepath.Join(s.Providers, "dev")); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("device in the mirror: %v", err)
	}
}

func TestUnpack(t *testing.T) {
	img, err := Build(inputs(t, time.Now(), order1))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rootfs")
	if err := Unpack(img, dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "tmp"))
	if err != nil || st.Mode().Perm() != 0o777 || st.Mode()&os.ModeSticky == 0 {
		t.Errorf("/tmp: %v %v", st.Mode(), err)
	}
	b, err := os.ReadFile(filepath.Join(dir, CCM))
	if err != nil || string(b) != "ccm-binary" {
		t.Errorf("CCM: %q %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(dir, CCM)); err != nil || st.Mode().Perm() != 0o755 || !st.ModTime().Equal(created) {
		t.Errorf("CCM mode/mtime: %v %v", st, err)
	}
}

// TestLayersRefuse: each step of Layers refuses what it reads with an
// error naming it: a file not given, the base layer's inputs, a binary,
// the provider mirror; with every input there, four layers in order.
func TestLayersRefuse(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*Spec)
		want string
	}{
		{"no CCM", func(s *Spec) { s.CCM = "" }, "image: no CCM binary given"},
		{"no licence", func(s *Spec) { s.License = "" }, "image: no LICENSE given"},
		{"unreadable CA bundle", func(s *Spec) { s.CABundle = "/nonexistent/ca.crt" }, "image: CA bundle: open /nonexistent/ca.crt"},
		{"unreadable licence", func(s *Spec) { s.License = "/nonexistent/LICENSE" }, "image: LICENSE: open /nonexistent/LICENSE"},
		{"missing mirror", func(s *Spec) { s.Providers = "/nonexistent/mirror" }, "image: providers: open /nonexistent/mirror"},
		{"missing tofu", func(s *Spec) { s.Tofu = "/nonexistent/tofu" }, "/nonexistent/tofu"},
		{"missing tfccm", func(s *Spec) { s.CLI = "/nonexistent/tfccm" }, "/nonexistent/tfccm"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := inputs(t, time.Now(), order1)
			tt.mod(&s)
			if _, err := Layers(s); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	ls, err := Layers(inputs(t, time.Now(), order1))
	if err != nil {
		t.Fatal(err)
	}
	var by []string
	for _, l := range ls {
		by = append(by, l.CreatedBy)
	}
	want := []string{"base: user 65532, CA bundle, OpenTofu CLI config, work dir, LICENSE", "tofu", "terraform-cloud-controller-manager, tfccm", "providers from mirror"}
	if !slices.Equal(by, want) {
		t.Errorf("layers %q, want %q", by, want)
	}
}

// TestWorkDirIsConfigDefault: the image's writable work dir is where the
// cloud config puts work_dir when it names none.
func TestWorkDirIsConfigDefault(t *testing.T) {
	if WorkDir != config.DefaultWorkDir {
		t.Errorf("image work dir %s, cloud config default %s", WorkDir, config.DefaultWorkDir)
	}
}
