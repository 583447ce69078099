package render

import (
	"fmt"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
)

// DiffCostModelView lays out the comparison of the two runs' cost models:
// per fitted time, each slope before and after with its z-test; nil when
// neither run's steps were fitted.
func DiffCostModelView(d *diff.Diff) *CostModelView {
	cd := d.CostModel
	if cd == nil {
		return nil
	}
	v := &CostModelView{Phase: cd.Phase,
		Heading: fmt.Sprintf("Cost model (%s steps): slopes, base (rank %d) vs head (rank %d)", cd.Phase, cd.BaseRank, cd.HeadRank)}
	if cd.Note != "" {
		v.Lines = []string{capitalize(cd.Note) + "."}
		return v
	}
	v.Lines = []string{fmt.Sprintf("Slopes against %s from each run's least-squares fit; a change is beyond noise when the delta exceeds 1.96 times the root of the two standard errors squared (z-test, 95%%) and changes the time across the wider observed range by more than %g us.",
		strings.Join(cd.Regressors, " and "), analyze.CostMinChangeUS)}
	if len(cd.Unshared) > 0 {
		v.Lines = append(v.Lines, fmt.Sprintf("Not compared: %s; the slopes compared come from fits against other regressors, so they need not be the same slope.", strings.Join(cd.Unshared, ", ")))
	}
	v.Header = []string{"time"}
	for _, n := range cd.Regressors {
		unit, _ := regressorUnit(n)
		v.Header = append(v.Header, "base "+unit, "head "+unit, "delta", "z")
	}
	v.Header = append(v.Header, "base verdict", "head verdict", "changed")
	for _, f := range cd.Fits {
		row := []string{fitLabel(nil, f.Target)}
		var changed []string
		for _, s := range f.Slopes {
			_, k := regressorUnit(s.Name)
			row = append(row, sig3(s.BaseUSPer*k, 3), sig3(s.HeadUSPer*k, 3), Signed(s.DeltaUSPer, sig3(s.DeltaUSPer*k, 3)), fmt.Sprintf("%.1f", s.Z))
			if s.Changed {
				changed = append(changed, s.Name)
			}
		}
		c := "no"
		if len(changed) > 0 {
			c = "slope " + strings.Join(changed, ", ")
		}
		v.Rows = append(v.Rows, append(row, f.BaseVerdict, f.HeadVerdict, c))
	}
	return v
}

// diffCostModelBlocks lays out DiffCostModelView as diff report blocks.
func diffCostModelBlocks(d *diff.Diff) []block {
	v := DiffCostModelView(d)
	if v == nil {
		return nil
	}
	bs := []block{{Heading: v.Heading, Level: 2}, {Lines: v.Lines}}
	if len(v.Rows) > 0 {
		right := make([]bool, len(v.Header))
		for i := 1; i < len(right)-3; i++ {
			right[i] = true
		}
		bs = append(bs, block{Table: &table{Header: v.Header, Right: right, Rows: v.Rows}})
	}
	return bs
}
