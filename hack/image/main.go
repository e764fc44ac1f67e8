// Command image assembles tfccm's container image (see package
// deploy/image) from binaries built beforehand and writes it as an OCI
// layout directory and a `podman load` / `docker load` archive. `make image`
// runs it; it prints the image's digest.
//
//	go run ./hack/image --ref ghcr.io/tfccm/tfccm:v0.1.0 --ccm bin/x --tfccm bin/y --tofu bin/tofu \
//	  --created $(git log -1 --format=%ct) --layout .work/image/oci --tarball .work/image/tfccm.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tfccm/tfccm/deploy/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

type labels map[string]string

func (l labels) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labels) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("label %q is not KEY=VALUE", v)
	}
	l[k] = val
	return nil
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var s image.Spec
	var created int64
	var ref, layoutDir, tarPath, revision, version string
	extra := labels{}
	fs.StringVar(&s.CCM, "ccm", "", "terraform-cloud-controller-manager binary (static, stripped)")
	fs.StringVar(&s.CLI, "tfccm", "", "tfccm binary")
	fs.StringVar(&s.Tofu, "tofu", "", "tofu binary")
	fs.StringVar(&s.CABundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA bundle (Debian's ca-certificates)")
	fs.StringVar(&s.License, "license", "LICENSE", "tfccm's LICENSE (copied to "+image.LicenseFile+")")
	fs.StringVar(&s.Providers, "providers", "", "optional `tofu providers mirror` directory copied into "+image.ProviderMirror)
	fs.Int64Var(&created, "created", 0, "creation time, Unix seconds (the commit time; default $SOURCE_DATE_EPOCH)")
	fs.StringVar(&ref, "ref", "", "image name and tag (make image: ghcr.io/tfccm/tfccm:$(VERSION))")
	fs.StringVar(&revision, "revision", "", "source revision (label org.opencontainers.image.revision)")
	fs.StringVar(&version, "version", "", "version (label org.opencontainers.image.version)")
	fs.StringVar(&layoutDir, "layout", "", "OCI layout directory to write (replaced)")
	fs.StringVar(&tarPath, "tarball", "", "podman/docker load archive to write")
	fs.Var(extra, "label", "extra KEY=VALUE label (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if created == 0 {
		if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
			if _, err := fmt.Sscan(v, &created); err != nil {
				return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
			}
		}
	}
	if created <= 0 {
		return fmt.Errorf("--created (or SOURCE_DATE_EPOCH) is required: a fixed time keeps the digest reproducible")
	}
	if ref == "" {
		return fmt.Errorf("--ref is required")
	}
	if layoutDir == "" && tarPath == "" {
		return fmt.Errorf("nothing to write: give --layout and/or --tarball")
	}
	s.Created = time.Unix(created, 0).UTC()
	s.Labels = image.StandardLabels(version, revision, s.Created)
	for k, v := range extra {
		s.Labels[k] = v
	}
	img, err := image.Build(s)
	if err != nil {
		return err
	}
	if layoutDir != "" {
		if err := image.WriteLayout(layoutDir, img, ref); err != nil {
			return err
		}
	}
	if tarPath != "" {
		if err := image.WriteTarball(tarPath, img, ref); err != nil {
			return err
		}
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	id, _ := img.ConfigName()
	var size int64
	ls, _ := img.Layers()
	for _, l := range ls {
		n, _ := l.Size()
		size += n
	}
	fmt.Fprintf(os.Stderr, "image %s: %d layers, %.1f MiB compressed, id %s\n", ref, len(ls), float64(size)/(1<<20), id)
	fmt.Println(d)
	return nil
}
