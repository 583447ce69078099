package analyze

// Thresholds of the headline's account.
const (
	// divergePartRatio: the ranks diverge on a part of the account when one
	// rank's figure is more than this factor of another's.
	divergePartRatio = 1.5
	// waitSpanShare: a rank's wait is told (HeadlineAccount.Waits) when it
	// takes at least this percent of the rank's step.
	waitSpanShare = 10.0
)

// HeadlineAccount is the step-time account behind a headline: the largest
// part of the slowest rank's mean step in the headline's phase.
type HeadlineAccount struct {
	// Rank is the slowest rank (the longest mean span); SpanUS its mean span.
	Rank   int     `json:"rank"`
	SpanUS float64 `json:"span_us"`
	// Part is the largest part of its step (Account.Parts' names), PartUS
	// its mean per step and PartShare its percent of SpanUS.
	Part      string  `json:"part"`
	PartUS    float64 `json:"part_us"`
	PartShare float64 `json:"part_share"`
	// PerRank holds every rank's figure of Part when the ranks diverge on
	// it (one rank's more than 1.5x another's); nil otherwise.
	PerRank []RankPart `json:"per_rank,omitempty"`
	// Waits tells, for each rank whose communication wait is at least 10%
	// of its step, the rank it waits for most and that rank's own cause.
	Waits []WaitCause `json:"waits,omitempty"`
}

// RankPart is one rank's figure of one part of the account.
type RankPart struct {
	Rank   int     `json:"rank"`
	SpanUS float64 `json:"span_us"`
	US     float64 `json:"us"`
}

// WaitCause is the wait of one rank for another, and the other's cause:
// its idle per step and the largest idle cause of it.
type WaitCause struct {
	Rank   int     `json:"rank"`
	WaitUS float64 `json:"wait_us"` // per step, for ForRank
	// In is the collective bucket that holds most of the rank's wait.
	In BucketID `json:"in,omitempty"`
	// ForRank is the rank waited for; ForIdleUS its GPU idle per step,
	// ForCause the largest part of that idle (Account.Parts' names) and
	// ForCauseUS its figure.
	ForRank    int     `json:"for_rank"`
	ForIdleUS  float64 `json:"for_idle_us"`
	ForCause   string  `json:"for_cause"`
	ForCauseUS float64 `json:"for_cause_us"`
}

// headlineAccount builds the account behind the headline from the phase get
// picks on every rank; nil when no rank has an account of it.
func headlineAccount(ranks []Rank, get func(*Rank) PhaseSummary) *HeadlineAccount {
	accounts := make(map[int]*Account)
	var order []int
	var slow *Account
	h := &HeadlineAccount{}
	for i := range ranks {
		ph := get(&ranks[i])
		a := ph.Account
		if a == nil {
			a = meanAccount(ranks[i].Steps, isPhase("all"))
		}
		if a == nil || ph.Steps == 0 {
			continue
		}
		rank := ranks[i].Rank
		accounts[rank] = a
		order = append(order, rank)
		if slow == nil || a.SpanUS > slow.SpanUS {
			slow, h.Rank = a, rank
		}
	}
	if slow == nil {
		return nil
	}
	part := slow.Largest()
	h.SpanUS, h.Part, h.PartUS, h.PartShare = slow.SpanUS, part.Name, part.US, pctOf(part.US, slow.SpanUS)
	var per []RankPart
	for _, rank := range order {
		per = append(per, RankPart{Rank: rank, SpanUS: accounts[rank].SpanUS, US: accounts[rank].Part(part.Name)})
	}
	if partsDiverge(per) {
		h.PerRank = per
	}
	for _, rank := range order {
		if w, ok := waitCause(rank, accounts); ok {
			h.Waits = append(h.Waits, w)
		}
	}
	return h
}

// partsDiverge says whether one rank's figure is more than
// divergePartRatio times another's.
func partsDiverge(per []RankPart) bool {
	if len(per) < 2 {
		return false
	}
	lo, hi := per[0].US, per[0].US
	for _, p := range per[1:] {
		lo, hi = min(lo, p.US), max(hi, p.US)
	}
	return hi > divergePartRatio*lo
}

// waitCause returns rank's wait for the rank it waits for most, with that
// rank's idle and its largest cause, when the wait is at least
// waitSpanShare percent of rank's step.
func waitCause(rank int, accounts map[int]*Account) (WaitCause, bool) {
	a := accounts[rank]
	if pctOf(a.WaitUS, a.SpanUS) < waitSpanShare {
		return WaitCause{}, false
	}
	w := WaitCause{Rank: rank, ForRank: -1}
	most := 0.0
	for _, b := range Buckets() {
		if v := a.WaitIn[b.ID]; v > most {
			w.In, most = b.ID, v
		}
	}
	for _, rw := range a.WaitFor {
		if rw.Rank != rank && rw.US > w.WaitUS {
			w.WaitUS, w.ForRank = rw.US, rw.Rank
		}
	}
	late, ok := accounts[w.ForRank]
	if !ok {
		return WaitCause{}, false
	}
	w.ForIdleUS = late.IdleUS
	if c := late.LargestIdle(); c.US > 0 {
		w.ForCause, w.ForCauseUS = c.Name, c.US
	}
	return w, true
}
