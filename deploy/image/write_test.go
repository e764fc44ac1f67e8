package image

import (
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestIndexLayout: one image per architecture becomes a multi-platform
// OCI index whose layout names the ref and lists each image with its
// platform; the same images give the same index digest.
func TestIndexLayout(t *testing.T) {
	build := func() v1.ImageIndex {
		var imgs []v1.Image
		for _, arch := range []string{"amd64", "arm64"} {
			s := inputs(t, time.Now(), order1)
			s.Arch = arch
			img, err := Build(s)
			if err != nil {
				t.Fatal(err)
			}
			imgs = append(imgs, img)
		}
		idx, err := Index(imgs...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	idx := build()
	dir := filepath.Join(t.TempDir(), "oci")
	if err := WriteIndexLayout(dir, idx, "tfccm.test/tfccm:v1.2.3"); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	om, err := outer.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(om.Manifests) != 1 || om.Manifests[0].MediaType != types.OCIImageIndex ||
		om.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1.2.3" {
		t.Fatalf("layout index.json: %+v", om.Manifests)
	}
	inner, err := outer.ImageIndex(om.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var archs []string
	for _, m := range im.Manifests {
		if m.Platform == nil || m.Platform.OS != "linux" {
			t.Fatalf("manifest without linux platform: %+v", m)
		}
		archs = append(archs, m.Platform.Architecture)
		img, err := inner.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Architecture != m.Platform.Architecture {
			t.Errorf("image for %s has architecture %v (%v)", m.Platform.Architecture, cf.Architecture, err)
		}
	}
	if len(archs) != 2 || archs[0] != "amd64" || archs[1] != "arm64" {
		t.Errorf("platforms %v", archs)
	}
	a, _ := idx.Digest()
	b, _ := build().Digest()
	if a != b {
		t.Errorf("same images, index digests %s and %s", a, b)
	}
}
