// Package fleet is the fleet plan behind `tfccm plan`: it renders the
// workspace of every load balancer (and the routes) of a cluster with
// candidate templates and cloud config, plans each read-only against its
// real state (workspace.PreviewPlan: no lock, nothing written), and
// reports one row per workspace as text, Markdown or JSON.
//
// Targets picks what the controller would serve (Services and Nodes as
// the service controller filters them) and renders it; Plan plans the
// targets; Report holds the rows and writes them out.
package fleet
