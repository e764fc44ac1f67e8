package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfccm/tfccm/deploy"
)

// packageChart packages the chart of root for version (vX.Y.Z): `helm
// package --version X.Y.Z --app-version vX.Y.Z` of a copy holding the
// LICENSE, rewritten by writeTarGz (helm stamps the clock into the archive)
// to out/tfccm-X.Y.Z.tgz. It returns that path.
func packageChart(helm, root, work, out, version, license string, mtime time.Time) (string, error) {
	src := filepath.Join(root, deploy.Chart)
	dst := filepath.Join(work, "chart", filepath.Base(src))
	if err := os.RemoveAll(filepath.Dir(dst)); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if b, err := exec.Command("cp", "-R", src, dst).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy chart: %v: %s", err, b)
	}
	lic, err := os.ReadFile(license)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dst, "LICENSE"), lic, 0o644); err != nil {
		return "", err
	}
	pkgDir := filepath.Join(work, "chart-package")
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		return "", err
	}
	plain := strings.TrimPrefix(version, "v")
	cmd := exec.Command(helm, "package", dst, "--version", plain, "--app-version", version, "--destination", pkgDir)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("helm package: %v: %s", err, b)
	}
	name := filepath.Base(src) + "-" + plain + ".tgz"
	members, err := readTarGz(filepath.Join(pkgDir, name))
	if err != nil {
		return "", err
	}
	file := filepath.Join(out, name)
	return file, writeTarGz(file, members, mtime)
}
