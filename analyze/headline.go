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
	var sum Phase
	sum.Buckets = make(map[BucketID]BucketShare)
	nr, ps := 0, 0.0
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
		ps += float64(ph.Steps)
	}
	if nr == 0 || sum.KernelUS == 0 {
		return nil
	}
	best, bestComm, comm := BucketID(""), BucketID(""), 0.0
	for _, b := range Buckets() {
		x := sum.Buckets[b.ID]
		if best == "" || x.US > sum.Buckets[best].US {
			best = b.ID
		}
		if b.Group == GroupCommunication {
			comm += x.US
			if bestComm == "" || x.US > sum.Buckets[bestComm].US {
				bestComm = b.ID
			}
		}
	}
	if comm > sum.Buckets[best].US && sum.Buckets[bestComm].US > 0 {
		best = bestComm
	}
	bk, _ := BucketByID(best)
	x := sum.Buckets[best]
	return &Headline{Bucket: best, Label: bk.Label, ShareOfKernel: pctOf(x.US, sum.KernelUS),
		USPerStep: x.USPerStep / float64(nr), CallsPerStep: x.CallsPerStep / float64(nr),
		Steps: int(ps / float64(nr)), Ranks: nr, Phase: phase}
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
