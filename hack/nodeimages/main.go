// Command nodeimages builds the container images real-node clusters run
// (they cannot be pulled here) as `ctr images import` archives, with
// deploy/image's reproducible builder: registry.k8s.io/pause (test/nodes/pause)
// and the e2e framework's agnhost, each one static binary.
//
//	go run ./hack/nodeimages --bin bin --out bin/images
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

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
		path := filepath.Join(*out, img.name+".tar")
		if err := image.WriteTarball(path, i, img.ref); err != nil {
			return fmt.Errorf("%s: %w", img.name, err)
		}
		d, _ := i.Digest()
		fmt.Printf("%s %s %s\n", img.ref, d, path)
	}
	return nil
}
