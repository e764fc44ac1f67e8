package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/gate/policy"
)

// Row is one workspace's line in the fleet plan.
type Row struct {
	// Target is "namespace/name", "routes" or "bgp-peering".
	Target    string `json:"target"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Workspace string `json:"workspace,omitempty"`
	// Module is the template module: "loadbalancer", "loadbalancer.<variant>", "routes", "bgp".
	Module  string `json:"module,omitempty"`
	Add     int    `json:"add"`
	Change  int    `json:"change"`
	Destroy int    `json:"destroy"`
	// Replaced lists the resources to be replaced (destroyed and created).
	Replaced []string `json:"replaced,omitempty"`
	// Import counts the resources the plan imports, and Imported lists
	// them: an adoption (tfccm.io/adopt).
	Import   int      `json:"import,omitempty"`
	Imported []string `json:"imported,omitempty"`
	// New is true when the backend holds no state for the workspace yet.
	New     bool   `json:"new,omitempty"`
	Summary string `json:"summary,omitempty"`
	// Findings are the policy's verdicts on the plan.
	Findings []policy.Finding `json:"policy,omitempty"`
	// Held is what a closed change window says of the plan ("" = open):
	// the live controller would publish it and wait.
	Held string `json:"held,omitempty"`
	// Retired: the candidate no longer renders the workspace (the BGP
	// peering without bgp); the row previews its destroy as the state
	// backend's catalog keeps it, and Note says what the controller does.
	Retired bool `json:"retired,omitempty"`
	// Kept: the controller keeps the retired workspace for now (Note says
	// why); the row counts no destroy, Later is what its destroy removes
	// once nothing needs it.
	Kept  bool `json:"kept,omitempty"`
	Later int  `json:"destroy_later,omitempty"`
	// Note says what the controller does beyond the plan's counts.
	Note string `json:"note,omitempty"`
	// Error is why the workspace could not be rendered or planned.
	Error string `json:"error,omitempty"`
}

// Changes reports whether the row's plan changes anything.
func (r Row) Changes() bool { return r.Add+r.Change+r.Destroy+r.Import > 0 }

// Denied reports whether a policy rule denies the row's plan.
func (r Row) Denied() bool {
	for _, f := range r.Findings {
		if f.Action == config.PolicyDeny {
			return true
		}
	}
	return false
}

// Report is the fleet plan.
type Report struct {
	// Set names the candidate template set (and override directory).
	Set  string `json:"set"`
	Rows []Row  `json:"workspaces"`
}

// Counts are the report's totals.
type Counts struct {
	Workspaces int `json:"workspaces"`
	Changed    int `json:"changed"`
	Adoptions  int `json:"adoptions"`
	Denied     int `json:"denied"`
	Errors     int `json:"errors"`
}

// Counts totals the rows.
func (r *Report) Counts() Counts {
	c := Counts{Workspaces: len(r.Rows)}
	for _, row := range r.Rows {
		switch {
		case row.Error != "":
			c.Errors++
		case row.Changes():
			c.Changed++
		}
		if row.Error == "" && row.Import > 0 {
			c.Adoptions++
		}
		if row.Denied() {
			c.Denied++
		}
	}
	return c
}

func (c Counts) String() string {
	return fmt.Sprintf("%d workspaces: %d change, %d adopt, %d denied by policy, %d failed", c.Workspaces, c.Changed, c.Adoptions, c.Denied, c.Errors)
}

// module is the set/variant column.
func (r *Report) module(row Row) string {
	if row.Module == "" {
		return r.Set
	}
	return r.Set + "/" + row.Module
}

// changes is the add/change/destroy column.
func changes(row Row) string {
	if row.Error != "" {
		return "error"
	}
	s := fmt.Sprintf("+%d ~%d -%d", row.Add, row.Change, row.Destroy)
	switch {
	case row.Kept:
		s += fmt.Sprintf(" (kept; -%d later)", row.Later)
	case row.Retired:
		s += " (destroy)"
	case row.New:
		s += " (new)"
	}
	return s
}

func replaced(row Row) string {
	if len(row.Replaced) == 0 {
		return "-"
	}
	return strings.Join(row.Replaced, ", ")
}

// adopted is the adoptions column: what the plan imports.
func adopted(row Row) string {
	if len(row.Imported) == 0 {
		return "-"
	}
	return strings.Join(row.Imported, ", ")
}

func findings(row Row) string {
	if row.Error != "" {
		return row.Error
	}
	if len(row.Findings) == 0 && row.Held == "" && row.Note == "" {
		return "-"
	}
	var parts []string
	if row.Note != "" {
		parts = append(parts, row.Note)
	}
	for _, f := range row.Findings {
		parts = append(parts, fmt.Sprintf("%s %s: %s", f.Action, f.Rule, f.Message))
	}
	if row.Held != "" {
		parts = append(parts, "held: "+row.Held)
	}
	return strings.Join(parts, "; ")
}

// WriteText writes the report as an aligned table.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tTEMPLATE\tCHANGES\tREPLACED\tADOPTED\tPOLICY")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Target, r.module(row), changes(row), replaced(row), adopted(row), oneLine(findings(row)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, r.Counts())
	return err
}

// WriteMarkdown writes the report as a Markdown table, for a pull
// request comment; rows without changes are folded into a count.
func (r *Report) WriteMarkdown(w io.Writer) error {
	c := r.Counts()
	fmt.Fprintf(w, "### tfccm plan (%s)\n\n%s\n\n", md(r.Set), c)
	fmt.Fprintln(w, "| target | template | add | change | destroy | replaced | adopted | policy |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|---|---|")
	unchanged := 0
	for _, row := range r.Rows {
		if row.Error == "" && !row.Changes() && len(row.Findings) == 0 && row.Held == "" && !row.Kept {
			unchanged++
			continue
		}
		add, chg, del := fmt.Sprint(row.Add), fmt.Sprint(row.Change), fmt.Sprint(row.Destroy)
		if row.Kept {
			del = fmt.Sprintf("0 (%d later)", row.Later)
		}
		if row.Error != "" {
			add, chg, del = "–", "–", "–"
		}
		mark := ""
		if row.Denied() || row.Error != "" {
			mark = ":x: "
		} else if len(row.Replaced) > 0 || row.Retired && row.Destroy > 0 {
			mark = ":warning: "
		}
		fmt.Fprintf(w, "| %s`%s` | %s | %s | %s | %s | %s | %s | %s |\n", mark, md(row.Target), md(r.module(row)), add, chg, del, md(replaced(row)), md(adopted(row)), md(findings(row)))
	}
	_, err := fmt.Fprintf(w, "\n%d workspaces without changes.\n", unchanged)
	return err
}

// WriteJSON writes the report as JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*Report
		Counts Counts `json:"counts"`
	}{r, r.Counts()})
}

// md escapes text for a Markdown table cell.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;", "`", "'").Replace(s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
