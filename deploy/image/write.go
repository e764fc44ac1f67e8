package image

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WriteLayout replaces dir with an OCI image layout holding img, tagged ref
// (annotation org.opencontainers.image.ref.name), e.g. for
// `skopeo copy oci:DIR docker://...` or `ctr images import`.
func WriteLayout(dir string, img v1.Image, ref string) error {
	p, named, err := newLayout(dir, ref)
	if err != nil {
		return err
	}
	return p.AppendImage(img, named)
}

// newLayout replaces dir with an empty OCI image layout and returns it with
// the option that names an entry ref.
func newLayout(dir, ref string) (layout.Path, layout.Option, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return "", nil, fmt.Errorf("image: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", nil, err
	}
	return p, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.TagStr(),
		"io.containerd.image.name":          tag.Name(),
	}), nil
}

// WriteTarball writes img as a `docker load` / `podman load` archive tagged
// ref.
func WriteTarball(path string, img v1.Image, ref string) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Unpack writes img's flattened file system into dir (which must be empty
// or missing), keeping modes and, when run as root, owners: a root file
// system for an OCI runtime bundle (`runc run --bundle`).
func Unpack(img v1.Image, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	root := os.Geteuid() == 0
	var dirs []*tar.Header
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		rel := filepath.Clean("/" + h.Name)
		if rel == "/" {
			continue
		}
		p := filepath.Join(dir, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, h)
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if err := setMeta(p, h, root); err != nil {
				return err
			}
		default:
			return fmt.Errorf("image: unpack: %s has unsupported type %c", h.Name, h.Typeflag)
		}
	}
	// Directories last, so that a read-only mode does not stop the files.
	for _, h := range dirs {
		if err := setMeta(filepath.Join(dir, filepath.Clean("/"+h.Name)), h, root); err != nil {
			return err
		}
	}
	return nil
}

func setMeta(p string, h *tar.Header, root bool) error {
	if root {
		if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
			return err
		}
	}
	mode := os.FileMode(h.Mode & 0o777)
	if h.Mode&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	if err := os.Chmod(p, mode); err != nil {
		return err
	}
	return os.Chtimes(p, h.ModTime, h.ModTime)
}

// Index is a multi-platform image index over imgs (one per platform, the
// platform read from each image's config), e.g. linux/amd64 + linux/arm64.
func Index(imgs ...v1.Image) (v1.ImageIndex, error) {
	adds := make([]mutate.IndexAddendum, 0, len(imgs))
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
			},
		})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

// WriteIndexLayout replaces dir with an OCI image layout holding the
// multi-platform idx, tagged ref like WriteLayout's image.
func WriteIndexLayout(dir string, idx v1.ImageIndex, ref string) error {
	p, named, err := newLayout(dir, ref)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, named)
}
