// Package fleet owns the fleet plan behind `tfccm plan`: rendering the
// workspace of every load balancer (and the routes and the BGP peering)
// of a cluster with candidate templates and cloud config, with each
// Service's addresses from an address book built as the controller
// builds it (ipam.Book); planning each read-only against its real state
// (workspace.PreviewPlan: no lock, nothing written); judging each plan
// with the live gate (package gate: policy rules, then change windows);
// previewing the destroy of the BGP peering a candidate no longer
// renders, as the state backend's catalog keeps it, and saying whether
// the controller destroys it now or keeps it for its Services; and
// reporting one row per workspace as text, Markdown or JSON.
package fleet
