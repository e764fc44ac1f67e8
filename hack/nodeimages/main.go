// Command nodeimages builds the container images real-node clusters run
// (they cannot be pulled here) as `ctr images import` archives, with
// deploy/image's reproducible builder: registry.k8s.io/pause (test/nodes/pause)
// and the e2e framework's agnhost, each one static binary. With --rootfs,
// agnhost's image has that root filesystem (a tar: the minimal Debian with a
// shell and network tools that hack/agnhost-rootfs.sh makes) as its first
// layer, as the upstream image has: many e2e specs run `sh -c "curl ..."` in
// agnhost pods.
//
//	go run ./hack/nodeimages --bin bin --out bin/images [--rootfs FILE]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/tfccm/tfccm/deploy/image"
	"github.com/tfccm/tfccm/test/nodes"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "nodeimages:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("nodeimages", flag.ContinueOnError)
	bin := fs.String("bin", "bin", "directory with the pause and agnhost binaries")
	out := fs.String("out", "bin/images", "directory for <name>.tar")
	// A fixed time: the same binaries give the same image.
	created := fs.Int64("created", 1767225600, "creation time, Unix seconds")
	rootfs := fs.String("rootfs", "", "root filesystem tar under agnhost (empty: agnhost alone)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, img := range []struct {
		name, ref string
		spec      image.SmallSpec
	}{
		{"pause", nodes.PauseImage, image.SmallSpec{
			Files: map[string]string{"/pause": filepath.Join(*bin, "pause")}, Entrypoint: []string{"/pause"}}},
		{"agnhost", nodes.AgnhostImage, image.SmallSpec{
			Files: map[string]string{"/agnhost": filepath.Join(*bin, "agnhost")}, Entrypoint: []string{"/agnhost"}}},
	} {
		img.spec.Created = time.Unix(*created, 0)
		i, err := image.BuildSmall(img.spec)
		if err != nil {
			return fmt.Errorf("%s: %w", img.name, err)
		}
		if img.name == "agnhost" && *rootfs != "" {
			if i, err = onRootfs(i, *rootfs); err != nil {
				return fmt.Errorf("%s: %w", img.name, err)
			}
		}
		path := filepath.Join(*out, img.name+".tar")
		if err := image.WriteTarball(path, i, img.ref); err != nil {
			return fmt.Errorf("%s: %w", img.name, err)
		}
		d, _ := i.Digest()
		fmt.Printf("%s %s %s\n", img.ref, d, path)
	}
	return nil
}

// onRootfs returns img with the root filesystem tar under its layers (its
// platform, config and creation time kept).
func onRootfs(img v1.Image, rootfs string) (v1.Image, error) {
	base, err := tarball.LayerFromFile(rootfs, tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("rootfs %s: %w", rootfs, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	out, err := mutate.AppendLayers(empty.Image, append([]v1.Layer{base}, layers...)...)
	if err != nil {
		return nil, err
	}
	// The layers' diff IDs and history come from out; the platform (ctr
	// import filters by it), the config and the time from img.
	oc, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	oc = oc.DeepCopy()
	oc.Architecture, oc.OS, oc.Config, oc.Created = cfg.Architecture, cfg.OS, cfg.Config, cfg.Created
	return mutate.ConfigFile(out, oc)
}
