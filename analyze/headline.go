package analyze

// headline picks the first finding from the decode steps of all ranks (all
// steps when there are none): the bucket with the most kernel time, or the
// largest communication bucket when communication as a whole takes more
// than that bucket.
func headline(ranks []Rank) *Headline {
	phase := PhaseDecode
	get := func(r *Rank) Phase { return r.Decode }
	if !anyDecode(ranks) {
		phase = "all"
		get = func(r *Rank) Phase { return Aggregate(r.Steps, nil) }
	}
	sum, nr := sumPhases(ranks, get)
	if nr == 0 || sum.KernelUS == 0 {
		return nil
	}
	best := headlineBucket(sum.Buckets)
	bk, _ := BucketByID(best)
	x := sum.Buckets[best]
	return &Headline{Bucket: best, Label: bk.Label, ShareOfKernel: pctOf(x.US, sum.KernelUS),
		USPerStep: x.USPerStep / float64(nr), CallsPerStep: x.CallsPerStep / float64(nr),
		Steps: int(float64(sum.Steps) / float64(nr)), Ranks: nr, Phase: phase}
}

// sumPhases adds up, over the ranks, the phase get picks: steps, kernel
// time, and per bucket the time and the per-step means. It returns the sum
// and the number of ranks with steps in that phase.
func sumPhases(ranks []Rank, get func(*Rank) Phase) (Phase, int) {
	sum := Phase{Buckets: make(map[BucketID]BucketShare)}
	nr := 0
	for i := range ranks {
		ph := get(&ranks[i])
		if ph.Steps == 0 {
			continue
		}
		nr++
		sum.Steps += ph.Steps
		sum.KernelUS += ph.KernelUS
		for id, b := range ph.Buckets {
			x := sum.Buckets[id]
			x.US += b.US
			x.USPerStep += b.USPerStep
			x.CallsPerStep += b.CallsPerStep
			sum.Buckets[id] = x
		}
	}
	return sum, nr
}

// headlineBucket returns the bucket with the most time, or the largest
// communication bucket when communication as a whole takes more than that
// bucket. Ties go to the bucket first in display order.
func headlineBucket(buckets map[BucketID]BucketShare) BucketID {
	best, bestComm, comm := BucketID(""), BucketID(""), 0.0
	for _, b := range Buckets() {
		x := buckets[b.ID]
		if best == "" || x.US > buckets[best].US {
			best = b.ID
		}
		if b.Group == GroupCommunication {
			comm += x.US
			if bestComm == "" || x.US > buckets[bestComm].US {
				bestComm = b.ID
			}
		}
	}
	if comm > buckets[best].US && buckets[bestComm].US > 0 {
		return bestComm
	}
	return best
}

func anyDecode(ranks []Rank) bool {
	for i := range ranks {
		if ranks[i].Decode.Steps > 0 {
			return true
		}
	}
	return false
}

// headlineComm averages the decode transfer/wait split over the ranks that
// have one; nil when collectives were not aligned or the headline is not
// about decode.
func headlineComm(r *Report) *HeadlineComm {
	if r.Headline.Phase != PhaseDecode {
		return nil
	}
	var hc HeadlineComm
	n := 0
	for i := range r.Ranks {
		d := &r.Ranks[i].Decode
		if d.Comm == nil || d.Steps == 0 {
			continue
		}
		n++
		hc.TransferUSPerStep += d.Comm.TransferUS / float64(d.Steps)
		hc.WaitUSPerStep += d.Comm.WaitUS / float64(d.Steps)
		hc.TransferShareNetOfWait += d.Comm.TransferShareNetOfWait
		hc.WaitShare += d.Comm.WaitShare
	}
	if n == 0 {
		return nil
	}
	f := float64(n)
	hc.TransferUSPerStep /= f
	hc.WaitUSPerStep /= f
	hc.TransferShareNetOfWait /= f
	hc.WaitShare /= f
	hc.Straggler = -1
	if c := r.Collectives; c != nil && len(c.Straggler) > 0 {
		hc.Straggler = c.Straggler[0].Rank
	}
	return &hc
}
