// Package fleet owns the fleet plan behind `tfccm plan`: rendering the
// workspace of every load balancer (and the routes) of a cluster with
// candidate templates and cloud config, with each Service's addresses from
// an address book built as the controller builds it (ipam.Book); planning
// each read-only against its real state (workspace.PreviewPlan: no lock,
// nothing written); judging each plan with the live gate (package gate:
// policy rules, then change windows); and reporting one row per workspace
// as text, Markdown or JSON.
package fleet
