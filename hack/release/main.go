// Command release writes a tfccm release into a directory (`make release
// VERSION=vX.Y.Z`, docs/releasing.md). It writes, for every platform, the
// CCM, tfccm, lbhost-router and the lbhost provider as tar.gz, the image as a
// multi-platform OCI archive and one `podman load` archive per platform,
// the packaged Helm chart, the lbhost provider as a provider mirror, a
// CycloneDX SBOM per binary archive and per image, the krew plugin
// manifest of `kubectl tfccm` and SHA256SUMS.
//
// Everything it writes depends on the source, the toolchain and the commit
// time only (SOURCE_DATE_EPOCH): two runs on one commit give the same
// SHA256SUMS (`make release-check`).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfccm/tfccm/deploy/image"
	"github.com/tfccm/tfccm/internal/providerlock"
	"github.com/tfccm/tfccm/internal/repo"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// tofuFlag is the repeatable --tofu OS/ARCH=PATH.
type tofuFlag map[platform]string

func (t tofuFlag) String() string { return fmt.Sprint(map[platform]string(t)) }
func (t tofuFlag) Set(v string) error {
	k, p, ok := strings.Cut(v, "=")
	ps, err := parsePlatforms(k)
	if !ok || err != nil || len(ps) != 1 {
		return fmt.Errorf("--tofu %q is not OS/ARCH=PATH", v)
	}
	t[ps[0]] = p
	return nil
}

type options struct {
	version, out, ldflags, repoName, helm, caBundle string
	downloadURL                                     string
	created                                         int64
	allowDirty                                      bool
	platforms                                       []platform
	tofu                                            tofuFlag
}

func run(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	o := options{tofu: tofuFlag{}}
	var plats string
	fs.StringVar(&o.version, "version", "", "the release, vMAJOR.MINOR.PATCH (must match the tree: docs/releasing.md)")
	fs.StringVar(&o.out, "out", "dist", "directory to write (replaced)")
	fs.StringVar(&o.ldflags, "ldflags", "", "the Makefile's VERSION_LDFLAGS")
	fs.Int64Var(&o.created, "created", 0, "the release's only timestamp, Unix seconds (SOURCE_DATE_EPOCH: the commit time)")
	fs.StringVar(&plats, "platforms", "linux/amd64,linux/arm64", "platforms to build for")
	fs.Var(o.tofu, "tofu", "OS/ARCH=PATH of the tofu binary for the image of that platform (repeatable)")
	fs.StringVar(&o.repoName, "image", "ghcr.io/tfccm/tfccm", "image repository (tagged with the version)")
	fs.StringVar(&o.helm, "helm", "bin/helm", "helm binary")
	fs.StringVar(&o.downloadURL, "download-url", "https://github.com/tfccm/tfccm/releases/download", "where the release's files are downloaded from (URL/VERSION/FILE): the krew manifest's URIs")
	fs.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA bundle for the image")
	fs.BoolVar(&o.allowDirty, "allow-dirty", false, "release a tree with uncommitted changes (not reproducible from the commit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if o.platforms, err = parsePlatforms(plats); err != nil {
		return err
	}
	if o.created <= 0 {
		return fmt.Errorf("--created (SOURCE_DATE_EPOCH) is required: the release must not depend on the clock")
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	tree, err := readInTree(root)
	if err != nil {
		return err
	}
	if err := tree.check(o.version); err != nil {
		return err
	}
	if !o.allowDirty {
		st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
		if err != nil {
			return fmt.Errorf("git status: %w", err)
		}
		if len(st) > 0 {
			return fmt.Errorf("the tree has uncommitted changes: a release is built from a commit (ALLOW_DIRTY=1 to try anyway):\n%s", st)
		}
	}
	return release(root, o, tree.provider)
}

func release(root string, o options, providerVersion string) error {
	created := time.Unix(o.created, 0).UTC()
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Join(root, ".work"), "release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	licenseFile := filepath.Join(root, "LICENSE")

	bins, err := buildAll(root, work, o.platforms, o.ldflags, providerVersion)
	if err != nil {
		return err
	}
	if err := checkVersions(bins, o.version, providerVersion); err != nil {
		return err
	}
	if err := writeArchives(out, o, bins, providerVersion, licenseFile, created); err != nil {
		return err
	}
	if err := writeKrewManifest(out, o.downloadURL, o.version, o.platforms); err != nil {
		return err
	}

	providerBins := map[platform]string{}
	for _, p := range o.platforms {
		providerBins[p] = bins[p][providerBinary]
	}
	if err := writeProviderMirror(filepath.Join(out, "providers"), providerVersion, providerBins, created); err != nil {
		return err
	}
	// Its checksums, for terraform.provider_lock_file beside a copy of it.
	if err := providerlock.WriteMirrorLock(filepath.Join(out, "providers"), filepath.Join(out, "providers.lock.hcl")); err != nil {
		return err
	}

	ref := o.repoName + ":" + o.version
	d, err := writeImages(out, work, root, ref, o, bins, providerVersion, licenseFile, created)
	if err != nil {
		return err
	}

	if _, err := packageChart(o.helm, root, work, out, o.version, licenseFile, created); err != nil {
		return err
	}
	if err := writeSums(out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "[release] %s written to %s (image %s@%s)\n", o.version, out, ref, d)
	return nil
}

// writeImages writes the image: one `podman load` archive and SBOM per
// platform, the multi-platform OCI archive and its digest, which it returns.
func writeImages(out, work, root, ref string, o options, bins map[platform]map[string]string, providerVersion, licenseFile string, created time.Time) (string, error) {
	imgs, boms, err := buildImages(work, o.platforms, imageInputs{
		ref: ref, version: o.version, revision: commit(root), providerVersion: providerVersion,
		license: licenseFile, caBundle: o.caBundle, created: created, bins: bins, tofu: o.tofu,
	})
	if err != nil {
		return "", err
	}
	for i, p := range o.platforms {
		base := fmt.Sprintf("tfccm_%s_image_%s", o.version, p.dir())
		if err := image.WriteTarball(filepath.Join(out, base+".tar"), imgs[i], ref); err != nil {
			return "", err
		}
		if err := writeJSON(filepath.Join(out, base+".sbom.cdx.json"), boms[p]); err != nil {
			return "", err
		}
	}
	idx, err := image.Index(imgs...)
	if err != nil {
		return "", err
	}
	layoutDir := filepath.Join(work, "oci")
	if err := image.WriteIndexLayout(layoutDir, idx, ref); err != nil {
		return "", err
	}
	ms, err := dirMembers(layoutDir)
	if err != nil {
		return "", err
	}
	if err := writeTar(filepath.Join(out, fmt.Sprintf("tfccm_%s_image.oci.tar", o.version)), ms, created); err != nil {
		return "", err
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(out, fmt.Sprintf("tfccm_%s_image.digest", o.version)), []byte(d.String()+"\n")); err != nil {
		return "", err
	}
	return d.String(), nil
}

// writeArchives writes each binary of each platform as a tar.gz with the
// LICENSE, and its SBOM.
func writeArchives(out string, o options, bins map[platform]map[string]string, providerVersion, licenseFile string, created time.Time) error {
	for _, p := range o.platforms {
		for _, b := range binaries {
			base := fmt.Sprintf("%s_%s_%s", b.name, o.version, p.dir())
			err := writeTarGz(filepath.Join(out, base+".tar.gz"), []member{
				{name: b.name, src: bins[p][b.name], exec: true},
				{name: "LICENSE", src: licenseFile},
			}, created)
			if err != nil {
				return err
			}
			c, err := goBinary(bins[p][b.name], b.name)
			if err != nil {
				return err
			}
			c.Version = o.version
			if b.name == providerBinary {
				c.Version = providerVersion
			}
			c.Licenses = []license{{image.Licenses}}
			if err := writeJSON(filepath.Join(out, base+".sbom.cdx.json"), newBOM(c, c.Components, created)); err != nil {
				return err
			}
		}
	}

	return nil
}

func commit(root string) string {
	b, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
