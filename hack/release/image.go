package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tfccm/tfccm/deploy/image"
	"github.com/tfccm/tfccm/lbhost/mirror"
)

// imageInputs is what the release's image is made of, per platform.
type imageInputs struct {
	ref, version, revision string
	providerVersion        string
	license, caBundle      string
	created                time.Time
	bins                   map[platform]map[string]string // from buildAll
	tofu                   map[platform]string
}

// providerInImage is where the lbhost provider of version for p lives in
// the image's filesystem mirror (the unpacked layout).
func providerInImage(version string, p platform) string {
	return path.Join(mirror.Source, version, p.dir(), providerBinary+"_v"+version)
}

// buildImages builds the image for every platform (deploy/image, as `make
// image` does) and returns them with the SBOM of each.
func buildImages(work string, platforms []platform, in imageInputs) ([]v1.Image, map[platform]bom, error) {
	var imgs []v1.Image
	boms := map[platform]bom{}
	for _, p := range platforms {
		tofu := in.tofu[p]
		if tofu == "" {
			return nil, nil, fmt.Errorf("no tofu binary for %s", p)
		}
		providers := filepath.Join(work, "image-providers", p.dir())
		inMirror := filepath.Join(providers, filepath.FromSlash(providerInImage(in.providerVersion, p)))
		if err := os.MkdirAll(filepath.Dir(inMirror), 0o755); err != nil {
			return nil, nil, err
		}
		b, err := os.ReadFile(in.bins[p][providerBinary])
		if err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(inMirror, b, 0o755); err != nil {
			return nil, nil, err
		}
		img, err := image.Build(image.Spec{
			CCM:       in.bins[p]["terraform-cloud-controller-manager"],
			CLI:       in.bins[p]["tfccm"],
			Tofu:      tofu,
			CABundle:  in.caBundle,
			License:   in.license,
			Providers: providers,
			Created:   in.created,
			Labels:    image.StandardLabels(in.version, in.revision, in.created),
			Arch:      p.arch,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("image for %s: %w", p, err)
		}
		imgs = append(imgs, img)

		var parts []component
		for _, f := range []struct{ file, name, version string }{
			{in.bins[p]["terraform-cloud-controller-manager"], image.CCM, in.version},
			{in.bins[p]["tfccm"], image.BinDir + "/tfccm", in.version},
			{tofu, image.BinDir + "/tofu", ""},
			{inMirror, path.Join(image.ProviderMirror, providerInImage(in.providerVersion, p)), in.providerVersion},
		} {
			c, err := goBinary(f.file, f.name)
			if err != nil {
				return nil, nil, err
			}
			if f.version != "" {
				c.Version = f.version
			} // else tofu: its main module's version, the OpenTofu release
			parts = append(parts, c)
		}
		d, err := img.Digest()
		if err != nil {
			return nil, nil, err
		}
		subject := component{
			Type: "container", BOMRef: "image:" + p.String(), Name: in.ref, Version: in.version,
			Hashes:     []hash{{"SHA-256", d.Hex}},
			Licenses:   []license{{image.Licenses}},
			Properties: []property{{"tfccm:platform", p.String()}},
		}
		boms[p] = newBOM(subject, parts, in.created)
	}
	return imgs, boms, nil
}
