package render

import (
	"sort"

	"kinetoscope/analyze"
)

// phaseView is the phase a rank's tables and charts describe: decode when
// the rank has decode steps, else prefill, else mixed, else every step.
type phaseView struct {
	Name  string // "decode", "prefill", "mixed" or "all"
	Phase analyze.PhaseSummary
}

// shownPhases are the phases with their own statistics, in the order a
// rank's outputs prefer them.
var shownPhases = [...]string{analyze.PhaseDecode, analyze.PhasePrefill, analyze.PhaseMixed}

// ShownPhase returns the phase a rank's tables and charts describe (decode,
// else prefill, else mixed, else "all": every step) and its statistics.
func ShownPhase(rk *analyze.Rank) (string, analyze.PhaseSummary) {
	pv := rankPhase(rk)
	return pv.Name, pv.Phase
}

// rankPhase picks the phase to show for a rank.
func rankPhase(rk *analyze.Rank) phaseView {
	for _, name := range shownPhases {
		if p, ok := phaseNamed(rk, name); ok {
			return phaseView{name, p}
		}
	}
	return phaseView{"all", analyze.Aggregate(rk.Steps, func(s *analyze.Step) bool { return analyze.InPhase("all", s) })}
}

// phaseNamed returns the rank's phase of that name ("all" aggregates every
// step).
func phaseNamed(rk *analyze.Rank, name string) (analyze.PhaseSummary, bool) {
	switch name {
	case "decode":
		return rk.Decode, rk.Decode.Steps > 0
	case "prefill":
		if rk.Prefill == nil || rk.Prefill.Steps == 0 {
			return analyze.PhaseSummary{}, false
		}
		return *rk.Prefill, true
	case "mixed":
		if rk.Mixed == nil || rk.Mixed.Steps == 0 {
			return analyze.PhaseSummary{}, false
		}
		return *rk.Mixed, true
	}
	p := analyze.Aggregate(rk.Steps, (*analyze.Step).HasWork)
	return p, p.Steps > 0
}

// bucketRow is one bucket of a phase with its description.
type bucketRow struct {
	Bucket analyze.Bucket
	Share  analyze.BucketShare
}

// bucketInfo returns the bucket with id, from the report's list first, then
// the package's, then a made-up "other"-group bucket named after the id.
func bucketInfo(buckets []analyze.Bucket, id analyze.BucketID) analyze.Bucket {
	for _, b := range buckets {
		if b.ID == id {
			return b
		}
	}
	if b, ok := analyze.BucketByID(id); ok {
		return b
	}
	return analyze.Bucket{ID: id, Label: string(id), Group: analyze.GroupCompute}
}

// groupRank orders groups: communication, compute, memory, anything else.
func groupRank(g analyze.Group) int {
	switch g {
	case analyze.GroupCommunication:
		return 0
	case analyze.GroupCompute:
		return 1
	case analyze.GroupMemory:
		return 2
	}
	return 3
}

// BucketOrder returns the phase's buckets with time in the order every
// table and chart lists them: grouped (communication first) and by time
// descending within a group, ties by id.
func BucketOrder(buckets []analyze.Bucket, p analyze.PhaseSummary) []analyze.Bucket {
	rows := sortedBuckets(buckets, p)
	out := make([]analyze.Bucket, len(rows))
	for i, r := range rows {
		out[i] = r.Bucket
	}
	return out
}

// sortedBuckets returns the phase's buckets with time, grouped
// (communication first) and by time descending within a group.
func sortedBuckets(buckets []analyze.Bucket, p analyze.PhaseSummary) []bucketRow {
	rows := make([]bucketRow, 0, len(p.Buckets))
	for id, s := range p.Buckets {
		if s.US == 0 && s.Count == 0 {
			continue
		}
		rows = append(rows, bucketRow{bucketInfo(buckets, id), s})
	}
	sort.Slice(rows, func(i, j int) bool {
		gi, gj := groupRank(rows[i].Bucket.Group), groupRank(rows[j].Bucket.Group)
		if gi != gj {
			return gi < gj
		}
		if rows[i].Share.US != rows[j].Share.US {
			return rows[i].Share.US > rows[j].Share.US
		}
		return rows[i].Bucket.ID < rows[j].Bucket.ID
	})
	return rows
}

// groupTotals sums a phase's bucket time per group, in group order.
func groupTotals(rows []bucketRow) []groupTotal {
	var out []groupTotal
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].Group == r.Bucket.Group {
			out[n-1].US += r.Share.US
			continue
		}
		out = append(out, groupTotal{r.Bucket.Group, r.Share.US})
	}
	return out
}

// groupTotal is the time of one bucket group.
type groupTotal struct {
	Group analyze.Group
	US    float64
}
