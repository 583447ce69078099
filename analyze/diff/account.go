package diff

import (
	"cmp"
	"math"
	"slices"

	"kinetoscope/analyze"
)

// meanParts returns the mean over steps of their accounts' parts and
// boundary; nil parts when a step has no account.
func meanParts(steps []*analyze.Step) ([]float64, float64) {
	var parts []float64
	var boundary float64
	w := 1 / float64(len(steps))
	for _, st := range steps {
		if st.Account == nil {
			return nil, 0
		}
		ps := st.Account.Parts()
		if parts == nil {
			parts = make([]float64, len(ps))
		}
		for i, p := range ps {
			parts[i] += w * p.US
		}
		boundary += w * st.Account.BoundaryUS
	}
	return parts, boundary
}

// compareAccount compares the accounts part by part, when every sample on
// both sides has one.
func compareAccount(t tester, b, h []sample) *AccountDiff {
	has := func(ss []sample) bool {
		return len(ss) > 0 && !slices.ContainsFunc(ss, func(s sample) bool { return s.parts == nil })
	}
	if !has(b) || !has(h) {
		return nil
	}
	names := (&analyze.Account{}).Parts()
	ad := &AccountDiff{BaseBoundaryUS: meanOf(b, boundaryOf), HeadBoundaryUS: meanOf(h, boundaryOf)}
	var bs, hs [][]float64
	for i, p := range names {
		of := func(s *sample) float64 { return s.parts[i] }
		pd := PartDiff{Name: p.Name, BaseUS: meanOf(b, of), HeadUS: meanOf(h, of)}
		pd.DeltaUS = pd.HeadUS - pd.BaseUS
		pd.DeltaPct = pct(pd.DeltaUS, pd.BaseUS)
		ad.Parts = append(ad.Parts, pd)
		bs, hs = append(bs, field(b, of)), append(hs, field(h, of))
	}
	for i, test := range t.testAll(bs, hs) {
		ad.Parts[i].Test = test
	}
	order := slices.Clone(ad.Parts)
	slices.SortStableFunc(order, func(x, y PartDiff) int { return cmp.Compare(math.Abs(y.DeltaUS), math.Abs(x.DeltaUS)) })
	for _, p := range order {
		ad.Order = append(ad.Order, p.Name)
	}
	return ad
}

func boundaryOf(s *sample) float64 { return s.boundary }

// Part returns the part named name, nil when there is none.
func (a *AccountDiff) Part(name string) *PartDiff {
	for i := range a.Parts {
		if a.Parts[i].Name == name {
			return &a.Parts[i]
		}
	}
	return nil
}

// rankAccounts returns each rank's mean account over its steps of phase;
// nil when no rank has one.
func rankAccounts(ranks []*analyze.Rank, phase string) []RankAccount {
	var out []RankAccount
	for _, rk := range ranks {
		if a := analyze.MeanAccount(phaseSteps(rk, phase)); a != nil {
			out = append(out, RankAccount{Rank: rk.Rank, Account: a})
		}
	}
	return out
}
