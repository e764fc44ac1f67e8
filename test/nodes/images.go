package nodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ImportImage imports an image archive (a `docker save` tarball such as
// `make image`'s tfccm.tar) into every node's containerd, where kubelet
// finds it with imagePullPolicy IfNotPresent (nodes never pull). It
// returns the image's reference (the archive's first tag) and its config
// digest (the image ID the kubelet reports).
func (c *Cluster) ImportImage(ctx context.Context, archive string) (ref, id string, err error) {
	m, err := tarball.LoadManifest(func() (r io.ReadCloser, err error) { return os.Open(archive) })
	if err != nil {
		return "", "", fmt.Errorf("nodes: image archive %s: %w", archive, err)
	}
	if len(m) != 1 || len(m[0].RepoTags) == 0 {
		return "", "", fmt.Errorf("nodes: image archive %s: want one tagged image, have %+v", archive, m)
	}
	for _, n := range c.Nodes {
		if err := n.importImage(ctx, archive); err != nil {
			return "", "", err
		}
	}
	return m[0].RepoTags[0], strings.TrimSuffix(m[0].Config, ".json"), nil
}

// RunningContainers lists the containers of image ref that run on the
// nodes, as "<node>/<container id>".
func (c *Cluster) RunningContainers(ctx context.Context, ref string) ([]string, error) {
	var out []string
	var errs []error
	for _, n := range c.Nodes {
		containers, err := n.ctr(ctx, "containers", "list")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tasks, err := n.ctr(ctx, "tasks", "list")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		running := map[string]bool{}
		for _, l := range strings.Split(tasks, "\n") {
			// TASK PID STATUS
			if f := strings.Fields(l); len(f) == 3 && f[2] == "RUNNING" {
				running[f[0]] = true
			}
		}
		for _, l := range strings.Split(containers, "\n") {
			// CONTAINER IMAGE RUNTIME
			if f := strings.Fields(l); len(f) == 3 && f[1] == ref && running[f[0]] {
				out = append(out, n.Name+"/"+f[0])
			}
		}
	}
	return out, errors.Join(errs...)
}
