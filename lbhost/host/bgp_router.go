// BGP on a router the admin runs (a Linux host with FRR): tfccm's
// neighbours for the LB hosts inside the admin's own configuration.

package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// RouterPeering is what lbhost_bgp_router asks of a router: the typed
// router side, and per neighbour the file on the router holding its
// password ("": none).
type RouterPeering struct {
	frr.Router
	PasswordFiles []string
}

// readRouterFile returns the router's FRR file and the admin's part of it
// (frr.RouterBase). A missing file is the admin's error: tfccm adds to an
// existing `router bgp`, it does not set FRR up.
func (h *Host) readRouterFile(ctx context.Context) (file, base string, err error) {
	b, err := h.T.ReadFile(ctx, h.FRR.frrConfig())
	if transport.IsNotExist(err) {
		return "", "", &FieldError{Field: "frr_config", Msg: fmt.Sprintf("%s does not exist on the router: lbhost_bgp_router adds to the admin's FRR configuration and never writes one from scratch", h.FRR.frrConfig())}
	}
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", h.T, err)
	}
	return string(b), frr.RouterBase(string(b)), nil
}

// PlanRouter checks p against the router (its networks, its `router bgp`,
// the password files) and returns the hash of the section tfccm would
// write (passwords masked).
func (h *Host) PlanRouter(ctx context.Context, p RouterPeering) (string, error) {
	if err := h.FRR.Validate(); err != nil {
		return "", err
	}
	nets, err := h.Networks(ctx)
	if err != nil {
		return "", err
	}
	p.Networks = nets
	_, base, err := h.readRouterFile(ctx)
	if err != nil {
		return "", err
	}
	if err := h.routerPasswords(ctx, &p); err != nil {
		return "", err
	}
	if _, err := frr.RenderRouter(base, p.Router); err != nil {
		return "", err
	}
	return ConfigHash(frr.RenderRouterSection(base, p.Router)), nil
}

// routerPasswords reads each neighbour's password file on the router.
// Errors name the file, never its content.
func (h *Host) routerPasswords(ctx context.Context, p *RouterPeering) error {
	for i, f := range p.PasswordFiles {
		if f == "" || i >= len(p.Neighbors) {
			continue
		}
		field := fmt.Sprintf("neighbors[%d].password_file", i)
		if err := transport.CheckPath(f); err != nil {
			return &FieldError{Field: field, Msg: err.Error()}
		}
		b, err := h.T.ReadFile(ctx, f)
		if err != nil {
			return &FieldError{Field: field, Msg: fmt.Sprintf("cannot read %s on the router: %v", f, scrubRouter(err, p.Router))}
		}
		if p.Neighbors[i].Password = strings.TrimSuffix(string(b), "\n"); p.Neighbors[i].Password == "" {
			return &FieldError{Field: field, Msg: f + " on the router is empty"}
		}
	}
	return nil
}

// ApplyRouter writes tfccm's section into the router's FRR file (the
// admin's lines kept as they are), checks the file with vtysh's dry run
// and reloads FRR with frr-reload.py, which changes only what differs:
// the admin's sessions are not touched.
func (h *Host) ApplyRouter(ctx context.Context, p RouterPeering) error {
	unlock, err := h.lockRouter(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if p.Networks, err = h.Networks(ctx); err != nil {
		return err
	}
	_, base, err := h.readRouterFile(ctx)
	if err != nil {
		return err
	}
	if err := h.routerPasswords(ctx, &p); err != nil {
		return err
	}
	text, err := frr.RenderRouter(base, p.Router)
	if err != nil {
		return err
	}
	return h.replaceFRR(ctx, text, p.Neighbors)
}

// DeleteRouter removes tfccm's objects from the router's file (the
// admin's stay byte for byte) and reloads FRR: the LB hosts' sessions
// close, the admin's stay up.
func (h *Host) DeleteRouter(ctx context.Context) error {
	unlock, err := h.lockRouter(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	b, err := h.T.ReadFile(ctx, h.FRR.frrConfig())
	if transport.IsNotExist(err) {
		return nil // no file: nothing of tfccm's
	}
	if err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	base := frr.RouterBase(string(b))
	if base == string(b) {
		return nil
	}
	return h.replaceFRR(ctx, base, nil)
}

// RouterHash is the hash of tfccm's section in the router's file as it is
// ("" without one), to compare with PlanRouter's.
func (h *Host) RouterHash(ctx context.Context) (string, error) {
	if err := h.FRR.Validate(); err != nil {
		return "", err
	}
	b, err := h.T.ReadFile(ctx, h.FRR.frrConfig())
	if transport.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", h.T, err)
	}
	sec := frr.RouterSection(string(b))
	if sec == "" {
		return "", nil
	}
	return ConfigHash(sec), nil
}

// lockRouter takes a lock beside the router's FRR file (a router has no
// config_dir of lbhost's).
func (h *Host) lockRouter(ctx context.Context) (func(), error) {
	if err := h.FRR.Validate(); err != nil {
		return nil, err
	}
	unlock, err := h.T.Lock(ctx, h.FRR.frrConfig()+".lbhost-lock")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	return unlock, nil
}

// scrubRouter replaces every neighbour password in err's text.
func scrubRouter(err error, r frr.Router) error { return scrub(err, r.Neighbors) }
