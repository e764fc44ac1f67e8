package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// platform is a release target, e.g. linux/arm64.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// dir is the platform in provider-mirror and file-name form: linux_arm64.
func (p platform) dir() string { return p.os + "_" + p.arch }

func parsePlatforms(s string) ([]platform, error) {
	var out []platform
	for _, f := range strings.Split(s, ",") {
		o, a, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || o == "" || a == "" {
			return nil, fmt.Errorf("platform %q is not OS/ARCH", f)
		}
		out = append(out, platform{o, a})
	}
	return out, nil
}

// binary is one program a release ships.
type binary struct {
	name string // file name
	pkg  string // Go package
}

// binaries are the programs of a release, each in its own archive.
var binaries = []binary{
	{"terraform-cloud-controller-manager", "./cmd/terraform-cloud-controller-manager"},
	{"tfccm", "./cmd/tfccm"},
	{"lbhost-router", "./lbhost/cmd/lbhost-router"},
	{providerBinary, "./lbhost/cmd/terraform-provider-lbhost"},
}

const providerBinary = "terraform-provider-lbhost"

// goBuild builds pkg for p into out: static, -trimpath, stripped, no build
// ID, stamped with ldflags (the Makefile's VERSION_LDFLAGS) — the same
// source and toolchain always give the same bytes.
func goBuild(root string, p platform, pkg, out, ldflags string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -buildid= "+ldflags, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w", pkg, p, err)
	}
	return nil
}

// buildAll builds every binary for every platform of the module at root
// into work/OS_ARCH/ and
// returns their paths by platform and name.
func buildAll(root, work string, platforms []platform, ldflags, providerVersion string) (map[platform]map[string]string, error) {
	out := map[platform]map[string]string{}
	for _, p := range platforms {
		out[p] = map[string]string{}
		for _, b := range binaries {
			f := filepath.Join(work, p.dir(), b.name)
			flags := ldflags
			if b.name == providerBinary {
				flags += " -X main.version=" + providerVersion
			}
			fmt.Fprintf(os.Stderr, "[release] go build %s (%s)\n", b.pkg, p)
			if err := goBuild(root, p, b.pkg, f, flags); err != nil {
				return nil, err
			}
			out[p][b.name] = f
		}
	}
	return out, nil
}
