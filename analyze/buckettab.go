package analyze

// bucketTab numbers the buckets so that per-event and per-step tables can
// hold small integers instead of strings.
type bucketTab struct {
	ids   []BucketID
	index map[BucketID]uint8
	group []Group // by number
}

func newBucketTab() bucketTab {
	bs := Buckets()
	t := bucketTab{ids: make([]BucketID, len(bs)), index: make(map[BucketID]uint8, len(bs)), group: make([]Group, len(bs))}
	for i, b := range bs {
		t.ids[i] = b.ID
		t.index[b.ID] = uint8(i)
		t.group[i] = b.Group
	}
	return t
}

func (t bucketTab) isGEMM(b uint8) bool {
	return t.ids[b] == GEMM || t.ids[b] == MarlinGEMM
}

// isComm says whether bucket b is a communication bucket.
func (t bucketTab) isComm(b uint8) bool {
	return t.group[b] == GroupCommunication
}
